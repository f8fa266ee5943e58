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
		case "200", "202", "400", "404", "503": // as recorded
		default:
			t.Errorf("status %s was never recorded", code)
		}
	}
	for _, want := range []string{"POST /events", "GET /users/{id}/feed", "Latency       [from due"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
}
