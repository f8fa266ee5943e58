package schedule

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

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

// StagesDuration is the total duration of stages.
func StagesDuration(stages []Stage) time.Duration {
	var d time.Duration
	for _, st := range stages {
		d += st.Duration
	}
	return d
}
