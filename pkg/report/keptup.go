package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/pkg/e2e"
)

// DefaultTolerance is how far below its target a step's achieved rate may
// fall and still keep up (--tolerance, for replay run's steps and
// find-max's holds alike).
const DefaultTolerance = 0.1

// SeenShare is the least share of a step's accepted events that each e2e
// stage must have seen by the end of the drain for the step to keep up,
// for a summary written before the e2e series were kept (no
// StepE2E.Window); the others are judged by their own window.
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
//   - with sinks, each e2e stage kept up with the events the API
//     accepted in the step, by the step's own window (StepE2E.Window):
//     the backlog (accepted, not yet seen) grew by at most half the
//     tolerance of the events accepted in the step, and one event for
//     the slices' rounding — the events first seen at the stage during
//     the step shifted by the stage's delay (its lowest p99 in any step)
//     are at least (1 − tolerance/2) of those accepted during the step.
//     A stage below its capacity grows no backlog; one at (1 +
//     tolerance) of it grows one of tolerance/(1 + tolerance) of what it
//     is sent, just under the tolerance: half of it lies between the
//     two.
//
// How long the drain waited changes nothing of it unless the drain ended
// before the stage's delay had passed: then only the part of the step
// the sinks could see is judged, and a step of which less than MinJudged
// could be has no verdict (unless another check put it behind) and says
// why in NotJudged. A summary without the series (written before they
// were kept) is judged as it was: SeenShare of the accepted seen by the
// end of the drain.
//
// A step nothing of this judges (VU stages without thresholds or sinks),
// or one the run stopped before, has no verdict; without any, s has none.
func (s *Summary) JudgeSteps(tolerance float64) {
	s.StepsVerdict = nil
	judged := false
	for i := range s.Steps {
		st := &s.Steps[i]
		st.KeptUp, st.Behind, st.NotJudged = nil, nil, nil
		if st.DurationS <= 0 {
			continue
		}
		checks, behind, unjudged := s.stepChecks(st, tolerance)
		if len(behind) == 0 && len(unjudged) > 0 {
			st.NotJudged = unjudged // what it did not see may have fallen behind
			continue
		}
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

// MinJudged is the least share of a step an e2e stage's window must cover
// for the stage to judge it: a drain that ended before the stage's delay
// had passed leaves the end of the last steps unseen.
const MinJudged = 0.5

// stepChecks judges step st: how many checks applied, the reasons of
// those that failed, and why a stage could not judge it.
func (s *Summary) stepChecks(st *Step, tolerance float64) (checks int, behind, unjudged []string) {
	if st.Unit == "rate" {
		checks++
		if why := rateBehind(st, tolerance); why != "" {
			behind = append(behind, why)
		}
	}
	for _, t := range s.Thresholds {
		if t.Step != st.Step {
			continue
		}
		checks++
		if !t.Pass {
			behind = append(behind, fmt.Sprintf("%s (%s)", t.Threshold, t.Rounded().MeasuredText(-1)))
		}
	}
	judged, behind, unjudged := s.e2eChecks(st, tolerance, behind)
	if judged {
		checks++
	}
	return checks, behind, unjudged
}

// rateBehind is why a rate step fell behind its target (the mean of its
// start and end, in the unit it was written in), "" when it kept up.
func rateBehind(st *Step, tolerance float64) string {
	target, achieved, unit := (st.From+st.To)/2, 0.0, "/s"
	if st.Requests > 0 {
		achieved = st.Throughput * float64(st.Iterations) / float64(st.Requests)
	}
	if st.RateUnit == "requests" {
		target, achieved, unit = (st.RequestFrom+st.RequestTo)/2, st.Throughput, "req/s"
	}
	if achieved < (1-tolerance)*target {
		return fmt.Sprintf("achieved %s of %s (below %s%%)", rateLabel(achieved, unit), rateLabel(target, unit), strconv.FormatFloat(100*(1-tolerance), 'f', -1, 64))
	}
	return ""
}

// e2eChecks judges step st at each e2e stage: judged says a stage could,
// behind gets the reasons of those that saw it fall behind, and unjudged
// why a stage could not judge it.
func (s *Summary) e2eChecks(st *Step, tolerance float64, behind []string) (judged bool, _, unjudged []string) {
	for _, e := range st.E2E {
		w := e.Window
		switch {
		case w == nil && st.Accepted > 0: // a summary from before the series
			judged = true
			if float64(e.Seen) < SeenShare*float64(st.Accepted) {
				behind = append(behind, fmt.Sprintf("events seen %s of %s accepted at %s", rateLabel(e.SeenRate, "/s"), rateLabel(st.AcceptedRate, "/s"), e.Stage))
			}
		case w != nil && w.JudgedS < MinJudged*st.DurationS && (w.JudgedS > 0 || w.DelayMS > 0):
			unjudged = append(unjudged, fmt.Sprintf("%s saw %s of the step's %s: its events are due there %s after they are sent, and the drain ended %s after the run; a --drain longer than that delay judges it",
				e.Stage, formatSeconds(max(w.JudgedS, 0)), formatSeconds(st.DurationS), formatMillis(w.DelayMS), formatSeconds(s.drainS())))
		case w != nil && w.Accepted > 0:
			judged = true
			if fellBehind(w, tolerance) {
				behind = append(behind, fmt.Sprintf("backlog at %s grew from %s to %s events: seen %s of %s accepted (delay %s)", e.Stage,
					rateLabel(float64(max(w.BacklogStart, 0)), ""), rateLabel(float64(max(w.BacklogEnd, 0)), ""),
					rateLabel(w.SeenRate, "/s"), rateLabel(w.AcceptedRate, "/s"), formatMillis(w.DelayMS)))
			}
		}
	}
	return judged, behind, unjudged
}

// drainS is how long the run waited for its events, in seconds.
func (s *Summary) drainS() float64 {
	if s.E2E == nil {
		return 0
	}
	return s.E2E.DrainS
}

// fellBehind reports whether a stage fell behind in a step's window: its
// backlog grew by more than half the tolerance of the events accepted in
// it (and one event, for the slices' rounding).
func fellBehind(w *StepWindow, tolerance float64) bool {
	return float64(w.Accepted-w.Seen) > tolerance/2*float64(w.Accepted)+1
}

// SetStepWindows sets each e2e stage's Window in each step (see
// StepWindow) from the e2e section's series: the events accepted in the
// step's span, those first seen at the stage in the same span shifted by
// the stage's delay, cut where the sinks stopped counting. It does
// nothing for a summary without the series (written before they were
// kept), or without steps.
func (s *Summary) SetStepWindows() {
	if s.E2E == nil || s.E2E.AcceptedSeries == nil || len(s.Steps) == 0 {
		return
	}
	byName := map[string]*e2e.Stage{}
	for i := range s.E2E.Stages {
		byName[s.E2E.Stages[i].Name] = &s.E2E.Stages[i]
	}
	delay := stageDelays(s.Steps)
	origin := float64(s.Started.UnixNano()) / 1e6
	until := float64(s.E2E.SeenUntilMS)
	if until == 0 {
		until = math.Inf(1) // merged from sinks that did not say: all they saw
	}
	acc := s.E2E.AcceptedSeries
	for i := range s.Steps {
		st := &s.Steps[i]
		from := origin + st.StartS*1000
		for j := range st.E2E {
			e := &st.E2E[j]
			e.Window = nil
			stage := byName[e.Stage]
			if stage == nil || st.DurationS <= 0 {
				continue
			}
			d := delay[e.Stage]
			to := min(from+st.DurationS*1000, until-d) // the sinks saw up to until: sends up to until − d
			w := &StepWindow{DelayMS: d}
			e.Window = w
			if to <= from {
				continue // the drain ended before the delay passed: nothing of the step to judge
			}
			seen := stage.SeenSeries
			w.JudgedS = (to - from) / 1000
			// The sinks counted nothing from until on: the events of its
			// slice came before it.
			a, sn := acc.Between(from, to), seen.BetweenEnd(from+d, to+d, until)
			w.Accepted, w.Seen = int64(math.Round(a)), int64(math.Round(sn))
			w.AcceptedRate, w.SeenRate = a/w.JudgedS, sn/w.JudgedS
			w.BacklogStart = int64(math.Round(acc.Until(from) - seen.UntilEnd(from+d, until)))
			w.BacklogEnd = int64(math.Round(acc.Until(to) - seen.UntilEnd(to+d, until)))
		}
	}
}

// stageDelays is each e2e stage's delay, in ms: the lowest p99
// end-to-end latency it had in any step (its delay where the system was
// least loaded); 0 for a stage that saw no event. The p99, not the
// median: the window's end then waits for nearly every event a stage
// that keeps up delivers, so that a machine's jitter (a pause of a
// tenth of a second as a step ends) is not read as a backlog; a stage
// short of capacity still delivers no faster in the shifted window.
func stageDelays(steps []Step) map[string]float64 {
	out := map[string]float64{}
	for _, st := range steps {
		for _, e := range st.E2E {
			if e.Events == 0 {
				continue
			}
			if d, ok := out[e.Stage]; !ok || e.Latency.P99 < d {
				out[e.Stage] = e.Latency.P99
			}
		}
	}
	return out
}

// stepsVerdict puts the steps' verdicts in one line: the last step of
// those that kept up from the first, and the first that fell behind, with
// why and how its latency (end to end with sinks) compares.
func stepsVerdict(steps []Step, tolerance float64) *StepsVerdict {
	v := &StepsVerdict{Tolerance: tolerance}
	var last, unjudged *Step // the last step judged to keep up before the first behind; the first that could not be judged
	for i := range steps {
		st := &steps[i]
		if st.KeptUp == nil && st.NotJudged != nil && unjudged == nil {
			unjudged = st
		}
		if st.KeptUp == nil {
			continue
		}
		if !*st.KeptUp {
			v.FellBehind = st.Step
			break
		}
		if unjudged == nil { // kept up one after the other from the first
			last, v.KeptUpThrough = st, st.Step
		}
	}
	switch {
	case unjudged != nil:
		v.Line = notJudgedLine(steps, v.FellBehind, last, unjudged)
	case v.FellBehind == 0:
		v.Line = keptUpLine(steps, last)
	default:
		v.Line = behindLine(steps, v.FellBehind, last)
	}
	return v
}

// notJudgedLine is the verdict's line when step unjudged could not be
// judged: the steps that kept up before it (last, if any), why it was not
// judged, and the step that fell behind (fellBehind, if any).
func notJudgedLine(steps []Step, fellBehind int, last, unjudged *Step) string {
	var parts []string
	if last != nil {
		parts = append(parts, fmt.Sprintf("kept up through step %d (%s)", last.Step, targetLabel(last)))
	}
	parts = append(parts, fmt.Sprintf("step %d (%s) not judged: %s", unjudged.Step, targetLabel(unjudged), strings.Join(unjudged.NotJudged, "; ")))
	if fellBehind != 0 {
		bad := &steps[fellBehind-1]
		what, lat := latencyLabel(bad)
		parts = append(parts, fmt.Sprintf("fell behind in step %d (%s): %s, %s %s", bad.Step, targetLabel(bad), strings.Join(bad.Behind, "; "), what, lat))
	}
	return strings.Join(parts, "; ")
}

// keptUpLine is the verdict's line when every step kept up, to last.
func keptUpLine(steps []Step, last *Step) string {
	line := fmt.Sprintf("kept up through every step (the last, step %d: %s)", last.Step, targetLabel(last))
	// With sinks, how the end-to-end latency went from the first step
	// to the last: a backlog that drained in time still shows there.
	w0, l0 := latencyLabel(&steps[0])
	if w1, l1 := latencyLabel(last); w0 == "e2e p99" && w1 == w0 && last.Step != 1 {
		line += fmt.Sprintf(", %s %s → %s", w0, l0, l1)
	}
	return line
}

// behindLine is the verdict's line when step fellBehind fell behind,
// after the steps that kept up to last (nil when none did).
func behindLine(steps []Step, fellBehind int, last *Step) string {
	bad := &steps[fellBehind-1]
	what, lat := latencyLabel(bad)
	if last == nil {
		return fmt.Sprintf("fell behind from step %d (%s): %s, %s %s", bad.Step, targetLabel(bad), strings.Join(bad.Behind, "; "), what, lat)
	}
	before := lat
	if w, l := latencyLabel(last); w == what {
		before = l + " → " + lat
	}
	return fmt.Sprintf("kept up through step %d (%s); fell behind in step %d (%s): %s, %s %s",
		last.Step, targetLabel(last), bad.Step, targetLabel(bad), strings.Join(bad.Behind, "; "), what, before)
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
