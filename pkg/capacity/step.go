package capacity

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/run"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/rs/zerolog"
)

// The generator-limit rule: a hold is the generator's limit, not the
// SUT's, for lateness only when all three hold — more than LateShare of
// its requests begun late (past --late-after), the scheduler's lag p99
// over LagBound (or --late-after, when longer), and the generator short
// of CPU (GeneratorCPU.Short): its process using at least CPUBusyPct of
// the cores it may use over the hold, or its threads kept waiting for a
// CPU at least as long as they ran (a machine busy with other work gave
// it none). The first two say it fell behind; the third that it lacked
// CPU, rather than that a timer's overshoot or a neighbour's time slice
// delayed some starts: without it the hold is judged on the SUT as any other, its lag counted
// in its latency (measured from the due time), with a note. A hold that
// looks generator-limited, or failed with a lag that may explain it, is
// held again once after a pause before it decides anything (Retry,
// Search.Pause).
const (
	// LateShare: a sustained lag, not the odd pause of a busy machine's
	// timers (a 30 ms pause at 400/s makes 12 iterations late, 3% of a
	// one-second hold).
	LateShare = 0.05
	// LagBound: a lag p99 a timer's overshoot or a neighbour's time
	// slice does not reach.
	LagBound = 50 * time.Millisecond
	// CPUBusyPct: half the cores it may use, busy over the whole hold. A
	// generator short of CPU uses at least that, even beside a process
	// that spins on one of two cores (the kernel shares the two cores
	// among the three busy threads); a generator that is not uses a few
	// percent.
	CPUBusyPct = 50.0
)

// DefaultTolerance is how far below its target a step's achieved rate may
// fall and still keep up: a run's steps are held to the same.
const DefaultTolerance = report.DefaultTolerance

// Options are a capacity search as a user asks for it: the run every
// step replays, what a hold must pass, and how the search goes. Check
// them with Validate; Find validates them too.
type Options struct {
	// Run is the run each step replays: file, target, HTTP, transforms,
	// events, filter, and of the load only VUs, MaxVUs, LateAfter and
	// PrecisePacing: the rate, duration, stages, iterations and walk are
	// the search's.
	Run run.Options
	// Thresholds judge each hold (report.ParseThreshold's syntax); at
	// least one.
	Thresholds []string
	// StartRate and MaxRate are rates as given ("400/s", "24000/m",
	// "2400req/s"; "" MaxRate: no ceiling), both in one unit.
	StartRate, MaxRate string
	// Search is how the search goes: its StartRate, MaxRate and StepCost
	// are set from the fields above by Validate.
	Search Search
	Warmup time.Duration
	Hold   time.Duration
	// Tolerance: a hold keeps up when its achieved rate is at least
	// (1 − Tolerance) × its target.
	Tolerance float64
	// SUTCPUs, when above 0, has the result give the sustainable rate
	// per vCPU.
	SUTCPUs float64
	// Live, when set, is called as each run of a step starts (progress,
	// metrics); the stop it returns is called when that run's VUs stop.
	Live func(StepLive) (stop func(), err error)
	// Log receives the search's messages; each run's own are kept to
	// warnings.
	Log zerolog.Logger

	unit schedule.Unit // of StartRate and MaxRate (Validate)
}

// DefaultOptions are the options of replay find-max given no flag.
func DefaultOptions() Options {
	return Options{Run: run.DefaultOptions(), StartRate: "10/s", Warmup: 10 * time.Second, Hold: 30 * time.Second, Tolerance: DefaultTolerance,
		Search: Search{StepFactor: 2, Precision: 0.05, Budget: 30 * time.Minute}}
}

