package run

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/rs/zerolog"
)

// parseShard returns the shard, or a zero one without sharding.
func parseShard(o *Shard) (rrpair.Shard, error) {
	var sh rrpair.Shard
	switch {
	case o.Shard != "" && o.Shards != 0:
		return sh, fmt.Errorf("--shard and --shards: give one")
	case o.Shard != "":
		i, n, ok := strings.Cut(o.Shard, "/")
		var err1, err2 error
		sh.Index, err1 = strconv.Atoi(i)
		sh.Count, err2 = strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
			return sh, fmt.Errorf("--shard: want i/n with 0 ≤ i < n, such as 0/4, got %q", o.Shard)
		}
	case o.Shards != 0:
		i, err := strconv.Atoi(o.JobIndex)
		if o.Shards < 1 || err != nil || i < 0 || i >= o.Shards {
			return sh, fmt.Errorf("--shards %d: want JOB_COMPLETION_INDEX in 0..%d, got %q", o.Shards, o.Shards-1, o.JobIndex)
		}
		sh = rrpair.Shard{Index: i, Count: o.Shards}
	}
	return sh, nil
}

// waitStart waits until at (--start-at); a zero time, or one already
// past, starts at once.
func waitStart(ctx context.Context, at time.Time, log zerolog.Logger) error {
	if at.IsZero() {
		return nil
	}
	wait := time.Until(at)
	if wait <= 0 {
		log.Warn().Time("start_at", at).Msg("--start-at is past: starting now")
		return nil
	}
	log.Info().Time("start_at", at).Dur("wait", wait).Msg("waiting for the start")
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
