package report

import (
	"strings"
	"testing"
)

// TestAchievedIsMeasured: the Achieved line gives the requests an
// iteration of the run (requests begun ÷ iterations begun: 363 of 100
// iterations is 3.63), not the plan's 6.06, which stays on the Model
// line, labelled as the target's.
func TestAchievedIsMeasured(t *testing.T) {
	rate, reqRate := 198.02, 1200.0
	s := &Summary{Version: 2, Started: t0, DurationS: 1, Model: "rate", TargetRate: &rate, TargetRequestRate: &reqRate,
		RateUnit: "requests", RequestsPerIteration: 6.06,
		Requests: 363, Succeeded: 363, Answered: 363, Iterations: 100, IterationRate: 100, RequestRate: 363}
	var b strings.Builder
	if err := WriteText(&b, s); err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	if got := lines["Achieved"]; !strings.HasSuffix(got, "100.00, 363.00, 3.63") {
		t.Errorf("got %q, want the measured 3.63 requests an iteration", got)
	}
	if got := lines["Model"]; !strings.Contains(got, "at 6.06 requests an iteration") {
		t.Errorf("got %q, want the planned 6.06 on the target's line", got)
	}
}
