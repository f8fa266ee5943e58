package report

import (
	"strings"
	"testing"
)

// A step keeps up when its achieved rate is within the tolerance of its
// target, its thresholds held, and its sinks saw 90% of the events the
// API accepted in it; the verdict's line names the first that did not.
func TestJudgeSteps(t *testing.T) {
	step := func(n int, target, throughput float64, accepted, seen int64, p99 float64) Step {
		st := Step{Step: n, Unit: "rate", From: target, To: target, DurationS: 10, Requests: int64(throughput * 10),
			Answered: int64(throughput * 10), Iterations: int64(throughput * 10), Throughput: throughput, Accepted: accepted,
			AcceptedRate: float64(accepted) / 10}
		if accepted > 0 {
			st.E2E = []StepE2E{{Stage: "processed", Events: seen, Seen: seen, SeenRate: float64(seen) / 10, Latency: Latency{P99: p99}}}
		}
		return st
	}
	for _, c := range []struct {
		name    string
		steps   []Step
		through int
		behind  int
		line    string
	}{
		{"all kept up", []Step{step(1, 500, 499, 4990, 4990, 8.9), step(2, 1000, 950, 9500, 9400, 12)}, 2, 0,
			"kept up through every step (the last, step 2: 1,000/s), e2e p99 8.9ms → 12ms"},
		{"rate below the tolerance", []Step{step(1, 500, 499, 0, 0, 0), step(2, 1000, 880, 0, 0, 0)}, 1, 2,
			"fell behind in step 2 (1,000/s): achieved 880/s of 1,000/s (below 90%)"},
		{"events not seen", []Step{step(1, 1000, 1000, 10000, 10000, 8.9), step(2, 1500, 1500, 15000, 14800, 9), step(3, 1500, 1500, 15000, 9000, 550)}, 2, 3,
			"kept up through step 2 (1,500/s); fell behind in step 3 (1,500/s): events seen 900/s of 1,500/s accepted at processed, e2e p99 9ms → 550ms"},
		{"the first behind", []Step{step(1, 1000, 10, 0, 0, 0)}, 0, 1, "fell behind from step 1 (1,000/s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Summary{Steps: c.steps}
			s.JudgeSteps(DefaultTolerance)
			v := s.StepsVerdict
			if v == nil {
				t.Fatal("no verdict")
			}
			if v.KeptUpThrough != c.through || v.FellBehind != c.behind || !strings.Contains(v.Line, c.line) {
				t.Errorf("through %d, behind %d, line %q\nwant %d, %d, %q", v.KeptUpThrough, v.FellBehind, v.Line, c.through, c.behind, c.line)
			}
		})
	}
	// A threshold on a step that failed puts it behind, though its rate kept up.
	s := &Summary{Steps: []Step{step(1, 100, 100, 0, 0, 0), step(2, 100, 100, 0, 0, 0)},
		Thresholds: []ThresholdResult{{Threshold: "step 2: p99<5ms", Step: 2, Measured: 7, Unit: "ms"}}}
	s.JudgeSteps(DefaultTolerance)
	if s.StepsVerdict.FellBehind != 2 || !strings.Contains(s.StepsVerdict.Line, "step 2: p99<5ms (measured 7 ms)") {
		t.Errorf("a failed step threshold: %+v", s.StepsVerdict)
	}
	// VU stages, no thresholds, no sinks: nothing to judge, no verdict.
	s = &Summary{Steps: []Step{{Step: 1, Unit: "vus", DurationS: 5}}}
	s.JudgeSteps(DefaultTolerance)
	if s.StepsVerdict != nil || s.Steps[0].KeptUp != nil {
		t.Errorf("VU stages judged: %+v", s.StepsVerdict)
	}
}