// Validate checks what a search needs beyond a run's options, and fills
// the search's rates and step cost; its errors name the flag. The run's
// own options are checked when it is prepared (Find).
func (o *Options) Validate() error {
	switch o.Run.File {
	case "":
		return errors.New("--file: required (a traffic file)")
	case "-":
		return errors.New("--file -: a search replays the file at every step; give a file, not standard input")
	}
	if err := o.parseRates(); err != nil {
		return err
	}
	if o.SUTCPUs < 0 {
		return fmt.Errorf("--sut-cpus: want a number of vCPUs above 0, got %v", o.SUTCPUs)
	}
	o.Search.StepCost = o.stepCost()
	if o.Search.Pause == 0 { // the pause before a hold that looked like the generator's limit is held again
		o.Search.Pause = min(max(o.Hold, time.Second), 10*time.Second)
	}
	if err := o.Search.Validate(); err != nil {
		return err
	}
	if _, err := o.thresholds(); err != nil {
		return err
	}
	if sh := o.Run.Shard; sh.Shard != "" || sh.Shards != 0 || sh.StartAt != "" {
		return errors.New("--shard, --shards, --start-at: a capacity search cannot be sharded: each step's rate is decided from the step before, so one process must see every result; run find-max from one place (its --max-vus and CPU permitting)")
	}
	if o.Hold <= 0 {
		return fmt.Errorf("--hold: want a positive duration such as 30s, got %v", o.Hold)
	}
	if o.Warmup < 0 {
		return fmt.Errorf("--warmup: want a duration ≥ 0, got %v", o.Warmup)
	}
	if !(o.Tolerance >= 0 && o.Tolerance < 1) {
		return fmt.Errorf("--tolerance: want a fraction from 0 to below 1 such as 0.1, got %v", o.Tolerance)
	}
	return nil
}

// parseRates reads --start-rate and --max-rate into the search, in the
// unit they were given in (Find converts requests to iterations once the
// file says how many an iteration holds); mixing units is refused.
func (o *Options) parseRates() error {
	var err error
	var maxUnit schedule.Unit
	if o.Search.StartRate, o.unit, err = ParseRate("--start-rate", o.StartRate); err != nil {
		return err
	}
	if o.Search.MaxRate, maxUnit, err = ParseRate("--max-rate", o.MaxRate); err != nil {
		return err
	}
	if o.MaxRate != "" && maxUnit != o.unit {
		return fmt.Errorf("--start-rate %s and --max-rate %s: one in %s a second, the other in %s; write both in iterations (/s) or both in requests (req/s)",
			o.StartRate, o.MaxRate, o.unit, maxUnit)
	}
	return nil
}

// stepCost is how long a step may take at most: its warm-up run and its
// hold run, each of them its schedule, the stop's grace (or --timeout)
// and a run's overhead, and the hold's drain when events are tracked
// (run.Options.MostTime). The budget is held to it: no step starts that
// could end past the budget.
func (o *Options) stepCost() time.Duration {
	cost := o.Run.MostTime(o.Hold, true)
	if o.Warmup > 0 {
		cost += o.Run.MostTime(o.Warmup, false)
	}
	return cost
}

