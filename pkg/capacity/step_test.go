package capacity

import (
	"strings"
	"testing"
	"time"

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
	// late has n of the 400 requests begun late, the scheduler's lag p99
	// at p99 ms, and the SUT slow with it (the lag counts in latency).
	late := func(n int64, p99 float64) func(*report.Summary) {
		return func(s *report.Summary) { s.Late, s.Schedule.LagP99MS, s.Latency.P99 = n, p99, 900 }
	}
	idle, busy := useOf(100*time.Millisecond, time.Second, 2), useOf(1200*time.Millisecond, time.Second, 2)
	// Its threads kept waiting for a CPU 21 times as long as they ran;
	// or waiting, but less than they ran.
	starved, waited := idle, idle
	long, short := 2.1, 0.05
	starved.WaitS, waited.WaitS = &long, &short
	for _, tt := range []struct {
		name    string
		edit    func(*report.Summary)
		cpu     GeneratorCPU
		verdict Verdict
		reason  string
		behind  bool
	}{
		{"keeps up", func(*report.Summary) {}, idle, Pass, "", false},
		{"slow", func(s *report.Summary) { s.Latency.P99 = 80 }, idle, Fail, "p99<50ms (measured 80 ms)", false},
		{"errors", func(s *report.Summary) { s.Succeeded, s.Failed = 380, 20 }, idle, Fail, "errors<1% (measured 5 %)", false},
		{"too little", func(s *report.Summary) { s.Throughput = 300 }, idle, Fail, "achieved 300/s of 400/s", false},
		{"sessions of 4 requests", func(s *report.Summary) { s.Requests, s.Succeeded, s.Answered, s.Throughput = 1600, 1600, 1600, 1592 }, idle, Pass, "", false},
		{"dropped, SUT in time", func(s *report.Summary) { s.Dropped, s.Iterations, s.Throughput = 100, 300, 298 }, idle, GeneratorLimit, "--max-vus: all 8 VUs busy, 100 of 400 iterations dropped", false},
		{"dropped, SUT slow", func(s *report.Summary) { s.Dropped, s.Latency.P99 = 100, 900 }, idle, Fail, "p99<50ms", false},
		// The generator-limit rule: late share, lag p99 and CPU, all three.
		{"late, lagging, CPU busy, the SUT many times slower", func(s *report.Summary) { late(40, 130)(s); s.Latency.P99 = 1250 }, busy, Fail, "p99<50ms (measured 1250 ms)", true},
		{"late, lagging, CPU busy", late(40, 230), useOf(1800*time.Millisecond, time.Second, 2), GeneratorLimit,
			"the generator lacked CPU: 40 of 400 requests begun late (10.0%, over 5%), scheduler lag p99 230.0 ms (over 50 ms); generator CPU 90% of 2 cores (at least 50%)", true},
		{"late, lagging, the machine gave it no CPU", late(40, 230), starved, GeneratorLimit,
			"the generator lacked CPU: 40 of 400 requests begun late (10.0%, over 5%), scheduler lag p99 230.0 ms (over 50 ms); generator CPU 5% of 2 cores, its threads waiting 2.10 s for a CPU against 0.10 s run (the machine gave it none", true},
		{"late, lagging, CPU free, a short wait", late(40, 230), waited, Fail, "p99<50ms (measured 900 ms)", true},
		{"late, lagging, CPU free", late(40, 230), idle, Fail,
			"p99<50ms (measured 900 ms)", true},
		{"late, lagging, CPU free, SUT in time", func(s *report.Summary) { s.Late, s.Schedule.LagP99MS = 40, 230 }, idle, Pass, "", true},
		{"late, lagging, CPU unknown", late(40, 230), GeneratorCPU{Unknown: "no process CPU time on windows"}, GeneratorLimit,
			"the generator fell behind: 40 of 400 requests begun late (10.0%, over 5%), scheduler lag p99 230.0 ms (over 50 ms); its CPU use is unknown here (no process CPU time on windows)", true},
		{"late, little lag, CPU busy", late(40, 20), busy, Fail, "p99<50ms", false},
		{"a few late, lagging, CPU busy", late(8, 230), busy, Fail, "p99<50ms", false},
		{"late past a long --late-after, lag under it", func(s *report.Summary) { late(40, 230)(s); s.Schedule.LateAfterMS = 500 }, busy, Fail, "p99<50ms", false},
		{"local errors", func(s *report.Summary) { s.Errors["local"] = 3 }, idle, GeneratorLimit, "3 requests failed locally", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			tt.edit(s)
			st := Judge(s, 400, ts, DefaultTolerance, tt.cpu)
			if st.Verdict != tt.verdict || !strings.Contains(st.Reason, tt.reason) {
				t.Errorf("got %s %q, want %s %q", st.Verdict, st.Reason, tt.verdict, tt.reason)
			}
			if st.Behind != tt.behind || st.CPU.UsedPct != tt.cpu.UsedPct || st.CPU.WaitS != tt.cpu.WaitS {
				t.Errorf("behind %v, CPU %+v; want %v, %+v", st.Behind, st.CPU, tt.behind, tt.cpu)
			}
			// Behind and judged on the SUT: the note gives the figures.
			if wantNote := st.Behind && st.Verdict != GeneratorLimit; wantNote != (strings.Contains(st.Note, "not short of CPU, so the SUT is judged") || strings.Contains(st.Note, "the SUT failed on its own")) {
				t.Errorf("note %q, want one: %v", st.Note, wantNote)
			}
			if tt.verdict == Pass && (st.Achieved < 397 || st.Achieved > 399) {
				t.Errorf("achieved %v/s, want 398 iterations/s", st.Achieved)
			}
		})
	}
}
