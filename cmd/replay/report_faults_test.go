package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
)

// pairsFile writes n GETs, each an iteration of its own (no session).
func pairsFile(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"http":{"req":{"method":"GET","uri":"/items/%d","host":"recorded:80"},"res":{"statusCode":200}}}`+"\n", i)
	}
	path := filepath.Join(t.TempDir(), "pairs.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNothingListeningCannotPass: against a port where nothing listens,
// every request is refused at connect. Refusals are not fast requests:
// nothing was answered, so the rate is 0 and a latency threshold fails.
func TestNothingListeningCannotPass(t *testing.T) {
	t.Parallel()
	target := "http://" + freeAddr(t) // free: nothing listens there
	out := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, context.Background(), "", "run", "-f", pairsFile(t, 300), "--target", target, "--vus", "2",
		"--threshold", "rps>1000", "--threshold", "p99<5ms", "--out", out)
	if r.code != 99 || !strings.Contains(r.stdout, "FAIL  rps>1000") || !strings.Contains(r.stdout, "FAIL  p99<5ms") {
		t.Fatalf("exit %d, want 99 with both thresholds failed:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "NO REQUEST WAS ANSWERED") {
		t.Errorf("the text report does not say that nothing was answered:\n%s", r.stdout)
	}
	s := readSummary(t, out)
	if num(s, "requests") != 300 || num(s, "answered") != 0 || s["rps"] != 0.0 || num(s["errors"].(map[string]any), "connect") != 300 {
		t.Errorf("requests %v, answered %v, rps %v, errors %v; want 300, 0, 0, connect:300", s["requests"], s["answered"], s["rps"], s["errors"])
	}
	for _, th := range s["thresholds"].([]any) {
		if th.(map[string]any)["pass"] != false {
			t.Errorf("threshold %v passed", th)
		}
	}
}

// TestHungSUTRateIsOverWallTime: a SUT answers 200 requests, then hangs.
// The run waits for the hung requests to time out, and the rate is over
// that wall time, not over the few milliseconds it took to issue them.
func TestHungSUTRateIsOverWallTime(t *testing.T) {
	const answered = 200
	srv := loopback.NewRaw(t, func(n int64, _ []byte) loopback.Action {
		if n <= answered {
			return loopback.Action{Status: 200, Body: "ok"}
		}
		return loopback.Action{Stall: time.Hour} // ended by the server's Close
	})
	out := filepath.Join(t.TempDir(), "summary.json")
	start := time.Now()
	r := runMain(t, context.Background(), "", "run", "-f", pairsFile(t, answered+2), "--target", srv.URL(), "--vus", "2",
		"--timeout", "500ms", "--threshold", "rps>1000", "--out", out)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the run took %v", took)
	}
	if r.code != 99 || !strings.Contains(r.stdout, "FAIL  rps>1000") {
		t.Fatalf("exit %d, want 99 (rps>1000 cannot hold over the wall time):\n%s%s", r.code, r.stdout, r.stderr)
	}
	s := readSummary(t, out)
	wall, rps := s["wall_s"].(float64), s["rps"].(float64)
	if num(s, "answered") != answered || num(s["errors"].(map[string]any), "timeout") != 2 {
		t.Errorf("answered %v, errors %v; want %d, timeout:2", s["answered"], s["errors"], answered)
	}
	if wall < 0.5 || math.Abs(rps*wall-answered) > 0.01 || rps >= answered/0.5 {
		t.Errorf("wall_s %v, rps %v: want the wall time to include the 500ms timeout, and rps = %d / wall_s", wall, rps, answered)
	}
	// The timeouts stay on the timeline.
	var timeouts int64
	for _, iv := range s["intervals"].([]any) {
		if f, ok := iv.(map[string]any)["failed"].(map[string]any); ok {
			timeouts += num(f, "timeout")
		}
	}
	if timeouts != 2 {
		t.Errorf("intervals hold %d timeouts, want 2", timeouts)
	}
}

// TestMergeWithSinkKeepsTheRate: a standalone sink started before a run
// and stopped after it (replay sink --out) merges with the run's summary
// without stretching its duration or rate or changing its model.
func TestMergeWithSinkKeepsTheRate(t *testing.T) {
	srv := newSUT(t, 0, 200)
	dir := t.TempDir()
	sinkOut, runOut, merged := filepath.Join(dir, "sink.json"), filepath.Join(dir, "run.json"), filepath.Join(dir, "merged.json")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var out, errb strings.Builder
		done <- Main(ctx, []string{"sink", "--sink-http", freeAddr(t), "--out", sinkOut}, strings.NewReader(""), &out, &errb)
	}()
	time.Sleep(300 * time.Millisecond) // the sink runs before the run
	r := runMain(t, context.Background(), "", "run", "-f", pairsFile(t, 300), "--target", srv.URL, "--vus", "2", "--out", runOut, "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	time.Sleep(300 * time.Millisecond) // and after it
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("sink: exit %d", code)
	}
	if r := runMain(t, context.Background(), "", "report", "merge", runOut, sinkOut, "-o", merged, "-q"); r.code != 0 {
		t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
	}
	run, m := readSummary(t, runOut), readSummary(t, merged)
	near := func(k string) bool { // the same up to the nanosecond rounding of a merge
		a, b := m[k].(float64), run[k].(float64)
		return math.Abs(a-b) <= 1e-6*math.Max(math.Abs(b), 1)
	}
	if m["model"] != run["model"] || !near("rps") || !near("throughput") || !near("duration_s") {
		t.Errorf("merged with the sink: model %v, rps %v, throughput %v, duration_s %v; want the run's %v, %v, %v, %v",
			m["model"], m["rps"], m["throughput"], m["duration_s"], run["model"], run["rps"], run["throughput"], run["duration_s"])
	}
}
