package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// shardOptions split a run across processes (pods): each takes a disjoint
// share of the iterations and of the load.
type shardOptions struct {
	shard   string // "i/n"
	shards  int    // n, with i from JOB_COMPLETION_INDEX
	startAt string
}

func (o *shardOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.shard, "shard", "", "run share `i/n` of the iterations (k mod n = i, sessions whole) with 1/n of the VUs and rate")
	fs.IntVar(&o.shards, "shards", 0, "run one of `n` shards, i taken from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
	fs.StringVar(&o.startAt, "start-at", "", "wait until this RFC 3339 `TIME` before sending, so that all shards begin together")
}

// parse returns the shard, or a zero one without sharding.
func (o *shardOptions) parse() (rrpair.Shard, error) {
	var sh rrpair.Shard
	switch {
	case o.shard != "" && o.shards != 0:
		return sh, fmt.Errorf("--shard and --shards: give one")
	case o.shard != "":
		i, n, ok := strings.Cut(o.shard, "/")
		var err1, err2 error
		sh.Index, err1 = strconv.Atoi(i)
		sh.Count, err2 = strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
			return sh, fmt.Errorf("--shard: want i/n with 0 ≤ i < n, such as 0/4, got %q", o.shard)
		}
	case o.shards != 0:
		idx := os.Getenv("JOB_COMPLETION_INDEX")
		i, err := strconv.Atoi(idx)
		if o.shards < 1 || err != nil || i < 0 || i >= o.shards {
			return sh, fmt.Errorf("--shards %d: want JOB_COMPLETION_INDEX in 0..%d, got %q", o.shards, o.shards-1, idx)
		}
		sh = rrpair.Shard{Index: i, Count: o.shards}
	}
	return sh, nil
}

// share is shard i's part of total, as k6's execution segments divide:
// the parts of all shards add up to total.
func share(total, i, n int) int {
	return (i+1)*total/n - i*total/n
}

// divide gives the shard its share of the load: VUs (at least one), the
// pool cap, the iteration limit, the rate and stage targets.
func divide(cfg *vu.Config, sh rrpair.Shard) {
	if sh.Count <= 1 {
		return
	}
	cfg.VUs = max(share(cfg.VUs, sh.Index, sh.Count), 1)
	if cfg.MaxVUs > 0 {
		cfg.MaxVUs = max(share(cfg.MaxVUs, sh.Index, sh.Count), cfg.VUs)
	}
	if cfg.Iterations > 0 {
		cfg.Iterations = max(int64(share(int(cfg.Iterations), sh.Index, sh.Count)), 1)
	}
	n := float64(sh.Count)
	cfg.Rate /= n
	stages := make([]vu.Stage, len(cfg.Stages))
	for i, st := range cfg.Stages {
		st.Target /= n
		if cfg.Model == vu.Closed {
			st.Target = float64(max(share(int(st.Target*n+0.5), sh.Index, sh.Count), 1))
		}
		stages[i] = st
	}
	cfg.Stages = stages
}

// waitStart waits for --start-at; a time already past starts at once.
func (o *shardOptions) waitStart(ctx context.Context, log zerolog.Logger) error {
	if o.startAt == "" {
		return nil
	}
	at, err := time.Parse(time.RFC3339Nano, o.startAt)
	if err != nil {
		return fmt.Errorf("--start-at: want an RFC 3339 time such as 2026-11-22T10:00:00Z, got %q", o.startAt)
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
