// Package capacity searches the highest arrival rate a system under test
// sustains (replay find-max): it steps the rate up from a start rate until
// a step fails the user's thresholds, narrows between the last rate held
// and the first that failed by bisection, confirms the best rate with a
// final hold, and reports the curve of achieved rate against latency. A
// SUT whose holds contradict each other (a rate failed at or below one
// that passed: its capacity flaps with a period of its own) is reported
// unstable there, with both holds, rather than given a rate that depends
// on where its flaps fell.
//
// The search (Search.Run) is pure arithmetic over a step function, so its
// decisions are tested without a clock or a SUT. Find is the real search:
// it checks its own options (Options.Validate), prepares the run once
// (run.Prepare: the traffic file mapped and validated once) and
// holds each step on it, two runs a step (a warm-up, then the hold that
// is judged), each with a typed load.
//
// A Go program fills Options from DefaultOptions (Run is the run each
// step replays: run.Options, file and target), calls Find, and reads the
// Result (Outcome, Sustainable, the Steps) or renders it with WriteText,
// WriteJSON or WriteHTML; Search.Run takes a step function of its own.
package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Verdict is what one step says of the SUT at its rate.
type Verdict string

// The verdicts of a step.
const (
	// Pass: every threshold held and the achieved rate kept up with the
	// target.
	Pass Verdict = "pass"
	// Fail: the SUT did not keep up (a threshold failed, or it achieved
	// too little of the target).
	Fail Verdict = "fail"
	// GeneratorLimit: the generator could not offer the rate (--max-vus
	// all busy with the SUT answering in time, the scheduler late, or the
	// generator's own errors): the step says nothing of the SUT.
	GeneratorLimit Verdict = "generator_limit"
)

// Phase is the part of the search a step belongs to.
type Phase string

// The phases of a search.
const (
	Ramp    Phase = "ramp"    // stepping up by the step factor
	Narrow  Phase = "narrow"  // bisecting between the last good and first bad rate
	Confirm Phase = "confirm" // the final hold of the best rate
)

// Outcome is how a search ended.
type Outcome string

// The outcomes of a search.
const (
	// Found: the knee was found to the precision and the best rate
	// confirmed.
	Found Outcome = "found"
	// AtLeast: the search stopped before the SUT failed (--max-rate or the
	// budget, or the generator's limit): the SUT sustains at least the
	// rate reported, maybe more.
	AtLeast Outcome = "at_least"
	// StartFailed: even the start rate failed.
	StartFailed Outcome = "start_failed"
	// GeneratorLimited: the generator could not offer even the start
	// rate; nothing is known of the SUT.
	GeneratorLimited Outcome = "generator_limit"
	// Interrupted: a signal stopped the search.
	Interrupted Outcome = "interrupted"
	// Unstable: a hold failed at or below a rate another hold passed (a
	// confirmation failed, usually): what the SUT sustains there depends
	// on when it is asked, and no rate is reported.
	Unstable Outcome = "unstable"
)

// Step is one step of the search: the hold of one rate, judged.
type Step struct {
	N        int     `json:"step"` // from 1
	Phase    Phase   `json:"phase"`
	Target   float64 `json:"target_rate"`   // iterations per second asked for
	Achieved float64 `json:"achieved_rate"` // iterations per second the SUT answered with success over the hold
	// TargetRequests is Target in requests a second (× the requests an
	// iteration holds), AchievedRequests the requests a second the SUT
	// answered with success over the hold.
	TargetRequests   float64 `json:"target_request_rate"`
	AchievedRequests float64 `json:"achieved_request_rate"`
	Verdict          Verdict `json:"verdict"`
	// Reason says why a step did not pass: the threshold and what it
	// measured, the achieved share, or the generator's limit.
	Reason    string   `json:"reason,omitempty"`
	Latency   Latency  `json:"latency_ms"`
	Requests  int64    `json:"requests"`
	ErrorsPct float64  `json:"errors_pct"`
	Dropped   int64    `json:"dropped"`
	Late      int64    `json:"late"`
	VUs       int      `json:"vus_max"`
	Took      float64  `json:"took_s"` // warm-up, hold and drain
	Checks    []string `json:"thresholds,omitempty"`
	// LatePct is the share of the hold's requests begun late (past
	// --late-after), in percent; LagP99 the scheduler's lag p99 in ms.
	LatePct float64 `json:"late_pct"`
	LagP99  float64 `json:"lag_p99_ms"`
	// CPU is the generator's own CPU use over the hold.
	CPU GeneratorCPU `json:"generator_cpu"`
	// Behind says the hold fell behind its schedule (more than LateShare
	// begun late, lag p99 over LagBound), whether or not the generator
	// lacked CPU; Note says why it was judged on the SUT all the same.
	Behind bool   `json:"generator_behind,omitempty"`
	Note   string `json:"note,omitempty"`
	// Retried says the hold looked like the generator's limit (or failed
	// behind its schedule) and was held again after a pause: the hold
	// that repeated it, RepeatOf this one's N, decided instead.
	Retried  bool `json:"retried,omitempty"`
	RepeatOf int  `json:"repeat_of,omitempty"`
}

