package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestProgressLogLines: without a terminal, progress is JSON log lines with
// the numbers, and nothing a terminal would interpret.
func TestProgressLogLines(t *testing.T) {
	t.Parallel()
	srv := newSUT(t, 5*time.Millisecond, 200)
	r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 10), "--target", srv.URL,
		"--vus", "2", "--duration", "1500ms", "--progress-every", "300ms", "--log-format", "json", "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line that is not JSON: %q", l)
		}
		if m["message"] == "progress" {
			lines++
			if m["requests"].(float64) <= 0 || m["vus"].(float64) != 2 {
				t.Errorf("progress line %v", m)
			}
		}
	}
	if lines < 3 {
		t.Errorf("got %d progress lines in 1.5s at 300ms", lines)
	}
	if strings.ContainsAny(r.stderr, "\r\x1b") {
		t.Error("carriage returns or escape codes in the log")
	}
}
