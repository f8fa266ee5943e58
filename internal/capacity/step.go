package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/replay-dev/replay/internal/run"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// LateShare is the share of a step's iterations begun late (past
// --late-after) above which the generator, not the SUT, fell behind: a
// sustained lag, not the odd pause of a busy machine's timers (a 30 ms
// pause at 400/s makes 12 iterations late, 3% of a one-second hold).
const LateShare = 0.05

// DefaultTolerance is how far below its target a step's achieved rate may
// fall and still keep up.
const DefaultTolerance = 0.1

// Runner holds each step with internal/run.Execute: a warm-up run at the
// rate, then the hold, a run of its own, which alone is judged. Two runs
// rather than one whose first seconds are left out: the hold's summary is
// then a whole summary, so every threshold a run knows (service time, per
// endpoint, end-to-end, dropped, late, match) is judged by pkg/report
// exactly as replay run judges it, where the per-second intervals carry
// only latency and counts, on whole wall seconds. The price: the VUs'
// connections are made again at the hold's start, and the SUT finishes
// the warm-up's requests before the hold begins.
type Runner struct {
	// Base is the run each step starts from: file, target, HTTP,
	// transforms, events, filter, VUs. Its rate, duration, stages,
	// iterations and walk are the step's.
	Base run.Options
	// Thresholds judge each hold (report.ParseThreshold's syntax).
	Thresholds []string
	Warmup     time.Duration
	Hold       time.Duration
	// Tolerance: a hold keeps up when its achieved rate is at least
	// (1 − Tolerance) × its target.
	Tolerance float64
	// Live, when set, is called as each run of a step starts (progress,
	// metrics); the stop it returns is called when that run's VUs stop.
	Live func(StepLive) (stop func(), err error)
	// Log receives the search's messages; each run's own are kept to
	// warnings.
	Log zerolog.Logger

	parsed []report.Threshold
	n      int // steps begun
}

// StepLive is a run of a step starting: which step, which part, which
// rate, and the run's live counters.
type StepLive struct {
	Step    int
	Part    string // "warm-up" or "hold"
	Rate    float64
	Sources run.LiveSources
}

// Check parses the thresholds and checks the base options that a search
// cannot take; its errors name the flag.
func (r *Runner) Check() error {
	if len(r.Thresholds) == 0 {
		return errors.New("--threshold: give at least one, such as p99<200ms and errors<1%: the search needs to know what keeping up means")
	}
	r.parsed = r.parsed[:0]
	for _, expr := range r.Thresholds {
		t, err := report.ParseThreshold(expr)
		if err != nil {
			return fmt.Errorf("--threshold: %w", err)
		}
		r.parsed = append(r.parsed, t)
	}
	if sh := r.Base.Shard; sh.Shard != "" || sh.Shards != 0 || sh.StartAt != "" {
		return errors.New("--shard, --shards, --start-at: a capacity search cannot be sharded: each step's rate is decided from the step before, so one process must see every result; run find-max from one place (its --max-vus and CPU permitting)")
	}
	if r.Hold <= 0 {
		return fmt.Errorf("--hold: want a positive duration such as 30s, got %v", r.Hold)
	}
	if r.Warmup < 0 {
		return fmt.Errorf("--warmup: want a duration ≥ 0, got %v", r.Warmup)
	}
	if !(r.Tolerance >= 0 && r.Tolerance < 1) {
		return fmt.Errorf("--tolerance: want a fraction from 0 to below 1 such as 0.1, got %v", r.Tolerance)
	}
	return nil
}

// Step holds rate for a step of the search (a StepFunc). Call Check first.
func (r *Runner) Step(ctx context.Context, phase Phase, rate float64) (Step, error) {
	r.n++
	began := time.Now()
	if r.Warmup > 0 {
		if _, err := run.Execute(ctx, r.options(rate, r.Warmup, "warm-up")); err != nil {
			return Step{}, fmt.Errorf("step %d (%s %s/s) warm-up: %w", r.n, phase, formatRate(rate), err)
		}
	}
	o := r.options(rate, r.Hold, "hold")
	o.Thresholds, o.AbortOnFail = r.Thresholds, true // a hold that can no longer pass ends early
	sum, err := run.Execute(ctx, o)
	if sum == nil || (err != nil && !errors.Is(err, run.ErrAborted)) {
		return Step{}, fmt.Errorf("step %d (%s %s/s): %w", r.n, phase, formatRate(rate), err)
	}
	st := Judge(sum, rate, r.parsed, r.Tolerance)
	st.Took = time.Since(began).Seconds()
	return st, nil
}

