package main

import (
	"fmt"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/spf13/pflag"
)

// filterOptions are the flags that choose which pairs to replay, shared by
// run and inspect.
type filterOptions struct {
	keep, drop []string
	from, to   string
	sample     float64
	seed       uint64
}

func (o *filterOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.keep, "keep", nil, "keep only pairs matching `KEY=VALUE` (repeatable, all must match): method=GET,POST  path=REGEX  uri=REGEX  status=2xx,404  endpoint=NAME;NAME")
	fs.StringArrayVar(&o.drop, "drop", nil, "drop pairs matching `KEY=VALUE` (repeatable, any may match), keys as --keep")
	fs.StringVar(&o.from, "from", "", "drop pairs recorded before this RFC 3339 `TIME` (and pairs without ts)")
	fs.StringVar(&o.to, "to", "", "drop pairs recorded at or after this RFC 3339 `TIME` (and pairs without ts)")
	fs.Float64Var(&o.sample, "sample", 1, "keep this `FRACTION` of iterations (whole sessions), chosen by --seed")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of --sample: the same seed keeps the same iterations")
}

// filter builds the rrpair filter, or nil when the flags keep everything.
func (o *filterOptions) filter() (*rrpair.Filter, error) {
	f := &rrpair.Filter{Sample: o.sample, Seed: o.seed}
	for _, s := range o.keep {
		r, err := rrpair.ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("--keep: %w", err)
		}
		f.Keep = append(f.Keep, r)
	}
	for _, s := range o.drop {
		r, err := rrpair.ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("--drop: %w", err)
		}
		f.Drop = append(f.Drop, r)
	}
	var err error
	if f.From, err = parseTime("--from", o.from); err != nil {
		return nil, err
	}
	if f.To, err = parseTime("--to", o.to); err != nil {
		return nil, err
	}
	if o.sample <= 0 || o.sample > 1 {
		return nil, fmt.Errorf("--sample: want a fraction in (0, 1], such as 0.1, got %v", o.sample)
	}
	return f, f.Validate()
}

func parseTime(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, fmt.Errorf("%s: want an RFC 3339 time such as 2026-11-01T10:00:00Z, got %q", flag, s)
	}
	return t, nil
}