// Latency is a step's latency (from due time, answered requests) in ms.
type Latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Result is what a search found, as --out writes it.
type Result struct {
	Outcome Outcome `json:"outcome"`
	// Sustainable is the highest rate whose hold passed (iterations per
	// second); 0 when none did. With Found, it passed its confirming hold
	// too. It is never a rate that was not held.
	Sustainable float64 `json:"sustainable_rate"`
	Confirmed   bool    `json:"confirmed"`
	// FailedAt is the lowest rate that failed: the knee lies between
	// Sustainable and it. 0 when no step failed.
	FailedAt float64 `json:"failed_rate,omitempty"`
	// Broke is the ramp step where the SUT stopped keeping up, and why.
	Broke *Step `json:"broke,omitempty"`
	// GeneratorLimitAt is the rate the generator could not offer; 0 when
	// it never hit its limit.
	GeneratorLimitAt float64 `json:"generator_limit_rate,omitempty"`
	// Unsteady are the two holds that contradict each other, with
	// Unstable: one passed a rate, the other failed it or a lower one.
	Unsteady *Unsteady `json:"unstable,omitempty"`
	// Stopped says why the search stopped before it failed the SUT: max
	// rate, budget, generator limit, interrupted; "" otherwise.
	Stopped   string  `json:"stopped,omitempty"`
	Precision float64 `json:"precision"`
	// RateUnit is the unit the rates were asked in ("iterations", or
	// "requests": --start-rate 1000req/s), RequestsPerIteration the mean
	// number of requests an iteration holds, which converts them; the
	// rates above are iterations a second, and SustainableRequests and
	// FailedAtRequests the same two in requests a second.
	RateUnit             string  `json:"rate_unit,omitempty"`
	RequestsPerIteration float64 `json:"requests_per_iteration,omitempty"`
	SustainableRequests  float64 `json:"sustainable_request_rate"`
	FailedAtRequests     float64 `json:"failed_request_rate,omitempty"`
	// PerVCPU is Sustainable divided by --sut-cpus, RequestsPerVCPU
	// SustainableRequests; 0 without it.
	PerVCPU         float64 `json:"per_vcpu,omitempty"`
	RequestsPerVCPU float64 `json:"requests_per_vcpu,omitempty"`
	SUTCPUs         float64 `json:"sut_cpus,omitempty"`
	Steps           []Step  `json:"steps"`
	TookS           float64 `json:"took_s"`
	// Params are how the search was asked for, for its reader.
	Params *Params `json:"params,omitempty"`
}

// Unsteady are two holds that contradict each other: Failed's rate is at
// or below Passed's.
type Unsteady struct {
	Passed Step `json:"passed"`
	Failed Step `json:"failed"`
}

// Params are a search's settings as given, shown beside its result.
type Params struct {
	Thresholds []string `json:"thresholds"`
	StartRate  float64  `json:"start_rate"`
	StepFactor float64  `json:"step_factor"`
	HoldS      float64  `json:"hold_s"`
	WarmupS    float64  `json:"warmup_s"`
	Tolerance  float64  `json:"tolerance"`
	MaxRate    float64  `json:"max_rate,omitempty"`
	BudgetS    float64  `json:"budget_s,omitempty"`
	// unit and perIteration write the rates in the unit they were
	// given in.
	unit         string
	perIteration float64
}

