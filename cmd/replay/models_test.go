package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/report"
)

func TestRateRunReportsItsSchedule(t *testing.T) {
	srv := newSUT(t, 0, 202)
	out := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 20), "--target", srv.URL,
		"--rate", "100/s", "--duration", "1s", "--out", out, "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	if s["model"] != "rate" || s["target_rate"] != 100.0 {
		t.Errorf("model %v, target_rate %v; want rate, 100", s["model"], s["target_rate"])
	}
	sched, _ := s["schedule"].(map[string]any)
	due, _ := sched["scheduled"].(float64)
	if due < 95 || due > 100 || num(s, "iterations") != int64(due)-num(s, "dropped") {
		t.Errorf("schedule %v, iterations %v, dropped %v; want about 100 due, all begun or dropped", sched, s["iterations"], s["dropped"])
	}
	for _, want := range []string{"rate, 100.00/s", "Schedule", "Service time"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestRecordedPacingRun(t *testing.T) {
	srv := newSUT(t, 0, 200)
	var b strings.Builder
	for i := 0; i < 5; i++ {
		ts := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * 100 * time.Millisecond)
		fmt.Fprintf(&b, `{"ts":%q,"http":{"req":{"method":"GET","uri":"/r/%d","host":"x"}}}`+"\n", ts.Format(time.RFC3339Nano), i)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(path, []byte(b.String()), 0o644)
	out := filepath.Join(t.TempDir(), "summary.json")
	start := time.Now()
	r := runMain(t, context.Background(), "", "run", "-f", path, "--target", srv.URL, "--pace", "recorded", "--speed", "2", "--out", out, "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 3*time.Second {
		t.Errorf("400ms of recording at speed 2 took %v, want about 200ms", took)
	}
	if s := readSummary(t, out); s["model"] != "recorded" || num(s, "requests") != 5 {
		t.Errorf("got model %v, requests %v", s["model"], s["requests"])
	}
}

func TestLoadFlagsRejectedBeforeTraffic(t *testing.T) {
	srv := newSUT(t, 0, 200)
	good := trafficFile(t, 3)
	noTS := trafficFile(t, 2)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"bad rate", []string{"--rate", "fast"}, "--rate: want a rate such as 2000/s"},
		{"bad stage", []string{"--rate", "10/s", "--stages", "10s:100/s,oops"}, `--stages: stage 2 "oops"`},
		{"bad VU stage", []string{"--stages", "10s:x"}, "--stages: stage 1"},
		{"rate and pace", []string{"--rate", "10/s", "--pace", "recorded"}, "not both"},
		{"bad pace", []string{"--pace", "fast"}, "--pace: want recorded"},
		{"bad think", []string{"--think", "long"}, "--think"},
		{"think with rate", []string{"--rate", "5/s", "--think", "recorded"}, "--think"},
		{"precise pacing closed", []string{"--precise-pacing"}, "--precise-pacing"},
		{"max-vus below vus", []string{"--rate", "5/s", "--vus", "10", "--max-vus", "2"}, "--max-vus"},
		{"max-vus closed", []string{"--max-vus", "2"}, "--max-vus"},
		{"zero speed", []string{"--pace", "recorded", "--speed", "0"}, "--speed"},
		{"pace without ts", []string{"--pace", "recorded", "-f", noTS}, "no ts to pace by"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "-f", good, "--target", srv.URL}, tt.args...)
			r := runMain(t, context.Background(), "", args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tt.want)
			}
			if n := srv.count.Load(); n != 0 {
				t.Fatalf("the SUT received %d requests", n)
			}
		})
	}
}

// TestStagesWalkTheFileInALoop: stages say how long the run lasts, so a
// short file is walked round and round for them.
func TestStagesWalkTheFileInALoop(t *testing.T) {
	srv := newSUT(t, 0, 200)
	out := filepath.Join(t.TempDir(), "summary.json")
	start := time.Now()
	r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 3), "--target", srv.URL,
		"--rate", "0/s", "--stages", "200/s@500ms", "--out", out, "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if took := time.Since(start); took < 450*time.Millisecond || took > 3*time.Second {
		t.Errorf("a 500ms stage took %v", took)
	}
	if s := readSummary(t, out); num(s, "iterations") != 100 {
		t.Errorf("iterations: got %v, want 100 (200/s for 500ms over a 3-iteration file)", s["iterations"])
	}
}

