package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/hist"
)

// stageOf is a stage that saw events of 1, 2, ..., seen ms, with unseen
// more pending, its histogram and latency as a tracker writes them.
func stageOf(seen, unseen int64) e2e.Stage {
	h := hist.New()
	for i := int64(1); i <= seen; i++ {
		hist.RecordNanos(h, i*int64(time.Millisecond))
	}
	st := e2e.Stage{Name: "done", Received: seen, Unique: seen, Latency: hist.LatencyOf(h), Histogram: hist.Encode(h)}
	st.SetUnseen(unseen, seen+unseen, false)
	return st
}

// near reports whether got is want ms to the histogram's precision (3
// significant digits).
func near(got, want float64) bool { return math.Abs(got-want) <= want*0.001+0.001 }

// TestCensoredStat: the events not seen sit above every bound. A
// percentile pN is +Inf once they are more than (100−N)% of the events,
// and below that it is the seen events' latency at the rank pN has among
// all of them; with nothing unseen it is hdrhistogram's own.
func TestCensoredStat(t *testing.T) {
	inf := math.Inf(1)
	for _, tt := range []struct {
		name         string
		seen, unseen int64
		stat         string
		want         float64 // ms; +Inf: slower than any bound; NaN: no event
	}{
		{"p99 all seen", 1000, 0, "p99", 990},
		{"p99 0.5% pending moves it up", 1000, 5, "p99", 995},
		{"p99 0.99% pending: the last seen", 1000, 10, "p99", 1000},
		{"p99 1.09% pending: among the pending", 1000, 11, "p99", inf},
		{"p50 a third pending", 1000, 500, "p50", 750},
		{"p50 half pending: the last seen", 1000, 1000, "p50", 1000},
		{"p50 just over half pending", 1000, 1001, "p50", inf},
		{"p999 one pending of 1001", 1000, 1, "p999", 1000},
		{"p999 two pending of 1002", 1000, 2, "p999", inf},
		{"min is the fastest seen", 1000, 999, "min", 1},
		{"mean with one pending", 1000, 1, "mean", inf},
		{"max with one pending", 1000, 1, "max", inf},
		{"max all seen", 1000, 0, "max", 1000},
		{"none seen", 0, 120, "p50", inf},
		{"none seen, min", 0, 120, "min", inf},
		{"no event at all", 0, 0, "p99", math.NaN()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := stageOf(tt.seen, tt.unseen)
			got := censoredStat(&st, tt.stat)
			switch {
			case math.IsNaN(tt.want):
				if !math.IsNaN(got) {
					t.Errorf("got %v, want NaN (nothing to measure)", got)
				}
			case math.IsInf(tt.want, 1):
				if !math.IsInf(got, 1) {
					t.Errorf("got %v ms, want +Inf (among the %d unseen)", got, tt.unseen)
				}
			case !near(got, tt.want):
				t.Errorf("got %v ms, want %v ms", got, tt.want)
			}
		})
	}
	// Nothing unseen: every statistic is the one the stage shows.
	st := stageOf(1000, 0)
	for _, stat := range latencyStats {
		if got, want := censoredStat(&st, stat), statOf(st.Latency, stat); got != want {
			t.Errorf("%s with nothing pending: got %v, want %v, the stage's own", stat, got, want)
		}
	}
}

// TestCensoredStatWithoutHistogram: a summary without the stage's
// histogram (written by hand) gives the stored statistic at or above the
// rank, never a faster one.
func TestCensoredStatWithoutHistogram(t *testing.T) {
	st := e2e.Stage{Name: "done", Unique: 100, Pending: 1, Latency: Latency{Min: 1, P50: 50, P90: 90, P95: 95, P99: 99, P999: 100, Max: 100}}
	for _, tt := range []struct {
		stat string
		want float64
	}{
		{"p50", 90}, // rank 51 of the 100 seen: the 51st percentile, at or below p90
		{"p90", 95}, // rank 91
		{"p99", 100},
		{"min", 1},
	} {
		if got := censoredStat(&st, tt.stat); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.stat, got, tt.want)
		}
	}
}