// rate writes v, iterations a second, in the unit the search was given.
func (p *Params) rate(v float64) string {
	if p.unit == "requests" {
		return formatRate(v*p.perIteration) + "req/s"
	}
	return formatRate(v) + "/s"
}

// String is the settings in one line.
func (p *Params) String() string {
	s := fmt.Sprintf("thresholds %s · start %s ×%g · hold %gs after %gs warm-up · tolerance %g%%",
		strings.Join(p.Thresholds, ", "), p.rate(p.StartRate), p.StepFactor, p.HoldS, p.WarmupS, 100*p.Tolerance)
	if p.MaxRate > 0 {
		s += fmt.Sprintf(" · max %s", p.rate(p.MaxRate))
	}
	if p.BudgetS > 0 {
		s += fmt.Sprintf(" · budget %gs", p.BudgetS)
	}
	return s
}

// StepFunc holds one rate and judges it. It returns an error only when
// the step could not be run (the error ends the search); a SUT that fails
// is a step with the Fail verdict.
type StepFunc func(ctx context.Context, phase Phase, rate float64) (Step, error)

// Search is how the search goes.
type Search struct {
	StartRate  float64 // the first rate held
	StepFactor float64 // each ramp step multiplies the rate by this (> 1)
	Precision  float64 // stop narrowing once (bad − good) ≤ Precision × good
	MaxRate    float64 // never hold a rate above this; 0: no ceiling
	// Scale is how the rates read to the user: a search asked in requests
	// a second holds iterations a second, each rate rounded to 3 digits as
	// Scale × it (the requests an iteration holds), so that 1000req/s
	// doubles to 2000req/s; 0 or 1: as they are.
	Scale  float64
	Budget time.Duration // start no step that could end past this; 0: no budget
	// StepCost is how long one step may take at most (its runs, each with
	// the stop's grace and the drain after it: Options.Validate says), to
	// tell whether a step still fits in the budget.
	StepCost time.Duration
	// Began is when the budget began (the search's start when zero):
	// Find sets it before it prepares the run.
	Began time.Time
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// OnStep, when set, is told of each step as it ends.
	OnStep func(Step)
	// Pause is how long the search waits before it holds again a step
	// that looked like the generator's limit (Retry); Sleep waits it
	// (a timer that ctx ends, when nil).
	Pause time.Duration
	Sleep func(ctx context.Context, d time.Duration) error
}

// Validate checks the search's parameters; its errors name the flags.
func (s *Search) Validate() error {
	var errs []error
	if !(s.StartRate > 0) || math.IsInf(s.StartRate, 0) {
		errs = append(errs, fmt.Errorf("--start-rate: want a positive rate such as 100/s, got %v/s", s.StartRate))
	}
	if !(s.StepFactor > 1) || math.IsInf(s.StepFactor, 0) {
		errs = append(errs, fmt.Errorf("--step-factor: want a factor above 1 such as 1.5 or 2, got %v", s.StepFactor))
	}
	if !(s.Precision > 0 && s.Precision < 1) {
		errs = append(errs, fmt.Errorf("--precision: want a fraction between 0 and 1 such as 0.05, got %v", s.Precision))
	}
	if s.MaxRate < 0 || (s.MaxRate > 0 && s.MaxRate < s.StartRate) {
		errs = append(errs, fmt.Errorf("--max-rate: want 0 (no ceiling) or at least --start-rate (%v/s), got %v/s", s.StartRate, s.MaxRate))
	}
	if s.Budget < 0 || (s.Budget > 0 && s.Budget < s.StepCost) {
		errs = append(errs, fmt.Errorf("--budget: want 0 (none) or room for one step at its longest (%v: the warm-up and the hold, each followed by --grace, or --timeout when shorter, and the hold by --drain when events are tracked), got %v", s.StepCost, s.Budget))
	}
	return errors.Join(errs...)
}

// searcher is one search under way.
type searcher struct {
	s       *Search
	step    StepFunc
	began   time.Time
	res     *Result
	good    float64 // the highest rate held; 0: none
	bad     float64 // the lowest rate failed; +Inf: none
	stopped string
}

