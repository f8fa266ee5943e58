package recording

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
)

// stepsTest splits the fixture's second (due times 0 to 990 ms) into
// three steps, ending at 300 ms, 600 ms and 1 s.
var stepsTest = stepsEndingAt(300*time.Millisecond, 600*time.Millisecond, time.Second)

// stepsEndingAt is the schedule of an arrival rate whose steps end at ends.
func stepsEndingAt(ends ...time.Duration) *schedule.Schedule {
	l := schedule.Load{Model: schedule.Rate, VUs: 1}
	var at time.Duration
	for _, e := range ends {
		l.Stages = append(l.Stages, schedule.Stage{Duration: e - at, Target: 100, Hold: true})
		at = e
	}
	return schedule.New(l)
}

var stepPlanTest = []StepPlan{
	{Duration: 300 * time.Millisecond, From: 100, To: 100, Began: 30},
	{Duration: 300 * time.Millisecond, From: 100, To: 500, Ramp: true, Began: 89, Dropped: 1},
	{Duration: 400 * time.Millisecond, From: 500, To: 500, Began: 200, Late: 2},
}

// recordSteps records rs into a recorder that counts by stepEndsTest.
func recordSteps(rs []result.Result) *Recorder {
	r := NewRecorder(testEndpoints)
	r.Steps(stepsTest)
	r.Start(t0)
	for _, res := range rs {
		r.Record(res)
	}
	r.Close()
	return r
}

