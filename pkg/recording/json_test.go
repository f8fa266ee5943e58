package recording

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/golden"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
)

// summaryKeys are the top-level keys of the summary JSON: docs/design.md's,
// then those this package adds.
var summaryKeys = []string{
	"version", "started", "duration_s", "model", "target_rate",
	"requests", "succeeded", "failed", "answered", "rps", "throughput", "wall_s",
	"dropped", "late", "reconnects", "vus_max", "bytes_in", "bytes_out",
	"latency_ms", "service_ms", "status", "errors", "endpoints",
	"histogram", "service_histogram",
	"wait_s", "connections", "downgraded", "unsent", "clamped", "status_latency_ms",
	"iterations", "iteration_rate", "request_rate", "redirects",
	"connections_by_protocol", "upgraded", "retried",
}

var latencyKeys = []string{"min", "mean", "p50", "p90", "p95", "p99", "p999", "max"}

var endpointKeys = []string{"name", "requests", "succeeded", "failed", "answered", "latency_ms", "status", "errors", "histogram"}

func decodeJSON(t *testing.T, s *report.Summary) (map[string]any, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, s); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("unmarshal: %v\n%s", err, buf.Bytes())
	}
	return m, buf.String()
}

func checkKeys(t *testing.T, what string, v any, want []string) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: got %T, want an object", what, v)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s keys: got %q, want %q", what, got, want)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rate := 400.0
	tests := []struct {
		name  string
		meta  Meta
		extra []string // keys beyond summaryKeys
		want  func(t *testing.T, m map[string]any)
	}{
		{"closed", Meta{Run: result.Counters{Started: t0, VUs: 4}, Model: "closed"}, []string{"intervals"}, func(t *testing.T, m map[string]any) {
			if v, ok := m["target_rate"]; !ok || v != nil {
				t.Errorf("target_rate: got %v, want null", v)
			}
		}},
		{"rate", Meta{Run: result.Counters{Started: t0, Dropped: 3, Late: 2, Scheduled: 103, Iterations: 100, LagMax: 1500 * time.Microsecond}, Model: "rate", TargetRate: &rate,
			Unit: schedule.Requests, PerIteration: 2}, []string{"schedule", "intervals", "rate_unit", "target_request_rate", "requests_per_iteration"}, func(t *testing.T, m map[string]any) {
			if m["target_rate"] != 400.0 || m["dropped"] != 3.0 || m["late"] != 2.0 || m["iterations"] != 100.0 {
				t.Errorf("got target_rate %v, dropped %v, late %v, iterations %v; want 400, 3, 2, 100", m["target_rate"], m["dropped"], m["late"], m["iterations"])
			}
			if m["rate_unit"] != "requests" || m["target_request_rate"] != 800.0 || m["requests_per_iteration"] != 2.0 {
				t.Errorf("got rate_unit %v, target_request_rate %v, requests_per_iteration %v; want requests, 800 (400 iterations of 2), 2",
					m["rate_unit"], m["target_request_rate"], m["requests_per_iteration"])
			}
			sc := m["schedule"].(map[string]any)
			if sc["scheduled"] != 103.0 || sc["lag_max_ms"] != 1.5 {
				t.Errorf("schedule: got %v", sc)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := record(testEndpoints, fixture()).Summary(tt.meta)
			m, _ := decodeJSON(t, s)
			checkKeys(t, "summary", m, append(slices.Clone(summaryKeys), tt.extra...))
			checkKeys(t, "latency_ms", m["latency_ms"], latencyKeys)
			checkKeys(t, "service_ms", m["service_ms"], latencyKeys)
			eps := m["endpoints"].([]any)
			if len(eps) != len(s.Endpoints) {
				t.Fatalf("endpoints: got %d, want %d", len(eps), len(s.Endpoints))
			}
			for _, e := range eps {
				checkKeys(t, "endpoint", e, endpointKeys)
				checkKeys(t, "endpoint latency_ms", e.(map[string]any)["latency_ms"], latencyKeys)
			}
			for code, l := range m["status_latency_ms"].(map[string]any) {
				checkKeys(t, "status_latency_ms "+code, l, latencyKeys)
			}
			if m["version"] != 2.0 || m["started"] != "2026-11-22T10:00:00Z" || m["requests"] != float64(s.Requests) {
				t.Errorf("got version %v, started %v, requests %v", m["version"], m["started"], m["requests"])
			}
			if m["status"].(map[string]any)["202"] != 100.0 || m["errors"].(map[string]any)["timeout"] != 2.0 {
				t.Errorf("got status %v, errors %v", m["status"], m["errors"])
			}
			tt.want(t, m)

			var back report.Summary
			_, text := decodeJSON(t, s)
			if err := json.Unmarshal([]byte(text), &back); err != nil {
				t.Fatalf("unmarshal into Summary: %v", err)
			}
			if back.Requests != s.Requests || back.Latency != s.Latency || !back.Started.Equal(s.Started) || len(back.Endpoints) != len(s.Endpoints) {
				t.Errorf("round trip: got %+v, want %+v", back, s)
			}

			for _, h := range []struct {
				name, enc string
				count     int64
			}{
				{"histogram", m["histogram"].(string), s.Answered},
				{"service_histogram", m["service_histogram"].(string), s.Answered},
				{"endpoint histogram", eps[0].(map[string]any)["histogram"].(string), s.Endpoints[0].Answered},
			} {
				if !strings.HasPrefix(h.enc, "HISTF") {
					t.Errorf("%s: got %.10q, want HISTF...", h.name, h.enc)
				}
				d, err := report.DecodeHistogram(h.enc)
				if err != nil {
					t.Fatalf("%s: %v", h.name, err)
				}
				if d.TotalCount() != h.count || d.LowestTrackableValue() != 1 || d.HighestTrackableValue() != 3_600_000_000 || d.SignificantFigures() != 3 {
					t.Errorf("%s: got %d values, geometry %d..%d/%d; want %d, 1..3600000000/3", h.name,
						d.TotalCount(), d.LowestTrackableValue(), d.HighestTrackableValue(), d.SignificantFigures(), h.count)
				}
			}
		})
	}
}

