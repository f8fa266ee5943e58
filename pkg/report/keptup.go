package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultTolerance is how far below its target a step's achieved rate may
// fall and still keep up (--tolerance, for replay run's steps and
// find-max's holds alike).
const DefaultTolerance = 0.1

// SeenShare is the least share of a step's accepted events that each e2e
// stage must have seen by the end of the drain for the step to keep up.
const SeenShare = 0.9

// StepsVerdict says where a run with --stages stopped keeping up, as in
//
//	{"kept_up_through": 2, "fell_behind": 3, "tolerance": 0.1,
//	 "line": "kept up through step 2 (1,000/s); fell behind in step 3 (1,500/s): events seen 1,480/s of 1,500/s accepted at processed, e2e p99 8.9ms → 550ms"}
type StepsVerdict struct {
	// KeptUpThrough is the last step of the steps that kept up one after
	// the other from the first; 0 when the first did not.
	KeptUpThrough int `json:"kept_up_through"`
	// FellBehind is the first step that did not keep up; absent when all
	// kept up.
	FellBehind int     `json:"fell_behind,omitempty"`
	Tolerance  float64 `json:"tolerance"`
	// Line says it in one line, as the text and HTML reports do.
	Line string `json:"line"`
}

// JudgeSteps says of each step of s whether it kept up (Step.KeptUp, and
// why not in Step.Behind), and in one line where the run stopped keeping
// up (s.StepsVerdict). A step keeps up when
//
//   - under an arrival rate, its achieved rate — iterations whose
//     requests succeeded (with rates written in requests, succeeded
//     requests) per second of the step — is at least (1 − tolerance) of
//     its target (a ramp's mean);
//   - every threshold on it (step N:, each step:) held: call it after
//     Evaluate;
//   - with sinks, each e2e stage saw at least SeenShare of the events the
//     API accepted in the step by the end of the drain.
//
// A step nothing of this judges (VU stages without thresholds or sinks),
// or one the run stopped before, has no verdict; without any, s has none.
func (s *Summary) JudgeSteps(tolerance float64) {
	s.StepsVerdict = nil
	judged := false
	for i := range s.Steps {
		st := &s.Steps[i]
		st.KeptUp, st.Behind = nil, nil
		if st.DurationS <= 0 {
			continue
		}
		checks, behind := s.stepChecks(st, tolerance)
		if checks == 0 {
			continue
		}
		ok := len(behind) == 0
		st.KeptUp, st.Behind, judged = &ok, behind, true
	}
	if judged {
		s.StepsVerdict = stepsVerdict(s.Steps, tolerance)
	}
}

// stepChecks judges step st: how many checks applied, and the reasons
// of those that failed.
func (s *Summary) stepChecks(st *Step, tolerance float64) (checks int, behind []string) {
	if st.Unit == "rate" {
		checks++
		target, achieved, unit := (st.From+st.To)/2, 0.0, "/s"
		if st.Requests > 0 {
			achieved = st.Throughput * float64(st.Iterations) / float64(st.Requests)
		}
		if st.RateUnit == "requests" {
			target, achieved, unit = (st.RequestFrom+st.RequestTo)/2, st.Throughput, "req/s"
		}
		if achieved < (1-tolerance)*target {
			behind = append(behind, fmt.Sprintf("achieved %s of %s (below %s%%)", rateLabel(achieved, unit), rateLabel(target, unit), strconv.FormatFloat(100*(1-tolerance), 'f', -1, 64)))
		}
	}
	for _, t := range s.Thresholds {
		if t.Step != st.Step {
			continue
		}
		checks++
		if !t.Pass {
			behind = append(behind, fmt.Sprintf("%s (measured %s %s)", t.Threshold, strconv.FormatFloat(math.Round(t.Measured*1000)/1000, 'f', -1, 64), t.Unit))
		}
	}
	if len(st.E2E) > 0 && st.Accepted > 0 {
		checks++
		for _, e := range st.E2E {
			if float64(e.Seen) < SeenShare*float64(st.Accepted) {
				behind = append(behind, fmt.Sprintf("events seen %s of %s accepted at %s", rateLabel(e.SeenRate, "/s"), rateLabel(st.AcceptedRate, "/s"), e.Stage))
			}
		}
	}
	return checks, behind
}

// stepsVerdict puts the steps' verdicts in one line: the last step of
// those that kept up from the first, and the first that fell behind, with
// why and how its latency (end to end with sinks) compares.
func stepsVerdict(steps []Step, tolerance float64) *StepsVerdict {
	v := &StepsVerdict{Tolerance: tolerance}
	var last *Step // the last step judged to keep up before the first behind
	for i := range steps {
		st := &steps[i]
		if st.KeptUp == nil {
			continue
		}
		if !*st.KeptUp {
			v.FellBehind = st.Step
			break
		}
		last, v.KeptUpThrough = st, st.Step
	}
	if v.FellBehind == 0 {
		v.Line = fmt.Sprintf("kept up through every step (the last, step %d: %s)", last.Step, targetLabel(last))
		// With sinks, how the end-to-end latency went from the first step
		// to the last: a backlog that drained in time still shows there.
		w0, l0 := latencyLabel(&steps[0])
		if w1, l1 := latencyLabel(last); w0 == "e2e p99" && w1 == w0 && last.Step != 1 {
			v.Line += fmt.Sprintf(", %s %s → %s", w0, l0, l1)
		}
		return v
	}
	bad := &steps[v.FellBehind-1]
	what, lat := latencyLabel(bad)
	if last == nil {
		v.Line = fmt.Sprintf("fell behind from step %d (%s): %s, %s %s", bad.Step, targetLabel(bad), strings.Join(bad.Behind, "; "), what, lat)
		return v
	}
	before := lat
	if w, l := latencyLabel(last); w == what {
		before = l + " → " + lat
	}
	v.Line = fmt.Sprintf("kept up through step %d (%s); fell behind in step %d (%s): %s, %s %s",
		last.Step, targetLabel(last), bad.Step, targetLabel(bad), strings.Join(bad.Behind, "; "), what, before)
	return v
}

// latencyLabel is the latency a verdict quotes for a step: the worst e2e
// stage's p99 when events were seen in it, else the API's p99.
func latencyLabel(st *Step) (what, value string) {
	worst, any := 0.0, false
	for _, e := range st.E2E {
		if e.Events > 0 {
			worst, any = max(worst, e.Latency.P99), true
		}
	}
	if any {
		return "e2e p99", formatMillis(worst)
	}
	if st.Answered == 0 {
		return "p99", "none answered"
	}
	return "p99", formatMillis(st.Latency.P99)
}

// targetLabel is a step's target as a verdict quotes it, in the unit it
// was written in, thousands separated: "1,000/s", "500/s→1,000/s",
// "6,000req/s", "50 VUs".
func targetLabel(st *Step) string {
	if st.Unit == "vus" {
		return st.Target
	}
	from, to, unit := st.From, st.To, "/s"
	if st.RateUnit == "requests" {
		from, to, unit = st.RequestFrom, st.RequestTo, "req/s"
	}
	if st.Ramp {
		return rateLabel(from, unit) + "→" + rateLabel(to, unit)
	}
	return rateLabel(to, unit)
}

// rateLabel writes a rate for people: whole and thousands separated from
// 100 up (1,480/s), else with at most two decimals (12.5/s).
func rateLabel(v float64, unit string) string {
	if math.Abs(v) < 100 {
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + unit
	}
	digits := strconv.FormatFloat(math.Round(math.Abs(v)), 'f', 0, 64)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String() + unit
}
