package vu

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Pacer says when the iterations of an open model are due. It is pure
// arithmetic on offsets from the start of the run, so it is tested without
// a clock.
type Pacer interface {
	// Due returns the offset from the start at which iteration k (from 0)
	// is due, or false when iteration k is beyond the schedule.
	Due(k int64) (time.Duration, bool)
}

// Stage is one step of a ramp: from the previous stage's target (or the
// start) the target moves linearly to Target over Duration. With Hold, it
// jumps to Target at the stage's start and stays there.
type Stage struct {
	Duration time.Duration
	Target   float64 // iterations per second, or VUs
	Hold     bool
}

// ParseStages reads a stage list. Two shapes, comma-separated and mixable:
//
//	30s:2000     ramp linearly to 2000 over 30s (k6's stages)
//	2000@1m      step to 2000 and hold it for 1m (Knative's --pace 2000:60)
//
// For rates, a target may carry a unit: 2000/s or 120000/m (default /s).
// So "1000@60s,1200@60s,1400@60s" is a stepped pace and
// "30s:1000,2m:1000,30s:0" a ramp up, a plateau and a ramp down.
func ParseStages(s string, rates bool) ([]Stage, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("want at least one stage, such as 30s:1000 or 1000@1m")
	}
	var stages []Stage
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		st, err := parseStage(item, rates)
		if err != nil {
			return nil, fmt.Errorf("stage %d %q: %w", i+1, item, err)
		}
		stages = append(stages, st)
	}
	return stages, nil
}

func parseStage(item string, rates bool) (Stage, error) {
	var dur, target string
	var hold bool
	if t, d, ok := strings.Cut(item, "@"); ok {
		target, dur, hold = t, d, true
	} else if d, t, ok := strings.Cut(item, ":"); ok {
		dur, target = d, t
	} else {
		return Stage{}, errors.New("want DURATION:TARGET (ramp) or TARGET@DURATION (hold)")
	}
	d, err := time.ParseDuration(strings.TrimSpace(dur))
	if err != nil || d <= 0 {
		return Stage{}, fmt.Errorf("want a positive duration such as 30s, got %q", dur)
	}
	var v float64
	if rates {
		v, err = ParseRate(strings.TrimSpace(target))
	} else {
		n, aerr := strconv.Atoi(strings.TrimSpace(target))
		if aerr != nil || n < 0 {
			err = fmt.Errorf("want a number of VUs ≥ 0 (or a rate with a unit, such as 100/s), got %q", target)
		}
		v = float64(n)
	}
	if err != nil {
		return Stage{}, err
	}
	return Stage{Duration: d, Target: v, Hold: hold}, nil
}

// ParseRate reads "2000/s", "2000" (per second) or "120000/m" as
// iterations per second.
func ParseRate(s string) (float64, error) {
	num, unit, _ := strings.Cut(s, "/")
	per := time.Second
	switch unit {
	case "", "s":
	case "m":
		per = time.Minute
	case "h":
		per = time.Hour
	default:
		return 0, fmt.Errorf("want a rate such as 2000/s or 500/m, got %q", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("want a rate such as 2000/s or 500/m, got %q", s)
	}
	return v / per.Seconds(), nil
}

// segment is a stretch of time over which the rate moves linearly.
type segment struct {
	start, dur time.Duration
	r0, r1     float64 // iterations per second at its start and end
	before     float64 // iterations due before it
}

// RatePacer paces iterations at a rate that follows stages: the arrival
// rate model. Iteration k is due when the integral of the rate reaches k,
// so a ramp thins or thickens the schedule smoothly and nothing drifts:
// every due time is computed from the start, never from the last one.
type RatePacer struct {
	segs []segment
	end  time.Duration // no iteration is due at or after end
}

// NewRatePacer paces at start iterations per second, then through stages.
// Without stages the rate holds until limit (0: for ever).
func NewRatePacer(start float64, stages []Stage, limit time.Duration) *RatePacer {
	p := &RatePacer{}
	var at time.Duration
	var done float64
	prev := start
	add := func(dur time.Duration, r0, r1 float64) {
		p.segs = append(p.segs, segment{start: at, dur: dur, r0: r0, r1: r1, before: done})
		at += dur
		done += (r0 + r1) / 2 * dur.Seconds()
	}
	if len(stages) == 0 {
		if limit <= 0 {
			limit = time.Duration(math.MaxInt64)
		}
		add(limit, start, start)
	}
	for _, st := range stages {
		if st.Hold {
			add(st.Duration, st.Target, st.Target)
		} else {
			add(st.Duration, prev, st.Target)
		}
		prev = st.Target
	}
	p.end = at
	if limit > 0 && limit < p.end {
		p.end = limit
	}
	return p
}

// Due implements Pacer.
func (p *RatePacer) Due(k int64) (time.Duration, bool) {
	n := float64(k)
	for _, s := range p.segs {
		total := (s.r0 + s.r1) / 2 * s.dur.Seconds()
		if n >= s.before+total {
			continue
		}
		t := s.start + offsetIn(s, n-s.before)
		if t >= p.end {
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

// RecordedPacer paces iterations at their recorded times: iteration k is
// due at its offset divided by the speed, and a loop walk starts the file
// again after its span.
type RecordedPacer struct {
	offsets []time.Duration // sorted, already divided by the speed
	period  time.Duration   // span of one walk plus one mean gap; 0: walk once
	end     time.Duration   // no iteration is due at or after end (0: none)
}

// NewRecordedPacer paces iterations at offsets (from the first recorded
// time, already divided by the speed and sorted). With loop, walks repeat
// every span plus one mean gap until limit (0: for ever).
func NewRecordedPacer(offsets []time.Duration, loop bool, limit time.Duration) *RecordedPacer {
	p := &RecordedPacer{offsets: offsets, end: limit}
	if loop && len(offsets) > 0 {
		span := offsets[len(offsets)-1]
		gap := span / time.Duration(max(len(offsets)-1, 1))
		if gap <= 0 {
			gap = time.Millisecond
		}
		p.period = span + gap
	}
	return p
}

// Due implements Pacer.
func (p *RecordedPacer) Due(k int64) (time.Duration, bool) {
	n := int64(len(p.offsets))
	if n == 0 || (p.period == 0 && k >= n) {
		return 0, false
	}
	t := p.offsets[k%n] + time.Duration(k/n)*p.period
	if p.end > 0 && t >= p.end {
		return 0, false
	}
	return t, true
}

// VUTarget says how many VUs should be active at an offset from the start:
// the closed model with --stages.
func VUTarget(start int, stages []Stage, at time.Duration) int {
	prev := float64(start)
	var t time.Duration
	for _, st := range stages {
		if at < t+st.Duration {
			if st.Hold {
				return int(math.Round(st.Target))
			}
			frac := float64(at-t) / float64(st.Duration)
			return int(math.Round(prev + (st.Target-prev)*frac))
		}
		t += st.Duration
		prev = st.Target
	}
	return int(math.Round(prev))
}

// StagesDuration is the total duration of stages.
func StagesDuration(stages []Stage) time.Duration {
	var d time.Duration
	for _, st := range stages {
		d += st.Duration
	}
	return d
}
