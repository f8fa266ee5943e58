package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStepThresholds runs three steps of an arrival rate against a
// loopback server: a threshold on one step that holds and one on every
// step that cannot (no loopback run reaches a million requests a second)
// fail the run with exit 99, each step judged and named in the report and
// the JSON; a threshold naming a step the run does not have is refused
// before any traffic.
func TestStepThresholds(t *testing.T) {
	t.Parallel()
	srv := newSUT(t, 0, 200)
	dir := t.TempDir()
	traffic := filepath.Join(dir, "t.jsonl")
	os.WriteFile(traffic, []byte(`{"http":{"req":{"method":"GET","uri":"/a","host":"h"}}}`+"\n"), 0o644)
	out := filepath.Join(dir, "s.json")
	r := runMain(t, context.Background(), "", "run", "-f", traffic, "--target", srv.URL, "--mode", "loop",
		"--stages", "50/s@500ms,100/s@500ms,150/s@500ms", "--vus", "4", "--progress", "off", "--out", out,
		"--threshold", "step 2: errors<1%", "--threshold", "each step: rps>1000000")
	if r.code != 99 {
		t.Fatalf("exit %d, want 99 (a threshold on every step failed); stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"step 2: errors<1%", "each step: rps>1000000 (step 1)", "each step: rps>1000000 (step 3)", "Steps (requests by the step they were due in)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "thresholds failed: each step: rps>1000000 (step 1) (measured") {
		t.Errorf("the exit message does not name the step that failed:\n%s", r.stderr)
	}
	sum := readSummary(t, out)
	steps, _ := sum["steps"].([]any)
	ths, _ := sum["thresholds"].([]any)
	if len(steps) != 3 || len(ths) != 4 {
		t.Fatalf("summary: %d steps, %d threshold results; want 3 steps, 1 + 3 results", len(steps), len(ths))
	}
	pass := map[string]bool{}
	for _, th := range ths {
		m := th.(map[string]any)
		step, _ := m["step"].(float64)
		pass[m["threshold"].(string)+"#"+strings.Repeat("|", int(step))] = m["pass"].(bool)
	}
	if !pass["step 2: errors<1%#||"] || pass["each step: rps>1000000#|"] || pass["each step: rps>1000000#|||"] {
		t.Errorf("threshold results %v: want step 2's errors passed, every step's rps failed", pass)
	}
	before := srv.count.Load()
	r = runMain(t, context.Background(), "", "run", "-f", traffic, "--target", srv.URL, "--mode", "loop",
		"--stages", "50/s@500ms,100/s@500ms,150/s@500ms", "-q", "--threshold", "step 9: p99<1s")
	if r.code != 1 || !strings.Contains(r.stderr, "no step 9, the run has 3") || srv.count.Load() != before {
		t.Errorf("step 9 of 3: exit %d, %d requests sent; stderr:\n%s", r.code, srv.count.Load()-before, r.stderr)
	}
}