// judged evaluates threshold expr on s and returns its results.
func judged(t *testing.T, s *Summary, expr string) []ThresholdResult {
	t.Helper()
	th, err := ParseThreshold(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	Evaluate(s, []Threshold{th})
	return append([]ThresholdResult(nil), s.Thresholds...)
}

// TestCensoredThresholds judges a recorded run followed to a sink: 30
// events accepted in three steps, 25 seen at "queued", the last step's 5
// pending at the end of the drain. Its p99 over the seen events is 25 ms;
// over the accepted ones it is among the pending.
func TestCensoredThresholds(t *testing.T) {
	s := recorded(t, "stepped")
	queued := s.E2E.Stages[0]
	if queued.Unique != 25 || queued.Pending != 5 || queued.Latency.P99 > 1000 {
		t.Fatalf("fixture: got %d seen, %d pending, p99 %v ms; want 25, 5, under 1s", queued.Unique, queued.Pending, queued.Latency.P99)
	}
	for _, tt := range []struct {
		expr string
		pass bool
		note string // of each result, in order ("" for none)
	}{
		{"e2e.p99<1s", false, "slower than any bound: 5 of 30 events pending"},
		{"e2e.queued.p99<1s", false, "slower than any bound: 5 of 30 events pending"},
		{"e2e.p90<1s", false, "slower than any bound: 5 of 30 events pending"},
		{"e2e.p50<1s", true, "5 of 30 events pending, counted as slower"},
		{"e2e.min<1s", true, "5 of 30 events pending, counted as slower"},
		{"e2e.max<3600s", false, "slower than any bound: 5 of 30 events pending"},
		{"e2e.mean<3600s", false, "slower than any bound: 5 of 30 events pending"},
		{"e2e.pending<10%", false, ""},
		{"e2e.queued.pending<=5", true, ""},
		{"e2e.queued.pending<5", false, ""},
		{"pending<=5", true, ""},
		{"step 1: e2e.p99<1s", true, ""},
		{"step 3: e2e.p50<1s", true, "5 of 10 events pending, counted as slower"},
		{"step 3: e2e.p90<1s", false, "slower than any bound: 5 of 10 events pending"},
		{"step 3: e2e.pending<50%", false, ""},
		{"step 2: e2e.queued.pending<=0", true, ""},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			rs := judged(t, s, tt.expr)
			r := rs[0]
			if r.Pass != tt.pass || r.Note != tt.note {
				t.Errorf("got pass %v, note %q (measured %v %s); want pass %v, note %q", r.Pass, r.Note, r.Measured, r.Unit, tt.pass, tt.note)
			}
		})
	}
	// p50 over the accepted events is the 15th fastest of the 25 seen,
	// slower than their own p50 (the 13th).
	r := judged(t, s, "e2e.p50<1s")[0]
	if !(r.Measured > queued.Latency.P50) || r.Pending != 5 {
		t.Errorf("censored p50: got %v ms, %d pending; want above the seen events' %v ms, 5 pending", r.Measured, r.Pending, queued.Latency.P50)
	}
	// Every step: the first two saw all their events, the third half.
	var got []bool
	for _, r := range judged(t, s, "each step: e2e.p99<1s") {
		got = append(got, r.Pass)
	}
	if len(got) != 3 || !got[0] || !got[1] || got[2] {
		t.Errorf("each step: e2e.p99<1s: got %v, want [true true false]", got)
	}
}

// deadPipeline is a summary whose API accepted 120 events of which no
// sink saw one, in two steps of 60.
func deadPipeline(t *testing.T) *Summary {
	t.Helper()
	s := recorded(t, "stepped")
	tr := e2e.NewTracker(9, 1, t0, nil)
	tr.Expect([]string{"queued"}, "")
	for seq := range uint64(120) {
		tr.Stamped(0)
		tr.Accepted(0, seq, t0.UnixMicro())
	}
	s.E2E = tr.Summary(time.Second)
	s.Steps, s.StepsVerdict = s.Steps[:2], nil
	for i := range s.Steps {
		s.Steps[i].KeptUp, s.Steps[i].Behind = nil, nil
		s.Steps[i].Accepted = 60
		s.Steps[i].E2E = []StepE2E{{Stage: "queued"}}
		s.Steps[i].SetRates()
	}
	return s
}