func TestThresholdsExitCode(t *testing.T) {
	srv := newSUT(t, 0, 200)
	file := trafficFile(t, 10)
	for _, tt := range []struct {
		name  string
		exprs []string
		code  int
		want  string
	}{
		{"pass", []string{"p99<5s", "errors<1%", "POST /events/{id}: p95<5s"}, 0, "pass  p99<5s"},
		{"fail", []string{"p99<5s", "rps>1000000"}, 99, "FAIL  rps>1000000"},
		{"status", []string{"status.200>99%", "POST /events/{id}: status.2xx>99%", "status.5xx<0.1%"}, 0, "pass  status.200>99%"},
		{"status fails", []string{"status.202>99%"}, 99, "FAIL  status.202>99%"},
		{"bad status", []string{"status.20x>99%"}, 1, "status.20x: want an HTTP status"},
		{"bad syntax", []string{"p99 is low"}, 1, "--threshold"},
		{"unknown endpoint", []string{"GET /nope: p99<1s"}, 1, `no endpoint "GET /nope"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.count.Load()
			junit := filepath.Join(t.TempDir(), "junit.xml")
			args := []string{"run", "-f", file, "--target", srv.URL, "--junit", junit}
			for _, e := range tt.exprs {
				args = append(args, "--threshold", e)
			}
			r := runMain(t, context.Background(), "", args...)
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
			sent := srv.count.Load() - before
			if tt.code == 1 && sent != 0 {
				t.Errorf("a bad threshold sent %d requests", sent)
			}
			if tt.code != 1 {
				data, err := os.ReadFile(junit)
				if err != nil || !strings.Contains(string(data), `<testsuite name="replay thresholds"`) {
					t.Errorf("junit: %v\n%s", err, data)
				}
			}
		})
	}
}

func TestAbortOnFail(t *testing.T) {
	srv := newSUT(t, 2*time.Millisecond, 500)
	out := filepath.Join(t.TempDir(), "summary.json")
	start := time.Now()
	r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 10), "--target", srv.URL,
		"--vus", "2", "--duration", "30s", "--threshold", "errors<20", "--abort-on-fail", "--out", out, "-q")
	if r.code != 99 {
		t.Fatalf("exit %d, want 99: %s", r.code, r.stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the run went on for %v after the threshold broke", took)
	}
	s := readSummary(t, out)
	if n := num(s, "failed"); n < 20 || n > 2000 {
		t.Errorf("failed %d: want the run stopped soon after 20", n)
	}
	if !strings.Contains(r.stderr, "abort-on-fail") {
		t.Errorf("stderr lacks the abort: %s", r.stderr)
	}
	// A threshold that can recover does not abort.
	th, _ := report.ParseThreshold("p99<1ms")
	if th.Hopeless(1000, 1000, 1000) {
		t.Error("a latency threshold counted as hopeless")
	}
}

// TestVUStagesAboveVUsWithTransforms: VU stages may start more VUs than
// --vus; each of them has its slot in the transforms (cfg.MostVUs), so
// none fails its requests unsent.
func TestVUStagesAboveVUsWithTransforms(t *testing.T) {
	srv := newSUT(t, 0, 200)
	out := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 3), "--target", srv.URL,
		"--vus", "1", "--stages", "300ms:4", "--set-header", "X-A: b", "--out", out, "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	if num(s, "requests") == 0 || num(s, "failed") != 0 || num(s, "unsent") != 0 || num(s, "vus_max") != 4 {
		t.Errorf("requests %v, failed %v, unsent %v, vus_max %v: want requests, none failed or unsent, 4 VUs",
			s["requests"], s["failed"], s["unsent"], s["vus_max"])
	}
}