// Run runs the search with step and returns what it found. The error is
// step's (the search could not go on), or the context's; the result so
// far comes with it.
func (s *Search) Run(ctx context.Context, step StepFunc) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	began := s.Began
	if began.IsZero() {
		began = s.now()
	}
	r := &searcher{s: s, step: step, began: began, bad: math.Inf(1), res: &Result{Precision: s.Precision, Steps: []Step{}}}
	err := r.run(ctx)
	r.finish()
	return r.res, err
}

// sleep waits d, or until ctx is done.
func (s *Search) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Search) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// run ramps, narrows and confirms. A confirming hold that fails makes the
// SUT unstable at that rate (hold saw it pass before): the search ends
// there, rather than step down to a rate whose pass may be as much a
// matter of when it was held.
func (r *searcher) run(ctx context.Context) error {
	if done, err := r.ramp(ctx); done || err != nil {
		return err
	}
	if done, err := r.narrow(ctx); done || err != nil {
		return err
	}
	st, ok, err := r.hold(ctx, Confirm, r.good)
	if !ok || err != nil {
		return err
	}
	switch st.Verdict {
	case Pass:
		r.res.Confirmed = true
	case GeneratorLimit:
		r.generatorLimit(r.good)
	}
	return nil
}

// ramp steps the rate up by the factor until a step fails; done means the
// search is over (the ceiling, the budget or the generator's limit).
func (r *searcher) ramp(ctx context.Context) (done bool, err error) {
	rate := r.s.StartRate
	for {
		st, ok, err := r.hold(ctx, Ramp, rate)
		if !ok || err != nil {
			return true, err
		}
		switch st.Verdict {
		case Fail:
			broke := st
			r.res.Broke = &broke
			return r.good == 0, nil // even the start rate failed: done
		case GeneratorLimit:
			r.generatorLimit(rate)
			return true, nil
		}
		if r.s.MaxRate > 0 && rate >= r.s.MaxRate {
			r.stopped = "max rate"
			return true, nil
		}
		rate = r.s.round(rate * r.s.StepFactor)
		if r.s.MaxRate > 0 {
			rate = min(rate, r.s.MaxRate)
		}
	}
}

// narrow bisects between good and bad until they are within the
// precision; done means the search is over.
func (r *searcher) narrow(ctx context.Context) (done bool, err error) {
	for r.bad-r.good > r.s.Precision*r.good {
		mid := r.s.round((r.good + r.bad) / 2)
		if mid <= r.good || mid >= r.bad { // the rounding leaves nothing between them
			break
		}
		st, ok, err := r.hold(ctx, Narrow, mid)
		if !ok || err != nil {
			return true, err
		}
		if st.Verdict == GeneratorLimit {
			r.generatorLimit(mid)
			return true, nil
		}
	}
	return false, nil
}

// hold runs one step at rate, unless the budget has no room for it or ctx
// is done (ok false), and updates good and bad; a step that contradicts
// an earlier one (unsteady) ends the search (ok false). A step that
// looks like the generator's limit (Retry) is held once more after
// Pause, and the second hold decides: a moment's want of CPU on a shared
// machine does not end the search, nor fail the SUT.
func (r *searcher) hold(ctx context.Context, phase Phase, rate float64) (Step, bool, error) {
	st, ok, err := r.once(ctx, phase, rate, 0)
	if !ok || err != nil {
		return st, ok, err
	}
	if Retry(st) && r.room(ctx, r.s.Pause) { // without room to hold it again, the step stands
		r.res.Steps[len(r.res.Steps)-1].Retried = true
		if r.s.OnStep != nil {
			r.s.OnStep(r.res.Steps[len(r.res.Steps)-1])
		}
		if err := r.s.sleep(ctx, r.s.Pause); err != nil {
			r.stopped = "interrupted"
			return st, false, nil
		}
		if st, ok, err = r.once(ctx, phase, rate, st.N); !ok || err != nil {
			return st, ok, err
		}
	}
	switch st.Verdict {
	case Pass:
		r.good = max(r.good, rate)
	case Fail:
		r.bad = min(r.bad, rate)
	}
	if r.s.OnStep != nil {
		r.s.OnStep(st)
	}
	if u := r.unsteady(); u != nil {
		r.res.Unsteady, r.stopped = u, "unstable"
		return st, false, nil
	}
	return st, true, nil
}