// TestDeadPipeline: the API accepted every event and no sink saw one.
// Every end-to-end latency threshold fails, saying "no event seen (120
// pending)", in every report; the stage's percentiles are "–", never 0s,
// and JSON gives the stage no latency; a saved summary judged again fails
// the same.
func TestDeadPipeline(t *testing.T) {
	s := deadPipeline(t)
	rs := judged(t, s, "e2e.p99<2s")
	r := rs[0]
	if r.Pass || !math.IsInf(r.Measured, 1) || r.Pending != 120 || r.Note != "no event seen (120 pending)" {
		t.Fatalf("got %+v, want a failure, +Inf, 120 pending, no event seen", r)
	}
	for _, expr := range []string{"e2e.min<3600s", "e2e.queued.p50<3600s", "each step: e2e.p99<3600s", "step 2: e2e.queued.p999<3600s"} {
		for _, r := range judged(t, s, expr) {
			want := "no event seen (120 pending)"
			if r.Step != 0 {
				want = "no event seen (60 pending)"
			}
			if r.Pass || r.Note != want {
				t.Errorf("%s: got pass %v, note %q; want a failure, %q", r.Name(), r.Pass, r.Note, want)
			}
		}
	}
	for _, tt := range []struct {
		expr string
		pass bool
	}{
		{"e2e.pending<1%", false},
		{"e2e.pending<=120", true},
		{"each step: e2e.queued.pending<100%", false},
	} {
		if r := judged(t, s, tt.expr); r[0].Pass != tt.pass {
			t.Errorf("%s: got pass %v (measured %v %s), want %v", tt.expr, r[0].Pass, r[0].Measured, r[0].Unit, tt.pass)
		}
	}

	judged(t, s, "e2e.p99<2s")
	for _, tt := range []struct {
		name  string
		write func(*bytes.Buffer, *Summary) error
		want  []string
		never []string
	}{
		{"text", func(b *bytes.Buffer, s *Summary) error { return WriteText(b, s) },
			[]string{"FAIL  e2e.p99<2s                     no event seen (120 pending)", "queued       0    0      120   100.00%    –    –    –    –"},
			[]string{"measured 0", "+Inf"}},
		{"json", func(b *bytes.Buffer, s *Summary) error { return WriteJSON(b, s) },
			[]string{`"measured": null`, `"pending": 120`, `"note": "no event seen (120 pending)"`}, nil},
		{"html", func(b *bytes.Buffer, s *Summary) error { return WriteHTML(b, s) },
			[]string{"<td>e2e.p99&lt;2s</td><td>no event seen (120 pending)</td>", "<td>–</td><td>–</td><td>–</td><td>–</td></tr></table>",
				"<td>30.00</td><td>0.00</td><td>–</td></tr>"}, // a step: accepted/s, seen/s, e2e p99
			[]string{"+Inf", "<td>0s</td>"}},
		{"junit", func(b *bytes.Buffer, s *Summary) error { return WriteJUnit(b, s) },
			[]string{`<failure message="no event seen (120 pending)">`}, []string{"measured 0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(&buf, s); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if tt.name == "json" { // no latency for a stage that saw nothing, in the run and in a step
				var raw struct {
					E2E struct {
						Stages []map[string]any `json:"stages"`
					} `json:"e2e"`
					Steps []struct {
						E2E []map[string]any `json:"e2e"`
					} `json:"steps"`
				}
				if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
					t.Fatal(err)
				}
				for _, st := range append(raw.E2E.Stages, raw.Steps[0].E2E[0]) {
					if l, ok := st["latency_ms"]; !ok || l != nil {
						t.Errorf("latency_ms %v (present %v), want null", l, ok)
					}
				}
			}
			if tt.name == "text" { // the stage's percentiles: four dashes, no 0s
				e2eText := e2eSection(out, "End-to-end")
				if strings.Contains(e2eText, " 0s") {
					t.Errorf("end-to-end section, want the stage's percentiles –:\n%s", e2eText)
				}
				for _, line := range strings.Split(e2eSection(out, "Steps"), "\n")[2:] {
					if !strings.HasSuffix(line, "0.00               –") {
						t.Errorf("step row %q, want seen/s 0.00 and e2e p99 –", line)
					}
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in\n%s", w, out)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(out, n) {
					t.Errorf("%q in\n%s", n, out)
				}
			}
		})
	}
	if fails := s.FailedThresholds(); len(fails) != 1 || fails[0] != "e2e.p99<2s (no event seen (120 pending))" {
		t.Errorf("failed thresholds %q, want the one saying no event was seen", fails)
	}

	// Saved and read back (replay report), the verdict is the same, and
	// so is the result as written.
	var buf bytes.Buffer
	if err := WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummary(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if r := back.Thresholds[0]; !math.IsInf(r.Measured, 1) || r.Note != "no event seen (120 pending)" {
		t.Errorf("read back: got %+v, want +Inf, no event seen", r)
	}
	if st := back.E2E.Stages[0]; st.Latency != (Latency{}) || st.Pending != 120 {
		t.Errorf("read back: stage %+v, want no latency, 120 pending", st)
	}
	if err := Judge(back, []string{"e2e.p99<2s", "each step: e2e.queued.p99<2s"}); err != nil {
		t.Fatal(err)
	}
	if fails := back.FailedThresholds(); len(fails) != 3 {
		t.Errorf("judged again: failed %q, want the run and both steps", fails)
	}
}

