package schedule

import (
	"math"
	"time"
)

// Schedule is what a load asks for over time, as offsets from the run's
// start: the target at each moment (iterations per second under an
// arrival rate, VUs under the closed model; none under recorded pacing),
// the steps of --stages and where each ends, when the run stops issuing,
// and, under an arrival rate, when each iteration is due. It is made once
// per run by New and read-only after: safe for any number of goroutines,
// and its hot-path methods (StepOf, Due) allocate nothing.
type Schedule struct {
	model  Model
	start  float64 // the target before the first stage: the rate, or the VUs
	stages []Stage
	limit  time.Duration   // the load's duration; 0: none
	ends   []time.Duration // where each step that runs ends: cut at limit
	// Under an arrival rate: the rate over time, piece by piece, and the
	// offset at and after which no iteration is due.
	segs   []segment
	dueEnd time.Duration
}

// segment is a stretch of time over which the rate moves linearly.
type segment struct {
	start, dur time.Duration
	r0, r1     float64 // iterations per second at its start and end
	before     float64 // iterations due before it
}

// New makes the schedule of l (validated, defaults set).
func New(l Load) *Schedule {
	s := &Schedule{model: l.Model, start: l.Rate, stages: l.Stages, limit: l.Duration}
	if l.Model == Closed {
		s.start = float64(l.VUs)
	}
	if l.Model == Recorded {
		s.stages = nil // recorded pacing follows the recording (Validate refuses stages)
	}
	var at time.Duration
	for _, st := range s.stages {
		if s.limit > 0 && at >= s.limit {
			break // a step that would begin after the duration does not run
		}
		at += st.Duration
		if s.limit > 0 {
			at = min(at, s.limit)
		}
		s.ends = append(s.ends, at)
	}
	if l.Model == Rate {
		s.pace()
	}
	return s
}

// Model is the load model the schedule paces.
func (s *Schedule) Model() Model { return s.model }

// Target is what the load asks for at offset at: iterations per second
// under an arrival rate, VUs under the closed model, moving linearly
// through a ramp's step; after the last stage its target holds. ok is
// false under recorded pacing, which has no target.
func (s *Schedule) Target(at time.Duration) (target float64, ok bool) {
	if s.model == Recorded {
		return 0, false
	}
	prev := s.start
	var t time.Duration
	for _, st := range s.stages {
		if at < t+st.Duration {
			if st.Hold {
				return st.Target, true
			}
			return prev + (st.Target-prev)*float64(at-t)/float64(st.Duration), true
		}
		t += st.Duration
		prev = st.Target
	}
	return prev, true
}

// VUs is how many VUs the closed model has active at offset at: Target,
// rounded.
func (s *Schedule) VUs(at time.Duration) int {
	v, _ := s.Target(at)
	return int(math.Round(v))
}

// StepOf is the step (from 0) that offset at falls in: the one rule by
// which a request belongs to the step its iteration was due in
// (docs/design.md, Counting). An offset past the last step (a session's later
// request) belongs to the last; one before the start, to the first. A
// schedule without steps answers -1. It allocates nothing.
func (s *Schedule) StepOf(at time.Duration) int {
	for i, end := range s.ends {
		if at < end {
			return i
		}
	}
	return len(s.ends) - 1
}

// Ends are where each step of the run ends, as offsets from its start:
// the stages, cut at the duration (a step that would begin after it does
// not run). Nil without stages.
func (s *Schedule) Ends() []time.Duration { return s.ends }

// Step is one step of --stages as it runs: where it begins and ends, and
// its target at both (a ramp's moves linearly from From to To; a hold's,
// or the step of a stepped pace, has From = To).
type Step struct {
	Start, End time.Duration
	From, To   float64
	Ramp       bool
}

// Steps are the steps that run, in order (Ends, with their targets); the
// first ramps from the rate or VUs the load starts with.
func (s *Schedule) Steps() []Step {
	steps := make([]Step, len(s.ends))
	prev, at := s.start, time.Duration(0)
	for i, end := range s.ends {
		st := s.stages[i]
		p := Step{Start: at, End: end, From: prev, To: st.Target, Ramp: !st.Hold && prev != st.Target}
		if !p.Ramp {
			p.From = st.Target
		}
		steps[i] = p
		prev, at = st.Target, end
	}
	return steps
}

// End is when the run stops issuing: its duration, else its stages'
// length; 0 when the file decides (a walk over it, or the recording).
func (s *Schedule) End() time.Duration {
	if s.limit == 0 && len(s.stages) > 0 {
		return StagesDuration(s.stages)
	}
	return s.limit
}

// Span is how long the steps that run last (the end of the last); 0
// without stages.
func (s *Schedule) Span() time.Duration {
	if len(s.ends) == 0 {
		return 0
	}
	return s.ends[len(s.ends)-1]
}

// pace builds the arrival rate's segments: the start rate until the
// duration without stages, else the stages, ramps and holds.
func (s *Schedule) pace() {
	var at time.Duration
	var done float64
	add := func(dur time.Duration, r0, r1 float64) {
		s.segs = append(s.segs, segment{start: at, dur: dur, r0: r0, r1: r1, before: done})
		at += dur
		done += (r0 + r1) / 2 * dur.Seconds()
	}
	if len(s.stages) == 0 {
		limit := s.limit
		if limit <= 0 {
			limit = time.Duration(math.MaxInt64)
		}
		add(limit, s.start, s.start)
	}
	prev := s.start
	for _, st := range s.stages {
		if st.Hold {
			add(st.Duration, st.Target, st.Target)
		} else {
			add(st.Duration, prev, st.Target)
		}
		prev = st.Target
	}
	s.dueEnd = at
	if s.limit > 0 && s.limit < s.dueEnd {
		s.dueEnd = s.limit
	}
}

// Due is the offset from the start at which iteration k (from 0) of an
// arrival rate is due, or false when iteration k is beyond the schedule
// (and under any other model). Iteration k is due when the integral of
// the rate reaches k, so a ramp thins or thickens the schedule smoothly
// and nothing drifts: every due time is computed from the start, never
// from the last one. It allocates nothing.
func (s *Schedule) Due(k int64) (time.Duration, bool) {
	n := float64(k)
	for _, sg := range s.segs {
		total := (sg.r0 + sg.r1) / 2 * sg.dur.Seconds()
		if n >= sg.before+total {
			continue
		}
		t := sg.start + offsetIn(sg, n-sg.before)
		if t >= s.dueEnd {
			return 0, false
		}
		return t, true
	}
	return 0, false
}

// offsetIn solves r0·τ + (r1−r0)·τ²/(2D) = n for τ within segment s.
func offsetIn(s segment, n float64) time.Duration {
	if n <= 0 {
		return 0
	}
	d := s.dur.Seconds()
	a := (s.r1 - s.r0) / (2 * d)
	var tau float64
	if math.Abs(a) < 1e-12 {
		tau = n / s.r0
	} else {
		// a·τ² + r0·τ − n = 0, the root in [0, d].
		disc := s.r0*s.r0 + 4*a*n
		tau = (-s.r0 + math.Sqrt(math.Max(disc, 0))) / (2 * a)
	}
	return time.Duration(tau * float64(time.Second))
}
