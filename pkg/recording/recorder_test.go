package recording

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
)

// t0 is the start of every test run.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// at returns a Result for endpoint ep due at t0+due, written at
// t0+due+wait and answered lat after it was due, with status 200.
func at(ep uint16, due, wait, lat time.Duration) result.Result {
	d := t0.Add(due).UnixNano()
	return result.Result{
		Due: d, Sent: d + int64(wait), End: d + int64(lat),
		BytesOut: 100, BytesIn: 10,
		Status: 200, Endpoint: ep, Written: true,
	}
}

func with(r result.Result, f func(*result.Result)) result.Result {
	f(&r)
	return r
}

func status(code uint16) func(*result.Result) { return func(r *result.Result) { r.Status = code } }

func failure(k result.ErrorKind, written bool) func(*result.Result) {
	return func(r *result.Result) { r.Status, r.Err, r.Written = 0, k, written }
}

var testEndpoints = []string{"POST /events", "GET /users/{id}", "DELETE /users/{id}"}

// fixture is a known mix of results: several endpoints, statuses 200, 202,
// 404 and 500, every error kind, reconnects, a downgrade, unsent requests
// and endpoints outside the table.
func fixture() []result.Result {
	var rs []result.Result
	ms := time.Millisecond
	for i := range 100 { // 202s on endpoint 0: latency 1..100 ms, service = latency − 1ms
		rs = append(rs, with(at(0, time.Duration(i)*10*ms, ms, time.Duration(i+1)*ms), status(202)))
	}
	rs[0].Connected = true
	for i := range 20 { // 200s on endpoint 1: 5 ms
		rs = append(rs, at(1, time.Duration(i)*10*ms, 0, 5*ms))
	}
	for range 5 { // 404s on endpoint 1
		rs = append(rs, with(at(1, 500*ms, 0, 2*ms), status(404)))
	}
	for range 3 { // 500s on endpoint 0, with a reconnect each
		rs = append(rs, with(at(0, 600*ms, 0, 3*ms), func(r *result.Result) {
			r.Status, r.Reconnect, r.Connected = 500, true, true
		}))
	}
	for k := result.ErrConnect; k <= result.ErrOther; k++ { // every error kind on endpoint 2
		written := k != result.ErrConnect && k != result.ErrCancelled
		rs = append(rs, with(at(2, 700*ms, 0, 50*ms), failure(k, written)))
	}
	rs = append(rs, with(at(2, 700*ms, 0, 50*ms), failure(result.ErrTimeout, false))) // unsent timeout
	for range 2 {                                                                     // out of the table
		rs = append(rs, at(7, 800*ms, 0, 4*ms))
	}
	rs = append(rs, with(at(65535, 990*ms, 0, 10*ms), func(r *result.Result) { r.Downgraded = true }))
	return rs
}

func record(endpoints []string, rs []result.Result) *Recorder {
	r := NewRecorder(endpoints)
	for _, res := range rs {
		r.Record(res)
	}
	r.Close()
	return r
}

func TestRecorderCounts(t *testing.T) {
	s := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}, Model: "closed"})
	tests := []struct {
		name      string
		got, want int64
	}{
		{"requests", s.Requests, 100 + 20 + 5 + 3 + 7 + 1 + 2 + 1},
		{"succeeded", s.Succeeded, 100 + 20 + 2 + 1},
		{"failed", s.Failed, 5 + 3 + 7 + 1},
		{"bytes_in", s.BytesIn, 139 * 10},
		{"bytes_out", s.BytesOut, 139 * 100},
		{"reconnects", s.Reconnects, 3},
		{"connections", s.Connections, 4},
		{"downgraded", s.Downgraded, 1},
		{"unsent", s.Unsent, 2}, // cancelled before a byte, and the unsent timeout; not connect
		{"clamped", s.Clamped, 0},
		{"status 202", s.Status["202"], 100},
		{"status 200", s.Status["200"], 23},
		{"status 404", s.Status["404"], 5},
		{"status 500", s.Status["500"], 3},
		{"statuses", int64(len(s.Status)), 4},
		{"errors connect", s.Errors["connect"], 1},
		{"errors timeout", s.Errors["timeout"], 2},
		{"errors reset", s.Errors["reset"], 1},
		{"errors eof", s.Errors["eof"], 1},
		{"errors tls", s.Errors["tls"], 1},
		{"errors cancelled", s.Errors["cancelled"], 1},
		{"errors other", s.Errors["other"], 1},
		{"error kinds", int64(len(s.Errors)), 7},
		{"endpoints", int64(len(s.Endpoints)), 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %d, want %d", tt.got, tt.want)
			}
		})
	}
	checkInvariants(t, s)
}

