package run

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"time"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
)

// installTransforms makes the run's chain of the compiled transforms and
// wires it into the pool: as its rewriter, and as an observer when it
// learns from answers. The chain knows what the run knows beyond the file
// and the pool: the correlation IDs' tracker, the shard, the seed.
func (r *runner) installTransforms() error {
	p, cfg := r.pr.p, &r.pool.Config
	sh := p.shard
	opt := transform.Options{Shard: sh.Index, Shards: max(sh.Count, 1), RunVUs: r.runVUs,
		VUs: cfg.MostVUs(), Endpoints: r.file.Endpoints()}
	if r.track != nil {
		opt.Stamp = r.track.stamp
	}
	if p.spec.NeedsSeed() {
		var err error
		if opt.Seed, err = freshSeed(&r.o.Filter, sh, p.startAt); err != nil {
			return err
		}
	}
	chain, err := r.pr.prog.Chain(opt)
	if err != nil {
		return err
	}
	r.chain = chain
	r.pool.Rewriter = chain
	if chain.Learns() {
		r.pool.Observers = append(r.pool.Observers, chain)
	}
	if chain.NeedsResponses() {
		r.pool.DecodeResponses = true
	}
	return nil
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
