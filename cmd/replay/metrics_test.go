package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// freeAddr is a free loopback address ("127.0.0.1:PORT").
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrape returns the value of one metric line, or -1.
func scrape(t *testing.T, addr, metric string) float64 {
	return scrapeAll(t, addr, metric)[0]
}

// scrapeAll reads several metrics from one scrape, so that they describe
// one moment (-1 for each when the scrape fails or lacks it).
func scrapeAll(t *testing.T, addr string, metrics ...string) []float64 {
	vs := make([]float64, len(metrics))
	for i := range vs {
		vs[i] = -1
	}
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return vs
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for i, metric := range metrics {
		if m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(metric) + ` (\S+)$`).FindSubmatch(body); m != nil {
			vs[i], _ = strconv.ParseFloat(string(m[1]), 64)
		}
	}
	return vs
}

// TestMetricsDuringARun scrapes a run twice while it goes, then once after
// its summary is written: the counters grow and end at the report's.
func TestMetricsDuringARun(t *testing.T) {
	t.Parallel()
	srv := newSUT(t, 20*time.Millisecond, 202)
	addr := freeAddr(t)
	out := filepath.Join(t.TempDir(), "summary.json")
	done := make(chan runResult, 1)
	go func() {
		done <- runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 10), "--target", srv.URL,
			"--vus", "2", "--duration", "1500ms", "--metrics", addr, "--metrics-linger", "3s", "--out", out, "-q", "--log-level", "error")
	}()
	var seen []float64
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < 2 && time.Now().Before(deadline) {
		time.Sleep(400 * time.Millisecond)
		if v := scrape(t, addr, "replay_requests_total"); v > 0 {
			seen = append(seen, v)
		}
	}
	if len(seen) < 2 || seen[1] <= seen[0] {
		t.Fatalf("replay_requests_total during the run: %v, want it growing", seen)
	}
	if v := scrape(t, addr, "replay_vus"); v != 2 {
		t.Errorf("replay_vus: %v, want 2", v)
	}
	for time.Now().Before(deadline) { // the summary is written before the linger
		if data, err := os.ReadFile(out); err == nil && json.Valid(data) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := readSummary(t, out)
	if v := scrape(t, addr, "replay_requests_total"); v != float64(num(s, "requests")) {
		t.Errorf("replay_requests_total after the run: %v, the report says %v", v, s["requests"])
	}
	if v := scrape(t, addr, `replay_responses_total{class="2xx"}`); v != float64(num(s, "succeeded")) {
		t.Errorf("2xx responses: %v, the report says %v succeeded", v, s["succeeded"])
	}
	if v := scrape(t, addr, `replay_latency_seconds{quantile="0.99"}`); v < 0.015 {
		t.Errorf("latency p99: %v s, want about the SUT's 20ms", v)
	}
	if r := <-done; r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 1), "--target", srv.URL, "--metrics", "nope:xx"); r.code != 1 {
		t.Errorf("a bad --metrics address: exit %d", r.code)
	}
}

// TestMetricsOfARateRunWithEvents: a rate run's metrics carry its target
// rate and step, dropped and late counters, and the events its sink saw
// per end-to-end stage, which end at the report's.
func TestMetricsOfARateRunWithEvents(t *testing.T) {
	t.Parallel()
	sinkAddr, addr := freeAddr(t), freeAddr(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("ce-id")
		go func() { // the SUT's worker: the event reaches the sink after the answer
			req, _ := http.NewRequest("POST", "http://"+sinkAddr+"/stage/queued", nil)
			req.Header.Set("ce-id", id)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer api.Close()
	out := filepath.Join(t.TempDir(), "summary.json")
	done := make(chan runResult, 1)
	go func() {
		done <- runMain(t, context.Background(), "", "run", "-f", eventFile(t, 20), "--target", api.URL, "--rate", "50/s", "--stages", "50/s@1500ms",
			"--sink-http", sinkAddr, "--drain", "5s", "--metrics", addr, "--metrics-linger", "3s", "--out", out, "-q", "--log-level", "error")
	}()
	deadline := time.Now().Add(15 * time.Second)
	for scrape(t, addr, "replay_target_rate") < 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if rate, step := scrape(t, addr, "replay_target_rate"), scrape(t, addr, "replay_step"); rate != 50 || step != 1 {
		t.Errorf("target rate %v, step %v during the run; want 50, 1", rate, step)
	}
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(out); err == nil && json.Valid(data) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := readSummary(t, out)
	e2e, _ := s["e2e"].(map[string]any)
	stages, _ := e2e["stages"].([]any)
	if len(stages) != 1 {
		t.Fatalf("e2e stages %v, want queued", e2e)
	}
	unique := stages[0].(map[string]any)["unique"].(float64)
	if got := scrape(t, addr, `replay_e2e_events_total{stage="queued"}`); got != unique || unique < 50 {
		t.Errorf("replay_e2e_events_total{stage=queued} %v, the report says %v (want about 75)", got, unique)
	}
	if got := scrape(t, addr, "replay_dropped_total"); got != float64(num(s, "dropped")) {
		t.Errorf("replay_dropped_total %v, the report says %v", got, s["dropped"])
	}
	if got := scrape(t, addr, "replay_request_duration_seconds_count"); got != float64(num(s, "answered")) {
		t.Errorf("histogram count %v, the report says %v answered", got, s["answered"])
	}
	if r := <-done; r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}
