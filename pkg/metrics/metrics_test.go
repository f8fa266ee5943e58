package metrics

import (
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/result"
)

// fixed is a view whose counters are l at every look.
func fixed(l recording.Live) recording.LiveView {
	return recording.LiveView{Now: func() recording.Live { return l }}
}

// withRecorder is a view whose counters are rec's, with the engine's
// part set as engine says.
func withRecorder(rec *recording.Recorder, engine func(*recording.Live)) recording.LiveView {
	return recording.LiveView{Buckets: rec.LiveBuckets, Now: func() recording.Live {
		l := rec.Live()
		engine(&l)
		return l
	}}
}

// scrape gets /metrics from s and parses it with Prometheus's own parser,
// which refuses a sample whose family is typed otherwise, a histogram
// without its +Inf bucket, and malformed lines.
func scrape(t *testing.T, s *Server) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	res, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	return fams, string(body)
}

// value is the value of the sample of family name whose labels include
// the pairs given.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	t.Fatalf("no sample %s%v", name, labels)
	return 0
}

// TestMetricsExposition: every family has its HELP and TYPE, the
// counters and gauges say what the sources say, the histogram's buckets
// come from a real recorder and agree with its percentiles, and today's
// quantiles stay, typed as a summary.
func TestMetricsExposition(t *testing.T) {
	rec := recording.NewRecorder([]string{"POST /events"})
	for i := 1; i <= 1000; i++ { // 1 ms .. 1 s, one each
		rec.Record(result.Result{Due: 0, Sent: 0, End: int64(i) * 1e6, Status: 202})
	}
	rec.Record(result.Result{End: 5e9, Err: result.ErrTimeout})
	rec.Close()
	s, err := Listen("127.0.0.1:0", withRecorder(rec, func(l *recording.Live) {
		l.VUs, l.InFlight = 4, 2
		l.Dropped, l.Late = 7, 3
		l.HasTarget, l.Step, l.Target = true, 2, 400
		l.Events = []e2e.StageCount{{Name: "queued", Unique: 90, Duplicates: 1}, {Name: `we"ird`, Unique: 5}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fams, body := scrape(t, s)
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP text", name)
		}
		if !strings.Contains(body, "# TYPE "+name+" ") {
			t.Errorf("%s has no TYPE line", name)
		}
	}
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"replay_requests_total", nil, 1001}, {"replay_failed_total", nil, 1}, {"replay_errors_total", []string{"kind", "timeout"}, 1},
		{"replay_responses_total", []string{"class", "2xx"}, 1000}, {"replay_dropped_total", nil, 7}, {"replay_late_total", nil, 3},
		{"replay_e2e_events_total", []string{"stage", "queued"}, 90}, {"replay_e2e_events_total", []string{"stage", `we"ird`}, 5},
		{"replay_e2e_duplicates_total", []string{"stage", "queued"}, 1},
		{"replay_vus", nil, 4}, {"replay_in_flight", nil, 2}, {"replay_step", nil, 2}, {"replay_target_rate", nil, 400},
	} {
		if got := value(t, fams, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	for name, typ := range map[string]dto.MetricType{"replay_requests_total": dto.MetricType_COUNTER, "replay_vus": dto.MetricType_GAUGE,
		"replay_request_duration_seconds": dto.MetricType_HISTOGRAM, "replay_latency_seconds": dto.MetricType_SUMMARY} {
		if got := fams[name].GetType(); got != typ {
			t.Errorf("%s typed %v, want %v", name, got, typ)
		}
	}
	h := fams["replay_request_duration_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 1000 || math.Abs(h.GetSampleSum()-500.5) > 0.5 {
		t.Errorf("histogram count %d sum %v, want 1000 answered summing 500.5 s", h.GetSampleCount(), h.GetSampleSum())
	}
	prev := uint64(0)
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() < prev {
			t.Errorf("bucket le=%v: %d below the previous %d", b.GetUpperBound(), b.GetCumulativeCount(), prev)
		}
		prev = b.GetCumulativeCount()
		// One request a millisecond: le=B holds about B×1000 of them
		// (HDR precision, 3 digits), all 1000 from 1 s up.
		want := math.Min(b.GetUpperBound()*1000, 1000)
		if math.Abs(float64(b.GetCumulativeCount())-math.Floor(want)) > math.Max(1, want/1000) {
			t.Errorf("bucket le=%v: %d requests, want %v", b.GetUpperBound(), b.GetCumulativeCount(), math.Floor(want))
		}
	}
	sum := fams["replay_latency_seconds"].GetMetric()[0].GetSummary()
	for _, q := range sum.GetQuantile() {
		if q.GetQuantile() == 0.99 && math.Abs(q.GetValue()-0.99) > 0.001 {
			t.Errorf("p99 %v s, want 0.99", q.GetValue())
		}
	}
	if sum.GetSampleCount() != 1000 {
		t.Errorf("summary count %d, want the 1000 answered", sum.GetSampleCount())
	}
	if _, err := Listen("127.0.0.1:notaport", recording.LiveView{}); err == nil {
		t.Error("a bad address listened")
	}
}

// TestMetricsSet: a server listened before any run serves nothing, then
// what Set gives it (a capacity search's runs, one after another).
func TestMetricsSet(t *testing.T) {
	s, err := Listen("127.0.0.1:0", recording.LiveView{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fams, _ := scrape(t, s); len(fams) != 0 {
		t.Errorf("before Set: %d families, want none", len(fams))
	}
	s.Set(fixed(recording.Live{Requests: 10, HasTarget: true, Step: 3, Target: 150}))
	fams, _ := scrape(t, s)
	if value(t, fams, "replay_requests_total") != 10 || value(t, fams, "replay_step") != 3 || value(t, fams, "replay_target_rate") != 150 {
		t.Errorf("after Set: %v", fams)
	}
	if _, ok := fams["replay_request_duration_seconds"]; ok {
		t.Error("a histogram without a source of buckets")
	}
	if _, ok := fams["replay_target_request_rate"]; ok {
		t.Error("a target in requests a second without the requests an iteration holds")
	}
	// With the requests an iteration holds, the target in requests a second too.
	s.Set(fixed(recording.Live{Requests: 10, HasTarget: true, Step: 3, Target: 150, PerIteration: 6}))
	fams, _ = scrape(t, s)
	if got := value(t, fams, "replay_target_request_rate"); got != 900 {
		t.Errorf("replay_target_request_rate %v, want 900 (150 iterations/s × 6)", got)
	}
}