// options are the run options of one part of a step.
func (r *Runner) options(rate float64, d time.Duration, part string) run.Options {
	o := r.Base
	o.Load.Rate = strconv.FormatFloat(rate, 'f', -1, 64) + "/s"
	o.Load.Duration, o.Load.DurationGiven = d, true
	o.Load.Stages, o.Load.Iterations, o.Load.Mode = "", 0, "loop"
	o.Thresholds, o.AbortOnFail, o.Ready = nil, false, nil
	if part == "warm-up" {
		o.Events.Drain = 0 // the warm-up's events are not judged
	}
	o.Log = r.Log.Level(max(zerolog.WarnLevel, r.Log.GetLevel()))
	if r.Live != nil {
		n := r.n
		o.Live = func(src run.LiveSources) (func(), error) {
			return r.Live(StepLive{Step: n, Part: part, Rate: rate, Sources: src})
		}
	}
	return o
}

// Judge judges the summary of a hold at target iterations per second: the
// generator's limits first (they say nothing of the SUT), then the
// thresholds, then whether the SUT kept up with the target.
func Judge(s *report.Summary, target float64, ts []report.Threshold, tolerance float64) Step {
	st := Step{Target: target, Requests: s.Requests, Dropped: s.Dropped, Late: s.Late, VUs: s.VUsMax,
		Latency: Latency{P50: s.Latency.P50, P90: s.Latency.P90, P99: s.Latency.P99, Max: s.Latency.Max}}
	if s.Requests > 0 {
		st.ErrorsPct = 100 * float64(s.Failed) / float64(s.Requests)
	}
	// Achieved counts iterations whose requests succeeded, over the wall
	// time: a SUT that answers late or fails is not keeping up.
	perIteration := 1.0
	if s.Iterations > 0 && s.Requests > 0 {
		perIteration = float64(s.Requests) / float64(s.Iterations)
	}
	st.Achieved = s.Throughput / perIteration
	passed := report.Evaluate(s, ts)
	failed := ""
	for _, t := range s.Thresholds {
		mark := "pass"
		if !t.Pass {
			mark = "FAIL"
			if failed == "" {
				failed = fmt.Sprintf("%s (measured %s %s)", t.Threshold, measured(t.Measured), t.Unit)
			}
		}
		st.Checks = append(st.Checks, fmt.Sprintf("%s: %s, measured %s %s", t.Threshold, mark, measured(t.Measured), t.Unit))
	}
	scheduled := s.Iterations + s.Dropped
	if s.Schedule != nil && s.Schedule.Scheduled > 0 {
		scheduled = s.Schedule.Scheduled
	}
	lagP99 := 0.0
	if s.Schedule != nil {
		lagP99 = s.Schedule.LagP99MS
	}
	switch local := s.Errors["local"]; {
	case local > 0:
		st.Verdict, st.Reason = GeneratorLimit, fmt.Sprintf("the generator's own limits: %d requests failed locally (file descriptors, ports)", local)
	case scheduled > 0 && float64(s.Late) > LateShare*float64(scheduled):
		st.Verdict, st.Reason = GeneratorLimit, fmt.Sprintf("the generator fell behind: %d of %d iterations begun late (scheduler lag p99 %.1f ms)", s.Late, scheduled, lagP99)
	case !passed:
		st.Verdict, st.Reason = Fail, failed
	case s.Dropped > 0:
		st.Verdict, st.Reason = GeneratorLimit, fmt.Sprintf("--max-vus: all %d VUs busy, %d of %d iterations dropped while the SUT answered within the thresholds", s.VUsMax, s.Dropped, scheduled)
	case st.Achieved < (1-tolerance)*target:
		st.Verdict, st.Reason = Fail, fmt.Sprintf("achieved %s/s of %s/s (below %.0f%%)", formatRate(st.Achieved), formatRate(target), 100*(1-tolerance))
	default:
		st.Verdict = Pass
	}
	return st
}

// measured writes a threshold's measure to 3 decimals: 2.97, 997.375.
func measured(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// formatRate writes a rate with at most one decimal: 400, 287.5.
func formatRate(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// ParseRate reads a rate flag ("400/s", "400", "24000/m") as iterations
// per second; "" is 0. Its error names the flag.
func ParseRate(flag, s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := vu.ParseRate(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", flag, err)
	}
	return v, nil
}
