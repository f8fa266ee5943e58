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
	Target   float64 // a rate in the load's Unit (iterations per second once scheduled), or VUs
	Hold     bool
}

// Unit is what a rate counts.
type Unit int

const (
	// Iterations a second: k6's arrival rate, the unit every model
	// schedules ("2000/s", "2000", "120000/m").
	Iterations Unit = iota
	// Requests a second: vegeta's and wrk2's rate ("2000req/s"), scheduled
	// as iterations by the mean number of requests an iteration holds
	// (Load.InIterations).
	Requests
)

func (u Unit) String() string {
	if u == Requests {
		return "requests"
	}
	return "iterations"
}

// Suffix is how a rate in u is written after its number: "/s" or
// "req/s".
func (u Unit) Suffix() string {
	if u == Requests {
		return "req/s"
	}
	return "/s"
}

// ParseStages reads a stage list. Two shapes, comma-separated and mixable:
//
//	30s:2000     ramp linearly to 2000 over 30s (k6's stages)
//	2000@1m      step to 2000 and hold it for 1m (Knative's --pace 2000:60)
//
// For rates, a target may carry a unit: 2000/s or 120000/m (iterations;
// the default), 2000req/s or 120000req/m (requests). So
// "1000@60s,1200@60s,1400@60s" is a stepped pace and
// "30s:1000,2m:1000,30s:0" a ramp up, a plateau and a ramp down. The unit
// returned is the stages' (Iterations for VUs); a list that mixes
// iterations and requests is refused.
func ParseStages(s string, rates bool) ([]Stage, Unit, error) {
	if strings.TrimSpace(s) == "" {
		return nil, Iterations, errors.New("want at least one stage, such as 30s:1000 or 1000@1m")
	}
	var stages []Stage
	var unit Unit
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		st, u, err := parseStage(item, rates)
		if err != nil {
			return nil, Iterations, fmt.Errorf("stage %d %q: %w", i+1, item, err)
		}
		if i > 0 && u != unit {
			return nil, Iterations, fmt.Errorf("stage %d %q: in %s a second, stage 1 in %s: write every stage in one unit (%s or %s)",
				i+1, item, u, unit, trimNum(st.Target)+u.Suffix(), trimNum(st.Target)+unit.Suffix())
		}
		unit = u
		stages = append(stages, st)
	}
	return stages, unit, nil
}

func parseStage(item string, rates bool) (Stage, Unit, error) {
	var dur, target string
	var hold bool
	if t, d, ok := strings.Cut(item, "@"); ok {
		target, dur, hold = t, d, true
	} else if d, t, ok := strings.Cut(item, ":"); ok {
		dur, target = d, t
	} else {
		return Stage{}, Iterations, errors.New("want DURATION:TARGET (ramp) or TARGET@DURATION (hold)")
	}
	d, err := time.ParseDuration(strings.TrimSpace(dur))
	if err != nil || d <= 0 {
		return Stage{}, Iterations, fmt.Errorf("want a positive duration such as 30s, got %q", dur)
	}
	var v float64
	var unit Unit
	if rates {
		v, unit, err = ParseRate(strings.TrimSpace(target))
	} else {
		n, aerr := strconv.Atoi(strings.TrimSpace(target))
		if aerr != nil || n < 0 {
			err = fmt.Errorf("want a number of VUs ≥ 0 (or a rate with a unit, such as 100/s or 600req/s), got %q", target)
		}
		v = float64(n)
	}
	if err != nil {
		return Stage{}, Iterations, err
	}
	return Stage{Duration: d, Target: v, Hold: hold}, unit, nil
}

// rateSyntax is what a rate looks like, for errors.
const rateSyntax = "a rate such as 2000/s (iterations), 2000req/s (requests) or 500/m"

// ParseRate reads a rate as a number a second and its unit: "2000/s",
// "2000" (per second) or "120000/m" are iterations, "2000req/s" or
// "120000req/m" requests; /s, /m and /h in both.
func ParseRate(s string) (float64, Unit, error) {
	num, per, _ := strings.Cut(s, "/")
	unit := Iterations
	if n, ok := strings.CutSuffix(num, "req"); ok {
		num, unit = n, Requests
		if per == "" {
			return 0, unit, fmt.Errorf("want %s, got %q", rateSyntax, s)
		}
	}
	d := time.Second
	switch per {
	case "", "s":
	case "m":
		d = time.Minute
	case "h":
		d = time.Hour
	default:
		return 0, unit, fmt.Errorf("want %s, got %q", rateSyntax, s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, unit, fmt.Errorf("want %s, got %q", rateSyntax, s)
	}
	return v / d.Seconds(), unit, nil
}

// FormatRate writes a rate of unit u as ParseRate reads it: "2000/s",
// "166.67/s", "1000req/s".
func FormatRate(v float64, u Unit) string {
	return trimNum(v) + u.Suffix()
}

// trimNum writes v with at most two decimals, trailing zeros dropped.
func trimNum(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// StagesDuration is the total duration of stages.
func StagesDuration(stages []Stage) time.Duration {
	var d time.Duration
	for _, st := range stages {
		d += st.Duration
	}
	return d
}