// Retry says a step is held again before it decides anything: it looks
// like the generator's limit, or it failed behind its schedule — more
// than RetryLateShare of its requests begun late (enough to move its
// p99), with a scheduler's lag p99 of at least a quarter of its latency
// p99: the lag counts in its latency, and may be what failed it (a busy
// machine's moment rather than the SUT). A SUT whose latency is many
// times the lag failed on its own.
func Retry(st Step) bool {
	if st.Retried || st.RepeatOf > 0 {
		return false
	}
	lagged := st.LatePct > 100*RetryLateShare && st.LagP99 >= st.Latency.P99/4
	return st.Verdict == GeneratorLimit || (st.Verdict == Fail && lagged)
}

// RetryLateShare is the share of a failed hold's requests begun late
// above which its lag may have failed it: more than 1% late can make its
// p99.
const RetryLateShare = 0.01

// room says a step may start after wait: ctx not done, and the budget
// room for it (stopped says which, when not).
func (r *searcher) room(ctx context.Context, wait time.Duration) bool {
	if err := ctx.Err(); err != nil {
		r.stopped = "interrupted"
		return false
	}
	if b := r.s.Budget; b > 0 && r.s.now().Sub(r.began)+wait+r.s.StepCost > b {
		r.stopped = "budget"
		return false
	}
	return true
}

// once runs one hold of rate and adds it to the steps (repeating step
// repeat, when not 0); ok false when there was no room for it.
func (r *searcher) once(ctx context.Context, phase Phase, rate float64, repeat int) (Step, bool, error) {
	if !r.room(ctx, 0) {
		return Step{}, false, nil
	}
	st, err := r.step(ctx, phase, rate)
	if err != nil {
		if ctx.Err() != nil {
			r.stopped = "interrupted"
		}
		return st, false, err
	}
	st.N, st.Phase, st.Target, st.RepeatOf = len(r.res.Steps)+1, phase, rate, repeat
	r.res.Steps = append(r.res.Steps, st)
	return st, true, nil
}

// unsteady finds two holds that contradict each other, the last step one
// of them: a hold that failed at or below a rate another hold passed.
// Their pass and fail depended on when they were held, not on the rate.
func (r *searcher) unsteady() *Unsteady {
	steps := r.res.Steps
	last := steps[len(steps)-1]
	for _, st := range steps[:len(steps)-1] {
		if st.Retried { // the hold that repeated it decided
			continue
		}
		switch {
		case last.Verdict == Fail && st.Verdict == Pass && last.Target <= st.Target:
			return &Unsteady{Passed: st, Failed: last}
		case last.Verdict == Pass && st.Verdict == Fail && st.Target <= last.Target:
			return &Unsteady{Passed: last, Failed: st}
		}
	}
	return nil
}

// generatorLimit notes that the generator could not offer rate.
func (r *searcher) generatorLimit(rate float64) {
	r.res.GeneratorLimitAt = rate
	r.stopped = "generator limit"
}

// finish fills the result's outcome from where the search ended.
func (r *searcher) finish() {
	res := r.res
	res.Sustainable = r.good
	if !math.IsInf(r.bad, 1) {
		res.FailedAt = r.bad
	}
	res.Stopped = r.stopped
	switch {
	case res.Unsteady != nil:
		res.Outcome, res.Sustainable = Unstable, 0 // no rate: it would be the phase's
	case r.stopped == "interrupted":
		res.Outcome = Interrupted
	case r.good == 0 && r.stopped == "generator limit":
		res.Outcome = GeneratorLimited
	case r.good == 0:
		res.Outcome = StartFailed
	case res.Confirmed:
		res.Outcome = Found
	default:
		res.Outcome = AtLeast
	}
	res.TookS = r.s.now().Sub(r.began).Seconds()
}

// round rounds a rate to 3 significant digits as the user reads it
// (Scale).
func (s *Search) round(v float64) float64 {
	if s.Scale <= 0 || s.Scale == 1 {
		return roundRate(v)
	}
	return roundRate(v*s.Scale) / s.Scale
}

// roundRate rounds a rate to 3 significant digits, so that the rates a
// search holds read well (287.5/s becomes 288/s).
func roundRate(v float64) float64 {
	if v <= 0 {
		return v
	}
	scale := math.Pow(10, math.Floor(math.Log10(v))-2)
	return math.Round(v/scale) * scale
}
