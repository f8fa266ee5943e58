package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs the README's first command, shortened, from another
// directory: the traffic travels inside the binary.
func TestDemo(t *testing.T) {
	wd, _ := os.Getwd()
	t.Chdir(t.TempDir())
	defer os.Chdir(wd)
	out := filepath.Join(t.TempDir(), "demo.json")
	r := runMain(t, context.Background(), "", "demo", "--duration", "1s", "--vus", "4", "--out", out, "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	if num(s, "requests") < 100 {
		t.Errorf("requests: got %d, want the demo to replay a few seconds of traffic", num(s, "requests"))
	}
	if errs, _ := s["errors"].(map[string]any); len(errs) != 0 {
		t.Errorf("errors: got %v, want none against the demo SUT", errs)
	}
	status, _ := s["status"].(map[string]any)
	for code := range status {
		switch code {
		case "200", "201", "202", "400", "404", "503": // as recorded
		default:
			t.Errorf("status %s was never recorded", code)
		}
	}
	if e2e, _ := s["e2e"].(map[string]any); e2e == nil || len(e2e["stages"].([]any)) != 1 {
		t.Errorf("e2e: got %v, want the worker's deliveries at one stage", s["e2e"])
	}
	for _, want := range []string{"POST /events", "GET /users/{id}/feed", "Latency       [from due", "End-to-end (send → seen by a sink)", "processed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestDemoRawTransforms: --raw (as recorded) with --transforms (rewritten)
// says nothing coherent; the demo refuses it before starting.
func TestDemoRawTransforms(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(file, []byte("transforms:\n  - timestamps:\n      auto: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, context.Background(), "", "demo", "--raw", "--transforms", file, "--duration", "1s")
	if r.code != 1 || !strings.Contains(r.stderr, "--raw and --transforms") || strings.Contains(r.stderr, "demo SUT started") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 with --raw and --transforms, before the SUT starts", r.code, r.stderr)
	}
}

// TestDemoTransforms replays the demo traffic recorded as successful
// against the demo SUT, on real sockets: as recorded (--raw) nearly all of
// it fails (expired token, stale events, unknown orders); with the demo's
// transforms all of it succeeds.
func TestDemoTransforms(t *testing.T) {
	run := func(extra ...string) map[string]any {
		out := filepath.Join(t.TempDir(), "demo.json")
		args := append([]string{"demo", "--keep", "status=2xx", "--duration", "1s", "--vus", "4", "--out", out, "-q", "--log-level", "warn"}, extra...)
		r := runMain(t, context.Background(), "", args...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		return readSummary(t, out)
	}
	raw := run("--raw")
	if ratio := float64(num(raw, "succeeded")) / float64(num(raw, "requests")); num(raw, "requests") < 50 || ratio > 0.05 {
		t.Errorf("--raw: %d of %d succeeded, want nearly none", num(raw, "succeeded"), num(raw, "requests"))
	}
	fixed := run()
	if num(fixed, "requests") < 50 || num(fixed, "succeeded") != num(fixed, "requests") {
		t.Errorf("with transforms: %d of %d succeeded (status %v), want all", num(fixed, "succeeded"), num(fixed, "requests"), fixed["status"])
	}
	names := map[string]bool{}
	for _, x := range fixed["transforms"].([]any) {
		m := x.(map[string]any)
		names[m["name"].(string)] = m["changed"].(float64) > 0 && m["failed"].(float64) == 0
	}
	for _, n := range []string{"timestamps", "jwt", "correlate json id"} {
		if !names[n] {
			t.Errorf("transform %s: changed nothing or failed (%v)", n, fixed["transforms"])
		}
	}
}
