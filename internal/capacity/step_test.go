package capacity

import (
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/report"
)

// TestJudge: the generator's limits are told apart from the SUT's, and
// come first; then the thresholds; then whether the SUT kept up.
func TestJudge(t *testing.T) {
	ts := []report.Threshold{}
	for _, expr := range []string{"p99<50ms", "errors<1%"} {
		th, err := report.ParseThreshold(expr)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, th)
	}
	base := func() *report.Summary {
		return &report.Summary{Requests: 400, Succeeded: 400, Answered: 400, Iterations: 400, Throughput: 398, VUsMax: 8,
			Latency: report.Latency{P50: 10, P99: 12}, Errors: map[string]int64{}, Schedule: &report.Schedule{Scheduled: 400, LagP99MS: 0.5}}
	}
	for _, tt := range []struct {
		name    string
		edit    func(*report.Summary)
		verdict Verdict
		reason  string
	}{
		{"keeps up", func(*report.Summary) {}, Pass, ""},
		{"slow", func(s *report.Summary) { s.Latency.P99 = 80 }, Fail, "p99<50ms (measured 80 ms)"},
		{"errors", func(s *report.Summary) { s.Succeeded, s.Failed = 380, 20 }, Fail, "errors<1% (measured 5 %)"},
		{"too little", func(s *report.Summary) { s.Throughput = 300 }, Fail, "achieved 300/s of 400/s"},
		{"sessions of 4 requests", func(s *report.Summary) { s.Requests, s.Succeeded, s.Answered, s.Throughput = 1600, 1600, 1600, 1592 }, Pass, ""},
		{"dropped, SUT in time", func(s *report.Summary) { s.Dropped, s.Iterations, s.Throughput = 100, 300, 298 }, GeneratorLimit, "--max-vus: all 8 VUs busy, 100 of 400 iterations dropped"},
		{"dropped, SUT slow", func(s *report.Summary) { s.Dropped, s.Latency.P99 = 100, 900 }, Fail, "p99<50ms"},
		{"late", func(s *report.Summary) { s.Late, s.Latency.P99 = 40, 900 }, GeneratorLimit, "the generator fell behind: 40 of 400 iterations begun late"},
		{"a few late", func(s *report.Summary) { s.Late, s.Latency.P99 = 8, 900 }, Fail, "p99<50ms"},
		{"local errors", func(s *report.Summary) { s.Errors["local"] = 3 }, GeneratorLimit, "3 requests failed locally"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			tt.edit(s)
			st := Judge(s, 400, ts, DefaultTolerance)
			if st.Verdict != tt.verdict || !strings.Contains(st.Reason, tt.reason) {
				t.Errorf("got %s %q, want %s %q", st.Verdict, st.Reason, tt.verdict, tt.reason)
			}
			if tt.verdict == Pass && (st.Achieved < 397 || st.Achieved > 399) {
				t.Errorf("achieved %v/s, want 398 iterations/s", st.Achieved)
			}
		})
	}
}
