package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/golden"
)

// rateSummary is a hand-built summary of an arrival-rate run that shows
// every optional line.
func rateSummary() *Summary {
	rate := 400.0
	return &Summary{
		Version: 2, Started: t0, DurationS: 3, WaitS: 0.0012, WallS: 3.0012,
		Model: "rate", TargetRate: &rate,
		Requests: 1200, Succeeded: 1194, Failed: 6, Answered: 1198, RPS: 399.17, Throughput: 397.84,
		Dropped: 3, Late: 12, Reconnects: 2, VUsMax: 50,
		BytesIn: 24000, BytesOut: 1_536_000,
		Connections: 52, Downgraded: 7, Unsent: 1, Clamped: 1,
		Iterations: 1197, IterationRate: 399, OutOfOrder: 4,
		Schedule: &Schedule{Scheduled: 1200, LagMeanMS: 0.061, LagP50MS: 0.052, LagP99MS: 0.9, LagMaxMS: 1.25, LateAfterMS: 10},
		Latency:  Latency{Min: 0.21, Mean: 1.134, P50: 0.987, P90: 1.81, P95: 2.3, P99: 4.93, P999: 12.05, Max: 3_600_000},
		Service:  Latency{Min: 0.18, Mean: 0.9, P50: 0.85, P90: 1.5, P95: 2, P99: 4, P999: 11, Max: 61_234},
		Status:   map[string]int64{"202": 1100, "200": 94, "500": 4},
		Errors:   map[string]int64{"timeout": 1, "cancelled": 1},
		Endpoints: []Endpoint{
			{Name: "POST /events", Requests: 1100, Succeeded: 1100, Answered: 1100,
				Latency: Latency{P50: 0.95, P90: 1.7, P99: 4.5, Max: 40.1}, Status: map[string]int64{"202": 1100}},
			{Name: "GET /users/{id}/orders", Requests: 98, Succeeded: 94, Failed: 4, Answered: 98,
				Latency: Latency{P50: 1.5, P90: 2.5, P99: 9.99, Max: 3_600_000}, Status: map[string]int64{"200": 94, "500": 4}},
			{Name: "other", Requests: 2, Failed: 2,
				Errors: map[string]int64{"timeout": 1, "cancelled": 1}},
		},
	}
}

func TestWriteTextGolden(t *testing.T) {
	tests := []struct {
		name string
		s    *Summary
	}{
		{"rate", rateSummary()},
		{"closed", recorded(t, "closed")},
		{"empty", recorded(t, "empty")},
		{"transforms", withTransforms(recorded(t, "closed"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteText(&buf, tt.s); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tt.name+".golden", buf.Bytes())
		})
	}
}

func withTransforms(s *Summary) *Summary {
	s.Transforms = []Transform{{Name: "timestamps", Changed: 120}, {Name: "jwt", Changed: 118, Failed: 2}, {Name: "correlate json id", Changed: 40, Failed: 1}}
	return s
}

func TestLagWarning(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lagP99   float64
		latP50   float64
		schedule bool
		want     bool
	}{
		{"lag large against latency", 0.5, 1, true, true},
		{"lag small", 0.05, 1, true, false},
		{"closed model", 5, 1, false, false},
		{"no latency", 5, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rateSummary()
			s.Latency.P50 = tc.latP50
			s.Schedule.LagP99MS = tc.lagP99
			if !tc.schedule {
				s.Schedule = nil
			}
			var buf bytes.Buffer
			if err := WriteText(&buf, s); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(buf.String(), "The scheduler itself was late"); got != tc.want {
				t.Errorf("warning shown: got %v, want %v\n%s", got, tc.want, buf.String())
			}
		})
	}
}

// The steps table has dropped and late columns only when a step had
// some, as the HTML report's.
func TestTextStepsDroppedLate(t *testing.T) {
	s := &Summary{Model: "rate", Steps: []Step{{Step: 1, Target: "10/s", Unit: "rate", DurationS: 1, Requests: 10, Answered: 10},
		{Step: 2, Target: "20/s", Unit: "rate", DurationS: 1, Requests: 20, Answered: 20}}}
	var buf bytes.Buffer
	writeSteps(&buf, s)
	if strings.Contains(buf.String(), "dropped") || strings.Contains(buf.String(), "late") {
		t.Errorf("all-zero dropped and late columns:\n%s", buf.String())
	}
	s.Steps[1].Dropped = 3
	buf.Reset()
	writeSteps(&buf, s)
	if !strings.Contains(buf.String(), "dropped") || strings.Contains(buf.String(), "late") {
		t.Errorf("want the dropped column alone:\n%s", buf.String())
	}
}
