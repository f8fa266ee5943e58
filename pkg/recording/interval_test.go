package recording

import (
	"bytes"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
)

// atSecond is a result whose answer ends in second sec, after lat ms.
func atSecond(sec int64, lat int64, status uint16, err result.ErrorKind) result.Result {
	end := sec*1e9 + 500e6
	return result.Result{Due: end - lat*1e6, Sent: end - lat*1e6, End: end, Status: status, Err: err, Written: true}
}

func TestIntervals(t *testing.T) {
	base := t0.Unix()
	var rs []result.Result
	for i := 0; i < 10; i++ {
		rs = append(rs, atSecond(base, 1, 200, result.ErrNone))
	}
	for i := 0; i < 5; i++ {
		r := atSecond(base+1, 10, 503, result.ErrNone)
		r.VU = uint32(i * 40) // 5 VUs, across words of the bit set
		rs = append(rs, r)
	}
	rs = append(rs, atSecond(base+1, 1000, 0, result.ErrTimeout))
	for i := 0; i < 3; i++ {
		rs = append(rs, atSecond(base+4, 100, 202, result.ErrNone))
	}
	// Folded after second +4 closed seconds +0 and +1: too late for its
	// own second, it is counted in the second after the last closed one.
	rs = append(rs, atSecond(base, 2, 200, result.ErrNone))
	s := record(testEndpoints, rs).Summary(Meta{Run: result.Counters{Started: t0}})
	if len(s.Intervals) != 4 {
		t.Fatalf("got %d intervals: %+v", len(s.Intervals), s.Intervals)
	}
	want := []struct {
		t         int64
		requests  int64
		errors    int64
		class     string
		n         int64
		p99Within [2]float64
	}{
		{base, 10, 0, "2xx", 10, [2]float64{0.99, 1.01}},
		{base + 1, 6, 1, "5xx", 5, [2]float64{9.9, 10.1}},
		{base + 2, 1, 0, "2xx", 1, [2]float64{1.99, 2.01}},
		{base + 4, 3, 0, "2xx", 3, [2]float64{99, 101}},
	}
	for i, w := range want {
		iv := s.Intervals[i]
		if iv.T != w.t || iv.Requests != w.requests || iv.Errors != w.errors || iv.Status[w.class] != w.n {
			t.Errorf("interval %d: got %+v, want t %d, %d requests, %d errors, %s %d", i, iv, w.t, w.requests, w.errors, w.class, w.n)
		}
		if wantVUs := map[int]int{1: 5}[i]; (wantVUs == 0 && iv.VUs != 1) || (wantVUs != 0 && iv.VUs != wantVUs) {
			t.Errorf("interval %d: %d VUs", i, iv.VUs)
		}
		if iv.Latency.P99 < w.p99Within[0] || iv.Latency.P99 > w.p99Within[1] {
			t.Errorf("interval %d: p99 %v, want in %v", i, iv.Latency.P99, w.p99Within)
		}
		if h, err := report.DecodeHistogram(iv.Histogram); err != nil || h.TotalCount() != iv.Requests-iv.Errors {
			t.Errorf("interval %d: histogram %v, %d values", i, err, h.TotalCount())
		}
	}

	checkFailedTimeline(t, s)

	// Two halves merge into the same intervals.
	a := record(testEndpoints, rs[:8]).Summary(Meta{Run: result.Counters{Started: t0}})
	b := record(testEndpoints, rs[8:]).Summary(Meta{Run: result.Counters{Started: t0}})
	m, err := report.Merge([]*report.Summary{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, iv := range m.Intervals {
		total += iv.Requests
	}
	if m.Intervals[0].T != base || m.Intervals[0].Requests != 10 || total != int64(len(rs)) {
		t.Errorf("merged intervals: %+v", m.Intervals)
	}
	if fh, err := report.DecodeHistogram(m.Intervals[1].FailedHistogram); err != nil || m.Intervals[1].Failed["timeout"] != 1 || fh.TotalCount() != 1 {
		t.Errorf("merged interval 1: failed %v, histogram %v", m.Intervals[1].Failed, err)
	}

	checkHlog(t, s)
}

// checkFailedTimeline checks the one timeout of TestIntervals: it stays on
// the timeline beside the answers, counted by kind in its second (the
// second interval), with its time to failure.
func checkFailedTimeline(t *testing.T, s *report.Summary) {
	t.Helper()
	for i, iv := range s.Intervals {
		wantFailed := map[int]int64{1: 1}[i]
		if iv.Failed["timeout"] != wantFailed || (wantFailed == 0) != (iv.FailedHistogram == "") {
			t.Errorf("interval %d: failed %v, failed histogram %.10q; want timeout:%d", i, iv.Failed, iv.FailedHistogram, wantFailed)
		}
	}
}

// checkHlog checks the .hlog of TestIntervals: a latency histogram a
// second, and the timeout's time to failure tagged "failed".
func checkHlog(t *testing.T, s *report.Summary) {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WriteHlog(&buf, s); err != nil {
		t.Fatal(err)
	}
	r := hdrhistogram.NewHistogramLogReader(&buf)
	n, failedTagged := 0, 0
	for {
		h, err := r.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		n++
		if h.Tag() == "failed" {
			failedTagged++
			if h.TotalCount() != 1 || h.Max() < 999_000 {
				t.Errorf("failed histogram: %d values, max %d µs; want the one timeout after 1s", h.TotalCount(), h.Max())
			}
		}
	}
	if n != 5 || failedTagged != 1 {
		t.Errorf("the .hlog holds %d histograms, %d tagged failed; want 4 of latency and 1 of failures", n, failedTagged)
	}
}

// TestTimeoutsOnTheTimeline: a run whose requests time out in some
// seconds shows them there, in the JSON intervals by kind and in the
// .hlog as a histogram tagged "failed", while the per-second latency
// stays that of the answers.
func TestTimeoutsOnTheTimeline(t *testing.T) {
	base := t0.Unix()
	var rs []result.Result
	for sec := range int64(3) {
		for range 5 {
			rs = append(rs, atSecond(base+sec, 2, 200, result.ErrNone))
		}
	}
	for range 3 {
		rs = append(rs, atSecond(base+1, 500, 0, result.ErrTimeout))
	}
	rs = append(rs, atSecond(base+2, 0, 0, result.ErrConnect))
	s := record(testEndpoints, rs).Summary(Meta{Run: result.Counters{Started: t0}})
	m, _ := decodeJSON(t, s)
	ivs := m["intervals"].([]any)
	want := []map[string]float64{nil, {"timeout": 3}, {"connect": 1}}
	for i, w := range want {
		iv := ivs[i].(map[string]any)
		failed, _ := iv["failed"].(map[string]any)
		if len(failed) != len(w) {
			t.Errorf("interval %d: failed %v, want %v", i, iv["failed"], w)
		}
		for k, n := range w {
			if failed[k] != n {
				t.Errorf("interval %d: failed %v, want %v", i, iv["failed"], w)
			}
		}
		if p99 := iv["latency_ms"].(map[string]any)["p99"].(float64); p99 > 2.1 {
			t.Errorf("interval %d: latency p99 %v ms, want the answers' 2ms", i, p99)
		}
	}
	var buf bytes.Buffer
	if err := report.WriteHlog(&buf, s); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "Tag=failed,"); n != 2 {
		t.Errorf("the .hlog has %d histograms tagged failed, want 2:\n%s", n, buf.String())
	}
}