// TestSteps: each result counts in the step it was due in, with the
// latency of a histogram fed only those results.
func TestSteps(t *testing.T) {
	rs := fixture()
	s := recordSteps(rs).Summary(Meta{Run: result.Counters{Started: t0}, Model: "rate", Steps: stepPlanTest})
	if len(s.Steps) != 3 {
		t.Fatalf("got %d steps, want 3", len(s.Steps))
	}
	var requests int64
	for i, st := range s.Steps {
		lat, svc := hist.New(), hist.New()
		var n, failed int64
		for _, r := range rs {
			off := time.Duration(r.Due - t0.UnixNano())
			if (i > 0 && off < stepsTest.Ends()[i-1]) || (i < 2 && off >= stepsTest.Ends()[i]) {
				continue
			}
			n++
			if r.Err == result.ErrNone {
				hist.RecordNanos(lat, r.End-r.Due)
				hist.RecordNanos(svc, r.End-r.Sent)
			}
			if r.Err != result.ErrNone || r.Status >= 400 {
				failed++
			}
		}
		if st.Requests != n || st.Failed != failed {
			t.Errorf("step %d: %d requests, %d failed; want %d, %d", i+1, st.Requests, st.Failed, n, failed)
		}
		if st.Latency != hist.LatencyOf(lat) || st.Service != hist.LatencyOf(svc) {
			t.Errorf("step %d: latency %+v service %+v, want %+v %+v", i+1, st.Latency, st.Service, hist.LatencyOf(lat), hist.LatencyOf(svc))
		}
		requests += st.Requests
	}
	if requests != s.Requests {
		t.Errorf("steps add up to %d requests, the run has %d", requests, s.Requests)
	}
	st := s.Steps[1]
	if st.Target != "100/s→500/s" || !st.Ramp || st.Scheduled != 90 || st.Dropped != 1 || st.IterationRate < 296 || st.IterationRate > 297 {
		t.Errorf("step 2: %+v; want the ramp 100/s→500/s, 90 scheduled, 1 dropped, 89 begun in 0.3s", st)
	}
	var text bytes.Buffer
	if err := report.WriteText(&text, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rate, 100/s 0.3s, 100/s→500/s 0.3s, 500/s 0.4s", "Steps (requests by the step they were due in)", "100/s→500/s  300ms"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestStepsMerge: the steps of two shards merge into those of one run fed
// every result, exactly: counts and targets add, histograms merge.
func TestStepsMerge(t *testing.T) {
	rs := fixture()
	whole := recordSteps(rs).Summary(Meta{Run: result.Counters{Started: t0}, Model: "rate", Steps: stepPlanTest})
	var halves [2][]result.Result
	for i, r := range rs {
		halves[i%2] = append(halves[i%2], r)
	}
	var shards []*report.Summary
	for _, h := range halves {
		plan := append([]StepPlan(nil), stepPlanTest...)
		for i := range plan {
			plan[i].From, plan[i].To = plan[i].From/2, plan[i].To/2
		}
		shards = append(shards, roundTrip(t, recordSteps(h).Summary(Meta{Run: result.Counters{Started: t0}, Model: "rate", Steps: plan})))
	}
	m, err := report.Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range m.Steps {
		w := whole.Steps[i]
		if st.Requests != w.Requests || st.Failed != w.Failed || st.Latency != w.Latency || st.Service != w.Service ||
			st.Histogram != w.Histogram || st.Target != w.Target || st.Iterations != 2*w.Iterations {
			t.Errorf("step %d merged: %+v\nwant %+v (iterations twice: each shard counted the plan's)", i+1, st, w)
		}
	}
	shards[1].Steps = shards[1].Steps[:2]
	if _, err := report.Merge(shards); err == nil || !strings.Contains(err.Error(), "share --stages") {
		t.Errorf("merge of shards with different steps: got %v, want an error saying they share --stages", err)
	}
}

// roundTrip writes s as JSON and reads it back, as report merge does.
func roundTrip(t *testing.T, s *report.Summary) *report.Summary {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	out, err := report.ReadSummary(&b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStepThresholds: a threshold names a step, or every step.
func TestStepThresholds(t *testing.T) {
	s := recordSteps(fixture()).Summary(Meta{Run: result.Counters{Started: t0}, Model: "rate", Steps: stepPlanTest})
	tests := []struct {
		expr    string
		pass    bool
		results int
	}{
		{"step 1: p99<40ms", true, 1},   // 202s of 1..30 ms and 5 ms
		{"step 3: p50<40ms", false, 1},  // 61..100 ms
		{"step 2: dropped<1", false, 1}, // one dropped
		{"step 2: late<1", true, 1},
		{"each step: iteration_rate>=100", true, 3},
		{"each step: errors<1%", false, 3}, // the 404s, 500s and errors are due in steps 2 and 3
		{"step 4: p99<1s", false, 1},       // no such step: fails, saying so
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			th, err := report.ParseThreshold(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := report.Evaluate(s, []report.Threshold{th}); got != tt.pass || len(s.Thresholds) != tt.results {
				t.Errorf("got pass=%v with %d results %+v, want %v with %d", got, len(s.Thresholds), s.Thresholds, tt.pass, tt.results)
			}
		})
	}
	th, _ := report.ParseThreshold("each step: errors<1%")
	report.Evaluate(s, []report.Threshold{th})
	if got := s.Thresholds[1].Name(); got != "each step: errors<1% (step 2)" {
		t.Errorf("name %q, want the step measured", got)
	}
	if err := report.CheckSteps([]report.Threshold{th}, 0); err == nil || !strings.Contains(err.Error(), "give --stages") {
		t.Errorf("each step without stages: %v, want refused", err)
	}
	th, _ = report.ParseThreshold("step 9: p99<200ms")
	if err := report.CheckSteps([]report.Threshold{th}, 3); err == nil || !strings.Contains(err.Error(), "no step 9, the run has 3") {
		t.Errorf("step 9 of 3: %v, want refused", err)
	}
}

// TestFoldStepsDoNotAllocate holds the per-step fold to zero allocations
// once it has met every status.
func TestFoldStepsDoNotAllocate(t *testing.T) {
	rs := benchResults()
	f := newFold(testEndpoints)
	f.plan = stepsEndingAt(300*time.Millisecond, time.Second)
	f.steps = []stepFold{{status: map[uint16]int64{}, latency: hist.New(), service: hist.New()},
		{status: map[uint16]int64{}, latency: hist.New(), service: hist.New()}}
	f.base.Store(t0.UnixNano())
	for _, r := range rs {
		f.add(r)
	}
	i := 0
	allocs := testing.AllocsPerRun(10_000, func() {
		f.add(rs[i%len(rs)])
		i++
	})
	if allocs != 0 {
		t.Errorf("got %v allocs per fold with steps, want 0", allocs)
	}
}

// TestStepGRPCStatus: a step counts its gRPC answers by status name, so
// that "step 2: grpc.OK>99%" measures that step's calls; the steps of
// shards merge them.
func TestStepGRPCStatus(t *testing.T) {
	at := func(ms int, code uint8) result.Result {
		due := t0.Add(time.Duration(ms) * time.Millisecond).UnixNano()
		return result.Result{Due: due, Sent: due, End: due + int64(time.Millisecond), Status: 200, GRPC: true, GRPCStatus: code}
	}
	rs := []result.Result{at(10, result.GRPCOK), at(400, result.GRPCOK), at(450, result.GRPCUnavailable), at(700, result.GRPCOK)}
	rs = append(rs, result.Result{Due: t0.Add(500 * time.Millisecond).UnixNano(), Err: result.ErrTimeout})
	s := recordSteps(rs).Summary(Meta{Run: result.Counters{Started: t0}, Model: "rate", Steps: stepPlanTest})
	if g := s.Steps[1].GRPCStatus; g["OK"] != 1 || g["UNAVAILABLE"] != 1 || len(g) != 2 {
		t.Fatalf("step 2: grpc_status %v, want OK 1, UNAVAILABLE 1", g)
	}
	th, err := report.ParseThreshold("each step: grpc.OK>99%")
	if err != nil {
		t.Fatal(err)
	}
	report.Evaluate(s, []report.Threshold{th})
	if r := s.Thresholds; len(r) != 3 || !r[0].Pass || r[1].Pass || r[1].Measured != 100.0/3 || !r[2].Pass {
		t.Errorf("each step: %+v; want step 2 failing at 1 OK of 2 answers and 1 timeout", r)
	}
	m, err := report.Merge([]*report.Summary{s, s})
	if err != nil {
		t.Fatal(err)
	}
	if g := m.Steps[1].GRPCStatus; g["OK"] != 2 || g["UNAVAILABLE"] != 2 {
		t.Errorf("merged step 2: grpc_status %v, want OK 2, UNAVAILABLE 2", g)
	}
}