// checkInvariants checks what docs/design.md's Counting promises of every
// summary.
func checkInvariants(t *testing.T, s *report.Summary) {
	t.Helper()
	t.Run("requests = succeeded + failed", func(t *testing.T) {
		if s.Requests != s.Succeeded+s.Failed {
			t.Errorf("got %d + %d, want %d", s.Succeeded, s.Failed, s.Requests)
		}
	})
	t.Run("statuses + errors = requests", func(t *testing.T) {
		if got := sum(s.Status) + sum(s.Errors); got != s.Requests {
			t.Errorf("got %d, want %d", got, s.Requests)
		}
	})
	t.Run("endpoints sum to totals", func(t *testing.T) {
		var req, ok, failed int64
		status, errs := map[string]int64{}, map[string]int64{}
		for _, e := range s.Endpoints {
			if e.Requests != e.Succeeded+e.Failed || e.Requests != sum(e.Status)+sum(e.Errors) {
				t.Errorf("%s: %d requests, %d succeeded, %d failed, %d statuses, %d errors",
					e.Name, e.Requests, e.Succeeded, e.Failed, sum(e.Status), sum(e.Errors))
			}
			req, ok, failed = req+e.Requests, ok+e.Succeeded, failed+e.Failed
			for k, n := range e.Status {
				status[k] += n
			}
			for k, n := range e.Errors {
				errs[k] += n
			}
		}
		if req != s.Requests || ok != s.Succeeded || failed != s.Failed {
			t.Errorf("got %d/%d/%d, want %d/%d/%d", req, ok, failed, s.Requests, s.Succeeded, s.Failed)
		}
		for k, n := range s.Status {
			if status[k] != n {
				t.Errorf("status %s: got %d, want %d", k, status[k], n)
			}
		}
		for k, n := range s.Errors {
			if errs[k] != n {
				t.Errorf("errors %s: got %d, want %d", k, errs[k], n)
			}
		}
	})
	t.Run("histograms hold every answered request", func(t *testing.T) {
		if s.Answered != s.Requests-sum(s.Errors) || s.Answered != sum(s.Status) {
			t.Errorf("answered: got %d, want requests %d − errors %d = the status counts %d", s.Answered, s.Requests, sum(s.Errors), sum(s.Status))
		}
		for name, enc := range map[string]string{"histogram": s.Histogram, "service_histogram": s.ServiceHistogram} {
			h, err := report.DecodeHistogram(enc)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if h.TotalCount() != s.Answered {
				t.Errorf("%s: got %d values, want %d (the answered requests)", name, h.TotalCount(), s.Answered)
			}
		}
		for _, e := range s.Endpoints {
			h, err := report.DecodeHistogram(e.Histogram)
			if err != nil || h.TotalCount() != e.Answered || e.Answered != sum(e.Status) {
				t.Errorf("endpoint %s: histogram %v, %d values; answered %d, status counts %d", e.Name, err, h.TotalCount(), e.Answered, sum(e.Status))
			}
		}
	})
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func TestRecorderEndpoints(t *testing.T) {
	tests := []struct {
		name      string
		table     []string
		wantNames []string
	}{
		{"table without other", testEndpoints, []string{"POST /events", "GET /users/{id}", "DELETE /users/{id}", "other"}},
		{"table ending in other", append(testEndpoints[:2:2], "other"), []string{"POST /events", "GET /users/{id}", "other"}},
		{"no table", nil, []string{"other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := record(tt.table, fixture()).Summary(Meta{Run: result.Counters{Started: t0}})
			var names []string
			for _, e := range s.Endpoints {
				names = append(names, e.Name)
			}
			if !equal(names, tt.wantNames) {
				t.Errorf("got %q, want %q", names, tt.wantNames)
			}
			checkInvariants(t, s)
		})
	}

	s := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}})
	other := s.Endpoints[len(s.Endpoints)-1]
	if other.Name != "other" || other.Requests != 3 || other.Status["200"] != 3 {
		t.Errorf("other: got %s with %d requests, status %v; want other, 3, 200:3", other.Name, other.Requests, other.Status)
	}
	del := s.Endpoints[2]
	if del.Requests != 8 || del.Failed != 8 || len(del.Errors) != 7 || del.Errors["timeout"] != 2 {
		t.Errorf("%s: got %d requests, %d failed, errors %v; want 8, 8, 7 kinds", del.Name, del.Requests, del.Failed, del.Errors)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// within reports whether got is want within HDR's 3 significant digits
// (0.1%) plus the 1 µs unit.
func within(got, want float64) bool {
	return math.Abs(got-want) <= want/1000+0.001
}

func TestRecorderPercentiles(t *testing.T) {
	// Latencies 1..1000 ms, service times 0.5 ms less.
	var rs []result.Result
	for i := 1; i <= 1000; i++ {
		lat := time.Duration(i) * time.Millisecond
		rs = append(rs, at(0, time.Duration(i)*time.Millisecond, 500*time.Microsecond, lat))
	}
	rs = append(rs, with(at(0, 0, 0, 2*time.Hour), status(503))) // clamped to an hour
	s := record(testEndpoints, rs).Summary(Meta{Run: result.Counters{Started: t0}})

	// With 1001 values the rank of pN is round(N/100 × 1001).
	hour := float64(time.Hour / time.Millisecond)
	tests := []struct {
		name      string
		got, want float64
	}{
		{"min", s.Latency.Min, 1},
		{"mean", s.Latency.Mean, (500.5*1000 + hour) / 1001},
		{"p50", s.Latency.P50, 501},
		{"p90", s.Latency.P90, 901},
		{"p95", s.Latency.P95, 951},
		{"p99", s.Latency.P99, 991},
		{"p999", s.Latency.P999, 1000},
		{"max", s.Latency.Max, hour},
		{"service min", s.Service.Min, 0.5},
		{"service p50", s.Service.P50, 500.5},
		{"endpoint p90", s.Endpoints[0].Latency.P90, 901},
		{"status 200 max", s.StatusLatency["200"].Max, 1000},
		{"status 503 min", s.StatusLatency["503"].Min, hour},
		{"clamped", float64(s.Clamped), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !within(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestSummaryRates(t *testing.T) {
	ms := time.Millisecond
	rate := 100.0
	var spread []result.Result
	for i := range 100 {
		spread = append(spread, at(0, time.Duration(i)*10*ms, 0, 5*ms))
	}
	spread[99] = with(spread[99], status(500))
	tests := []struct {
		name              string
		results           []result.Result
		meta              Meta
		wantStarted       time.Time
		wantDur, wantWait float64
		wantRPS, wantTput float64
	}{
		{
			name: "spread", results: spread, meta: Meta{Run: result.Counters{Started: t0}, TargetRate: &rate},
			wantStarted: t0, wantDur: 0.99, wantWait: 0.005,
			wantRPS: 100 / 0.995, wantTput: 99 / 0.995,
		},
		{
			name: "one request", results: []result.Result{at(0, 0, 0, 2*ms)}, meta: Meta{Run: result.Counters{Started: t0}},
			wantStarted: t0, wantDur: 0.002, wantWait: 0, wantRPS: 500, wantTput: 500,
		},
		{
			name: "zero start is the first due time", results: spread[10:], meta: Meta{},
			wantStarted: t0.Add(100 * ms), wantDur: 0.89, wantWait: 0.005,
			wantRPS: 90 / 0.895, wantTput: 89 / 0.895,
		},
		{
			name: "no requests", meta: Meta{Run: result.Counters{Started: t0}},
			wantStarted: t0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := record(testEndpoints, tt.results).Summary(tt.meta)
			if !s.Started.Equal(tt.wantStarted) || s.Started.Location() != time.UTC {
				t.Errorf("started: got %v, want %v", s.Started, tt.wantStarted)
			}
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"duration_s", s.DurationS, tt.wantDur},
				{"wait_s", s.WaitS, tt.wantWait},
				{"wall_s", s.WallS, tt.wantDur + tt.wantWait},
				{"rps", s.RPS, tt.wantRPS},
				{"throughput", s.Throughput, tt.wantTput},
			} {
				if math.Abs(c.got-c.want) > 1e-9 {
					t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
				}
			}
			if s.TargetRate != tt.meta.TargetRate {
				t.Errorf("target_rate: got %v, want %v", s.TargetRate, tt.meta.TargetRate)
			}
		})
	}
}

func TestRecorderConcurrent(t *testing.T) {
	const (
		goroutines = 16
		each       = 5000
	)
	r := NewRecorder(testEndpoints)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				res := at(uint16(i%4), time.Duration(i)*time.Microsecond, 0, time.Duration(g+1)*time.Millisecond)
				if i%10 == 0 {
					res = with(res, failure(result.ErrTimeout, true))
				}
				r.Record(res)
			}
		})
	}
	wg.Wait()
	r.Close()
	r.Close() // a second Close does nothing
	s := r.Summary(Meta{Run: result.Counters{Started: t0}})

	const total = goroutines * each
	if s.Requests != total || s.Failed != total/10 || s.Errors["timeout"] != total/10 || s.Status["200"] != total*9/10 {
		t.Errorf("got %d requests, %d failed, %d timeouts, %d 200s; want %d, %d, %d, %d",
			s.Requests, s.Failed, s.Errors["timeout"], s.Status["200"], total, total/10, total/10, total*9/10)
	}
	for _, e := range s.Endpoints {
		if e.Requests != total/4 {
			t.Errorf("%s: got %d requests, want %d", e.Name, e.Requests, total/4)
		}
	}
	checkInvariants(t, s)
}

func TestSummaryWithoutClose(t *testing.T) {
	r := NewRecorder(nil)
	r.Record(at(0, 0, 0, time.Millisecond))
	if s := r.Summary(Meta{Run: result.Counters{Started: t0}}); s.Requests != 1 {
		t.Errorf("got %d requests, want 1", s.Requests)
	}
	r.Close() // after Summary: does nothing
}