// thresholds parses the thresholds: at least one, none on a step of
// --stages (a hold has none).
func (o *Options) thresholds() ([]report.Threshold, error) {
	if len(o.Thresholds) == 0 {
		return nil, errors.New("--threshold: give at least one, such as p99<200ms and errors<1%: the search needs to know what keeping up means")
	}
	var ts []report.Threshold
	for _, expr := range o.Thresholds {
		t, err := report.ParseThreshold(expr)
		if err != nil {
			return nil, fmt.Errorf("--threshold: %w", err)
		}
		if t.Step != 0 {
			return nil, fmt.Errorf("--threshold %q: a hold is one rate, without steps: judge the whole hold (p99<200ms)", expr)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// Params are the search's settings as given, for its reports; per is
// the requests an iteration holds.
func (o *Options) params(per float64) *Params {
	return &Params{Thresholds: o.Thresholds, StartRate: o.Search.StartRate, StepFactor: o.Search.StepFactor,
		HoldS: o.Hold.Seconds(), WarmupS: o.Warmup.Seconds(), Tolerance: o.Tolerance, MaxRate: o.Search.MaxRate, BudgetS: o.Search.Budget.Seconds(),
		unit: o.unit.String(), perIteration: per}
}

// Find runs the search o describes and returns what it found: it checks
// o, prepares the run once (the file opened, mapped and validated once,
// the transforms compiled, the transport built), then holds each rate of
// the search on it. The error is a bad option (nothing was sent), a step
// that could not be run, or the context's; the result so far comes with
// the last two.
func Find(ctx context.Context, o Options) (*Result, error) {
	if o.Search.Began.IsZero() {
		o.Search.Began = time.Now() // the budget counts the preparation too
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w\nnothing was sent", err)
	}
	r, err := newRunner(ctx, &o)
	if err != nil {
		return nil, fmt.Errorf("%w\nnothing was sent", err)
	}
	defer r.prepared.Close()
	per := r.perIteration
	if o.unit == schedule.Requests { // the search holds iterations; its rates read in requests
		o.Search.StartRate, o.Search.MaxRate, o.Search.Scale = o.Search.StartRate/per, o.Search.MaxRate/per, per
	}
	res, err := o.Search.Run(ctx, r.Step)
	if res == nil {
		return nil, err
	}
	res.Params = o.params(per)
	res.RateUnit, res.RequestsPerIteration = o.unit.String(), per
	res.SustainableRequests, res.FailedAtRequests = res.Sustainable*per, res.FailedAt*per
	if o.SUTCPUs > 0 && res.Sustainable > 0 {
		res.SUTCPUs, res.PerVCPU, res.RequestsPerVCPU = o.SUTCPUs, res.Sustainable/o.SUTCPUs, res.SustainableRequests/o.SUTCPUs
	}
	return res, err
}

// runner holds each step on one prepared run: a warm-up run at the rate,
// then the hold, a run of its own, which alone is judged. Two runs rather
// than one whose first seconds are left out: the hold's summary is then a
// whole summary, so every threshold a run knows (service time, per
// endpoint, end-to-end, dropped, late, match) is judged by pkg/report
// exactly as replay run judges it, where the per-second intervals carry
// only latency and counts, on whole wall seconds. The price: the VUs'
// connections are made again at the hold's start, and the SUT finishes
// the warm-up's requests before the hold begins.
type runner struct {
	o            *Options
	prepared     *run.Prepared
	base         schedule.Load // the prepared run's: at the start rate
	perIteration float64       // the mean number of requests an iteration holds
	parsed       []report.Threshold
	log          zerolog.Logger // each run's: warnings only
	n            int            // steps begun
}

// newRunner prepares the run every step replays, for a hold of the start
// rate.
func newRunner(ctx context.Context, o *Options) (*runner, error) {
	ts, err := o.thresholds()
	if err != nil {
		return nil, err
	}
	base := o.Run
	base.Load.Rate, base.Load.Stages, base.Load.Iterations, base.Load.Mode = o.StartRate, "", 0, "loop"
	base.Load.Duration, base.Load.DurationGiven = o.Hold, true
	base.Thresholds, base.AbortOnFail, base.Ready, base.Live = o.Thresholds, false, nil, nil
	base.Log = o.Log
	p, err := run.Prepare(ctx, base)
	if err != nil {
		return nil, err
	}
	return &runner{o: o, prepared: p, base: p.Load(), perIteration: max(p.PerIteration(), 1e-9), parsed: ts,
		log: o.Log.Level(max(zerolog.WarnLevel, o.Log.GetLevel()))}, nil
}

// StepLive is a run of a step starting: which step, which part, which
// rate, and the run's live counters, whose step and target are the
// search's (the step's number, its rate: a hold has no stages of its own).
type StepLive struct {
	Step int
	Part string // "warm-up" or "hold"
	Rate float64
	View recording.LiveView
}

// Step holds rate for a step of the search (a StepFunc).
func (r *runner) Step(ctx context.Context, phase Phase, rate float64) (Step, error) {
	r.n++
	began := time.Now()
	if r.o.Warmup > 0 {
		if _, err := r.prepared.Run(ctx, r.pass(rate, r.o.Warmup, "warm-up")); err != nil {
			return Step{}, fmt.Errorf("step %d (%s %s) warm-up: %w", r.n, phase, r.rateText(rate), err)
		}
	}
	pass := r.pass(rate, r.o.Hold, "hold")
	pass.Judge, pass.AbortOnFail = true, true // a hold that can no longer pass ends early
	meter := meterCPU()
	sum, err := r.prepared.Run(ctx, pass)
	cpu := meter.done()
	if sum == nil || (err != nil && !errors.Is(err, run.ErrAborted)) {
		return Step{}, fmt.Errorf("step %d (%s %s): %w", r.n, phase, r.rateText(rate), err)
	}
	st := Judge(sum, rate, r.parsed, r.o.Tolerance, cpu)
	st.Took = time.Since(began).Seconds()
	return st, nil
}

// rateText writes rate, iterations a second, in the unit the search was
// asked in.
func (r *runner) rateText(rate float64) string {
	if r.o.unit == schedule.Requests {
		return formatRate(rate*r.perIteration) + "req/s"
	}
	return formatRate(rate) + "/s"
}

// pass is one part of a step: rate (iterations a second) held for d, its
// events drained only when it is judged.
func (r *runner) pass(rate float64, d time.Duration, part string) run.Pass {
	l := r.base
	l.Model, l.Walk, l.Rate, l.Duration, l.Stages, l.Iterations = schedule.Rate, schedule.Loop, rate, d, nil, 0
	l.Unit = schedule.Iterations // converted already
	p := run.Pass{Load: l, NoDrain: part == "warm-up", Log: &r.log}
	if r.o.Live != nil {
		n := r.n
		p.Live = func(v recording.LiveView) (func(), error) {
			now := v.Now
			v.Now = func() recording.Live {
				l := now()
				l.HasTarget, l.Step, l.Target = true, n, rate
				return l
			}
			return r.o.Live(StepLive{Step: n, Part: part, Rate: rate, View: v})
		}
	}
	return p
}

// Judge judges the summary of a hold at target iterations per second,
// the generator having used cpu over it: the generator's limits first
// (they say nothing of the SUT), then the thresholds, then whether the
// SUT kept up with the target. Lateness is the generator's limit only
// by the rule of LateShare, LagBound and CPUBusyPct; a hold that fell
// behind without lacking CPU is judged on the SUT, marked Behind, with a
// note that gives the figures.
func Judge(s *report.Summary, target float64, ts []report.Threshold, tolerance float64, cpu GeneratorCPU) Step {
	st := heldStep(s, target, cpu)
	passed := report.Evaluate(s, ts)
	var failed string
	st.Checks, failed = thresholdChecks(s)
	lag := lateness(s)
	st.LatePct, st.LagP99 = round3(100*lag.share), lag.p99
	st.Behind = lag.behind()
	st.judge(s, passed, failed, lag, tolerance, cpu)
	if st.Behind && st.Verdict != GeneratorLimit {
		st.Note = behindNote(s, lag, cpu)
	}
	return st
}

// heldStep is the step of a hold at target from its summary: what it
// asked and achieved, its errors and latency, before any verdict.
func heldStep(s *report.Summary, target float64, cpu GeneratorCPU) Step {
	st := Step{Target: target, TargetRequests: target * s.RequestsPerIteration, AchievedRequests: s.Throughput,
		Requests: s.Requests, Dropped: s.Dropped, Late: s.Late, VUs: s.VUsMax, CPU: cpu,
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
	return st
}

// thresholdChecks are the evaluated thresholds of s, one line each, and
// the first that failed with its measure ("" when none did).
func thresholdChecks(s *report.Summary) (checks []string, failed string) {
	for _, t := range s.Thresholds {
		mark := "pass"
		if !t.Pass {
			mark = "FAIL"
			if failed == "" {
				failed = fmt.Sprintf("%s (%s)", t.Threshold, t.Rounded().MeasuredText(-1))
			}
		}
		checks = append(checks, fmt.Sprintf("%s: %s, %s", t.Threshold, mark, t.Rounded().MeasuredText(-1)))
	}
	return checks, failed
}

// judge gives the step its verdict and reason: the generator's limits
// first, then the thresholds (passed; failed names the first that
// failed), then whether the SUT kept up with the target within tolerance.
func (st *Step) judge(s *report.Summary, passed bool, failed string, lag lag, tolerance float64, cpu GeneratorCPU) {
	target := st.Target
	scheduled := s.Iterations + s.Dropped
	if s.Schedule != nil && s.Schedule.Scheduled > 0 {
		scheduled = s.Schedule.Scheduled
	}
	// A SUT that failed with a latency many times the lag failed on its
	// own, whatever the generator's CPU: the lag cannot be what failed it.
	short := (!cpu.Known() || cpu.Short()) && (passed || lag.p99 >= s.Latency.P99/4)
	switch local := s.Errors["local"]; {
	case local > 0:
		st.Verdict, st.Reason = GeneratorLimit, fmt.Sprintf("the generator's own limits: %d requests failed locally (file descriptors, ports)", local)
	case st.Behind && short && cpu.Known():
		st.Verdict, st.Reason = GeneratorLimit, fmt.Sprintf("the generator lacked CPU: %s; generator CPU %s (%s)", lag, cpu.Detail(), shortBy(cpu))
	case st.Behind && short:
		st.Verdict, st.Reason = GeneratorLimit, fmt.Sprintf("the generator fell behind: %s; its CPU use is unknown here (%s)", lag, cpu.Unknown)
	case !passed:
		st.Verdict, st.Reason = Fail, failed
	case s.Dropped > 0:
		st.Verdict, st.Reason = GeneratorLimit, fmt.Sprintf("--max-vus: all %d VUs busy, %d of %d iterations dropped while the SUT answered within the thresholds", s.VUsMax, s.Dropped, scheduled)
	case st.Achieved < (1-tolerance)*target:
		st.Verdict, st.Reason = Fail, fmt.Sprintf("achieved %s/s of %s/s (below %.0f%%)", formatRate(st.Achieved), formatRate(target), 100*(1-tolerance))
	default:
		st.Verdict = Pass
	}
}

// behindNote is the note on a hold that fell behind and was judged on the
// SUT: it failed on its own (the generator short of CPU, or its use
// unknown, but a latency many times the lag), or the generator was not
// short of CPU.
func behindNote(s *report.Summary, lag lag, cpu GeneratorCPU) string {
	if !cpu.Known() || cpu.Short() {
		return fmt.Sprintf("%s, with the generator at %s, but a latency p99 of %.1f ms, many times the lag: the SUT failed on its own", lag, cpu.Detail(), s.Latency.P99)
	}
	return fmt.Sprintf("%s, with the generator at %s (under %.0f%%, not kept waiting): not short of CPU, so the SUT is judged, the lag counted in its latency", lag, cpu.Detail(), CPUBusyPct)
}

// shortBy says which figure shows the want of CPU.
func shortBy(c GeneratorCPU) string {
	if c.UsedPct >= CPUBusyPct {
		return fmt.Sprintf("at least %.0f%%", CPUBusyPct)
	}
	return "the machine gave it none: it waited at least as long as it ran"
}

// lag is how late a hold's requests began.
type lag struct {
	late, requests int64
	share          float64 // late ÷ requests
	p99            float64 // the scheduler's lag p99, ms
	bound          float64 // the lag p99 above which it fell behind, ms
}

// lateness is the hold's lag, against the rule's bounds.
func lateness(s *report.Summary) lag {
	l := lag{late: s.Late, requests: s.Requests, bound: float64(LagBound) / float64(time.Millisecond)}
	if s.Requests > 0 {
		l.share = float64(s.Late) / float64(s.Requests)
	}
	if sc := s.Schedule; sc != nil {
		l.p99, l.bound = sc.LagP99MS, max(l.bound, sc.LateAfterMS)
	}
	return l
}

// behind says the hold fell behind its schedule: more than LateShare of
// its requests begun late and a lag p99 over the bound.
func (l lag) behind() bool { return l.share > LateShare && l.p99 > l.bound }

// String writes the figures: "60 of 500 requests begun late (12%, over
// 5%), scheduler lag p99 230 ms (over 50 ms)".
func (l lag) String() string {
	return fmt.Sprintf("%d of %d requests begun late (%.1f%%, over %.0f%%), scheduler lag p99 %.1f ms (over %.0f ms)",
		l.late, l.requests, 100*l.share, 100*LateShare, l.p99, l.bound)
}

// formatRate writes a rate with at most one decimal: 400, 287.5.
func formatRate(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// ParseRate reads a rate flag ("400/s", "400", "24000/m": iterations;
// "2400req/s": requests) as a number a second and its unit; "" is 0
// iterations. Its error names the flag.
func ParseRate(flag, s string) (float64, schedule.Unit, error) {
	if s == "" {
		return 0, schedule.Iterations, nil
	}
	v, u, err := schedule.ParseRate(s)
	if err != nil {
		return 0, u, fmt.Errorf("%s: %w", flag, err)
	}
	return v, u, nil
}
