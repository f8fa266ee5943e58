package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDeadPipelineFails: the demo SUT's API accepts every event (202) and
// its worker delivers them to an address where nothing listens, so none
// reaches the run's sink. e2e.p99<2s fails with exit 99 in replay run, in
// every step, and again in replay report (the saved summary judged again)
// and replay report merge, each saying that no event was seen and how many
// are pending, in text, JSON, HTML and JUnit; the stage's percentiles are
// "–". A threshold the run does meet passes beside it.
func TestDeadPipelineFails(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "demo")
	if r := runMain(t, context.Background(), "", "demo", "--write-traffic", dir); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	sutAddr, sinkAddr, deadAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan runResult, 1)
	go func() {
		served <- runMain(t, ctx, "", "demo", "--serve", sutAddr, "--deliver-to", "http://"+deadAddr)
	}()
	defer func() { stop(); <-served }()
	waitListening(t, sutAddr)

	tmp := t.TempDir()
	out, html, junit := filepath.Join(tmp, "run.json"), filepath.Join(tmp, "run.html"), filepath.Join(tmp, "run.xml")
	r := runMain(t, context.Background(), "", "run", "-f", filepath.Join(dir, "demo.jsonl"), "--transforms", filepath.Join(dir, "demo-transforms.yaml"),
		"--target", "http://"+sutAddr, "--vus", "2", "--rate", "40/s", "--stages", "40/s@1s,40/s@1s", "--sink-http", sinkAddr,
		"--correlate-only", "POST /events", "--drain", "1s", "--drain-idle", "300ms",
		"--threshold", "e2e.p99<2s", "--threshold", "each step: e2e.p99<2s", "--threshold", "e2e.pending<=100%",
		"--out", out, "--html", html, "--junit", junit, "--log-level", "warn")
	if r.code != exitThreshold {
		t.Fatalf("replay run: exit %d, want %d\n%s\n%s", r.code, exitThreshold, r.stdout, r.stderr)
	}
	s := readSummary(t, out)
	e2e := s["e2e"].(map[string]any)
	accepted := int64(e2e["accepted"].(float64))
	stages := e2e["stages"].([]any)
	if accepted == 0 || len(stages) != 1 || stages[0].(map[string]any)["unique"].(float64) != 0 || stages[0].(map[string]any)["latency_ms"] != nil {
		t.Fatalf("e2e section %v: want events accepted, none seen at one stage, no latency", e2e)
	}
	noEvent := "no event seen (" + strconv.FormatInt(accepted, 10) + " pending)"
	if !strings.Contains(r.stderr, "thresholds failed: e2e.p99<2s ("+noEvent+")") {
		t.Errorf("replay run's error lacks %q:\n%s", noEvent, r.stderr)
	}
	for _, want := range []string{"FAIL  e2e.p99<2s", noEvent, "FAIL  each step: e2e.p99<2s (step 1)", "FAIL  each step: e2e.p99<2s (step 2)",
		"pass  e2e.pending<=100%", "–    –    –    –"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("replay run's report lacks %q:\n%s", want, r.stdout)
		}
	}
	thresholds := s["thresholds"].([]any)
	if th := thresholds[0].(map[string]any); th["measured"] != nil || th["note"] != noEvent || th["pass"] != false {
		t.Errorf("summary JSON threshold %v: want measured null, note %q, pass false", th, noEvent)
	}
	for path, want := range map[string]string{html: "<td>e2e.p99&lt;2s</td><td>" + noEvent + "</td>", junit: `<failure message="` + noEvent + `">`} {
		if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, want %q in it", filepath.Base(path), err, want)
		}
	}

	// The saved summary judged again: the same verdict, from what it
	// holds, whatever --drain the run waited.
	for _, tt := range []struct {
		threshold string
		code      int
		says      string
	}{
		{"e2e.p99<2s", exitThreshold, noEvent},
		{"e2e.processed.p50<60s", exitThreshold, noEvent},
		{"each step: e2e.p99<2s", exitThreshold, "(step 2) (no event seen ("},
		{"e2e.pending<1%", exitThreshold, "(measured 100.000 %)"},
		{"e2e.pending<=100%", 0, ""},
	} {
		r := runMain(t, context.Background(), "", "report", out, "--threshold", tt.threshold)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.says) {
			t.Errorf("replay report --threshold %s: exit %d, want %d saying %q\n%s", tt.threshold, r.code, tt.code, tt.says, r.stderr)
		}
	}
	merged := filepath.Join(tmp, "merged.json")
	r = runMain(t, context.Background(), "", "report", "merge", out, out, "-o", merged, "--threshold", "e2e.p99<2s")
	twice := "no event seen (" + strconv.FormatInt(2*accepted, 10) + " pending)"
	if r.code != exitThreshold || !strings.Contains(r.stderr, twice) || !strings.Contains(r.stdout, twice) {
		t.Errorf("replay report merge: exit %d, want %d saying %q\n%s\n%s", r.code, exitThreshold, twice, r.stdout, r.stderr)
	}
}