// e2eSection is the text from the line starting with head to the next
// blank line.
func e2eSection(text, head string) string {
	i := strings.Index(text, "\n"+head)
	if i < 0 {
		return ""
	}
	rest := text[i+1:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		return rest[:j]
	}
	return rest
}

// TestThresholdResultJSON: a value past any bound is written null and
// read back +Inf; a number stays a number, and a result written before
// the note existed reads as it was.
func TestThresholdResultJSON(t *testing.T) {
	for _, tt := range []struct {
		in   ThresholdResult
		json string
	}{
		{ThresholdResult{Threshold: "e2e.p99<2s", Measured: math.Inf(1), Unit: "ms", Pending: 3, Note: "slower than any bound: 3 of 10 events pending"},
			`{"threshold":"e2e.p99\u003c2s","measured":null,"unit":"ms","pass":false,"pending":3,"note":"slower than any bound: 3 of 10 events pending"}`},
		{ThresholdResult{Threshold: "p99<2s", Measured: 12.5, Unit: "ms", Pass: true},
			`{"threshold":"p99\u003c2s","measured":12.5,"unit":"ms","pass":true}`},
	} {
		b, err := json.Marshal(tt.in)
		if err != nil || string(b) != tt.json {
			t.Errorf("got %s, %v; want %s", b, err, tt.json)
		}
		var back ThresholdResult
		if err := json.Unmarshal(b, &back); err != nil || back != tt.in {
			t.Errorf("read back %+v, %v; want %+v", back, err, tt.in)
		}
	}
	var old ThresholdResult
	if err := json.Unmarshal([]byte(`{"threshold":"p99<2s","measured":0,"unit":"ms (no request was answered)","pass":false}`), &old); err != nil || old.Measured != 0 {
		t.Errorf("an older result: got %+v, %v", old, err)
	}
}

// TestMergeCensored merges two shards of one run: one whose sink saw all
// its events, one whose sink saw none. Alone, the first passes e2e.p50;
// merged, more than half the accepted events are pending and the p50 is
// among them, for the run and for each step.
func TestMergeCensored(t *testing.T) {
	a := recorded(t, "stepped")
	b := recorded(t, "stepped")
	st := &b.E2E.Stages[0]
	st.Received, st.Unique, st.Latency, st.Histogram, st.Intervals = 0, 0, Latency{}, "", nil
	st.SetUnseen(b.E2E.Accepted, b.E2E.Accepted, false)
	for i := range b.Steps {
		b.Steps[i].E2E[0] = StepE2E{Stage: "queued"}
		b.Steps[i].SetRates()
	}
	if r := judged(t, a, "e2e.p50<1s"); !r[0].Pass {
		t.Fatalf("shard alone: %+v, want a pass", r[0])
	}
	m, err := Merge([]*Summary{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.E2E.Stages[0]; got.Unique != 25 || got.Pending != 35 {
		t.Fatalf("merged stage: %d seen, %d pending; want 25, 35", got.Unique, got.Pending)
	}
	r := judged(t, m, "e2e.p50<1s")[0]
	if r.Pass || r.Note != "slower than any bound: 35 of 60 events pending" {
		t.Errorf("merged: got %+v, want a failure among the 35 pending", r)
	}
	for _, r := range judged(t, m, "each step: e2e.p90<1s") {
		if r.Pass || !strings.HasPrefix(r.Note, "slower than any bound") {
			t.Errorf("merged %s: got %+v, want a failure among the pending", r.Name(), r)
		}
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, m); err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &suite); err != nil {
		t.Fatal(err)
	}
	if len(suite.Cases) != 3 || suite.Cases[2].Name != "each step: e2e.p90<1s (step 3)" || suite.Cases[2].Failure == nil ||
		suite.Cases[2].Failure.Message != "slower than any bound: 15 of 20 events pending" {
		t.Errorf("JUnit: got %+v", suite.Cases)
	}
}
