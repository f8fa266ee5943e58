package run

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"time"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/replay-dev/replay/pkg/vu"
)

// installTransforms builds the chain for f and wires it into the pool: as
// its rewriter, and as an observer when it learns from answers. opt says
// what the run knows beyond the file and the pool (the correlation IDs,
// the shard, the seed). It returns nil when nothing is configured.
func installTransforms(spec *transform.Spec, f *rrpair.File, pool *vu.Pool, opt transform.Options) (*transform.Chain, error) {
	opt.VUs, opt.Endpoints = pool.Config.MostVUs(), f.Endpoints()
	chain, err := transform.Build(spec, f.SetsCookies(), opt)
	if err != nil {
		return nil, err
	}
	if chain.Len() == 0 {
		return nil, nil
	}
	pool.Rewriter = chain
	if chain.Learns() {
		pool.Observers = append(pool.Observers, chain)
	}
	if chain.NeedsResponses() {
		pool.DecodeResponses = true
	}
	return chain, nil
}

// freshSeed is the seed of fresh values: --seed when given, so that a run
// can be repeated value for value; on shards without it, one every shard
// derives alike from --start-at (and each run has its own); else a random
// one, so that each run sends values no run sent before. The report names
// it ("fresh (seed N)").
func freshSeed(f *Filter, sh rrpair.Shard, startAt time.Time) (uint64, error) {
	switch {
	case f.SeedGiven:
		return f.Seed, nil
	case sh.Count > 1 && !startAt.IsZero():
		return uint64(startAt.Unix()), nil
	case sh.Count > 1:
		return 0, errors.New("--seed: the shards of a run must share the seed of fresh values (transform fresh): give --seed (the same to every shard, a new one each run) or --start-at")
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	return uint64(binary.LittleEndian.Uint32(b[:])), nil
}

// transformCounts is the report's view of what the chain did.
func transformCounts(chain *transform.Chain) []report.Transform {
	if chain == nil {
		return nil
	}
	return chain.Counts()
}