func TestJSONNoRequests(t *testing.T) {
	s := record(testEndpoints, nil).Summary(Meta{Run: result.Counters{Started: t0}, Model: "closed"})
	m, text := decodeJSON(t, s)
	if strings.Contains(text, "NaN") || strings.Contains(text, "Inf") {
		t.Errorf("got NaN or Inf:\n%s", text)
	}
	checkKeys(t, "summary", m, summaryKeys)
	for _, k := range []string{"requests", "answered", "duration_s", "wait_s", "wall_s", "rps", "throughput"} {
		if m[k] != 0.0 {
			t.Errorf("%s: got %v, want 0", k, m[k])
		}
	}
	for _, k := range latencyKeys {
		if v := m["latency_ms"].(map[string]any)[k]; v != 0.0 {
			t.Errorf("latency_ms.%s: got %v, want 0", k, v)
		}
	}
	for _, k := range []string{"status", "errors", "status_latency_ms"} {
		if v, ok := m[k].(map[string]any); !ok || len(v) != 0 {
			t.Errorf("%s: got %v, want {}", k, m[k])
		}
	}
	if v, ok := m["endpoints"].([]any); !ok || len(v) != 0 {
		t.Errorf("endpoints: got %v, want []", m["endpoints"])
	}
	h, err := report.DecodeHistogram(s.Histogram)
	if err != nil || h.TotalCount() != 0 {
		t.Errorf("histogram: got %v, %v; want an empty histogram", h, err)
	}
}

// TestJSONGolden pins the summary JSON of a fixed run: the contract users
// script against. go test ./pkg/recording -run TestJSONGolden -update rewrites it.
func TestJSONGolden(t *testing.T) {
	rate := 400.0
	s := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0, VUs: 4, Iterations: 130, Scheduled: 133, Dropped: 3, Late: 2, LagMean: 500 * time.Microsecond, LagP50: 400 * time.Microsecond, LagP99: 1500 * time.Microsecond, LagMax: 2 * time.Millisecond}, Model: "rate", TargetRate: &rate, LateAfter: 10 * time.Millisecond})
	th, _ := report.ParseThreshold("p99<5ms")
	report.Evaluate(s, []report.Threshold{th})
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary.golden.json", buf.Bytes())
}
