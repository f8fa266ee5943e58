package run

import (
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/replay-dev/replay/pkg/vu"
)

// installTransforms builds the chain for f and wires it into the pool: as
// its rewriter, and as an observer when it learns from answers. It
// returns nil when nothing is configured.
func installTransforms(spec *transform.Spec, f *rrpair.File, pool *vu.Pool, stamp *transform.StampOptions) (*transform.Chain, error) {
	chain, err := transform.Build(spec, f.SetsCookies(), transform.Options{
		VUs: pool.Config.MostVUs(), Endpoints: f.Endpoints(), Stamp: stamp,
	})
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

// transformCounts is the report's view of what the chain did.
func transformCounts(chain *transform.Chain) []report.Transform {
	if chain == nil {
		return nil
	}
	return chain.Counts()
}
