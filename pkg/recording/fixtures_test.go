package recording

import (
	"bytes"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/golden"
	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
)

// TestReportFixtures holds the summaries of recorded runs that package
// report's tests render, merge and judge (its testdata/NAME.summary.json,
// as run --out writes them) to what the recorder builds of these results:
// go test ./pkg/recording -update rewrites them. report's tests read them
// rather than record: report does not import recording.
func TestReportFixtures(t *testing.T) {
	for _, f := range []struct {
		name string
		s    *report.Summary
	}{
		{"closed", record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0, VUs: 4}, Model: "closed"})},
		{"empty", record(testEndpoints, nil).Summary(Meta{Run: result.Counters{Started: t0}, Model: "closed"})},
		{"grpc", grpcSummary(grpcFixture())},
		{"html", htmlSummary()},
		{"stepped", steppedSummary()},
		{"unanswered", unansweredSummary()},
	} {
		t.Run(f.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := report.WriteJSON(&buf, f.s); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "../../report/testdata/"+f.name+".summary.json", buf.Bytes())
		})
	}
}

// htmlSummary is six seconds of a closed run, growing from 50 to 100
// answers a second, one in 17 a 503, and a timeout each second.
func htmlSummary() *report.Summary {
	base := t0.Unix()
	var rs []result.Result
	for sec := int64(0); sec < 6; sec++ {
		for i := int64(0); i < 50+sec*10; i++ {
			status := uint16(200)
			if i%17 == 0 {
				status = 503
			}
			rs = append(rs, atSecond(base+sec, 1+i%9+sec, status, result.ErrNone))
		}
		rs = append(rs, atSecond(base+sec, 0, 0, result.ErrTimeout))
	}
	return record(testEndpoints, rs).Summary(Meta{Run: result.Counters{Started: t0}, Model: "closed"})
}

// steppedSummary is htmlSummary's kind of results recorded as a three-step
// arrival rate (a hold, a ramp, a hold), followed to a sink: an event
// stamped every 200 ms, each accepted, seen at "queued" (named for the
// run) but for the last five: step 3 falls behind.
func steppedSummary() *report.Summary {
	base := t0.Unix()
	var rs []result.Result
	for sec := int64(0); sec < 6; sec++ {
		for i := int64(0); i < 40+sec*20; i++ {
			rs = append(rs, atSecond(base+sec, 1+i%7+sec, 200, result.ErrNone))
		}
	}
	steps := stepsEndingAt(2*time.Second, 4*time.Second, 6*time.Second)
	r := NewRecorder(testEndpoints)
	r.Steps(steps)
	r.Start(t0)
	for _, res := range rs {
		r.Record(res)
	}
	r.Close()
	// The sinks count until the one second of drain after the last send
	// has passed (the summary's seen_until_ms), on a fixed clock: the
	// fixture is the same every time.
	tr := e2e.NewTracker(3, 1, t0, func() time.Time { return t0.Add(7 * time.Second) })
	tr.SetSteps(t0, steps)
	tr.Expect([]string{"queued"}, "delivered")
	for seq := range uint64(30) {
		sent := t0.Add(time.Duration(seq) * 200 * time.Millisecond)
		tr.Stamped(0)
		tr.Accepted(0, seq, sent.UnixMicro())
		if seq < 25 {
			tr.Seen(e2e.AppendID(nil, e2e.ID{Nonce: 3, Seq: seq, Sent: sent.UnixMicro()}), "queued", sent.Add(time.Duration(seq+1)*time.Millisecond))
		}
	}
	plan := []StepPlan{
		{Duration: 2 * time.Second, From: 40, To: 40, Began: 100, PerIteration: 1},
		{Duration: 2 * time.Second, From: 40, To: 100, Ramp: true, Began: 180, PerIteration: 1},
		{Duration: 2 * time.Second, From: 100, To: 100, Began: 260, Dropped: 3, PerIteration: 1},
	}
	s := r.Summary(Meta{Run: result.Counters{Started: t0}, Model: "rate", PerIteration: 1, Steps: plan})
	s.E2E = tr.Summary(time.Second)
	s.SetStepE2E(tr.StepStages(), tr.StepAccepted())
	s.JudgeSteps(report.DefaultTolerance)
	return s
}

// unansweredSummary is a run where nothing was answered: a refused
// connection a second for five seconds.
func unansweredSummary() *report.Summary {
	base := t0.Unix()
	var rs []result.Result
	for i := range 5 {
		rs = append(rs, atSecond(base+int64(i), 0, 0, result.ErrConnect))
	}
	return record(testEndpoints, rs).Summary(Meta{Run: result.Counters{Started: t0}})
}
