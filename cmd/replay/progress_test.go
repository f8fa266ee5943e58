package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/rs/zerolog"
)

// TestProgressLogLines: without a terminal, progress is JSON log lines with
// the numbers, and nothing a terminal would interpret.
func TestProgressLogLines(t *testing.T) {
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

// TestProgressBar renders the terminal display into a buffer.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	n := int64(0)
	src := progressSources{
		live: func() recording.Live {
			n += 100
			return recording.Live{Requests: n, LastInterval: &report.Interval{Latency: report.IntervalLatency{P99: 4.2}}}
		},
		vus: func() (int, int64) { return 7, 3 },
	}
	stop := startProgress(context.Background(), true, &buf, 50*time.Millisecond, time.Second, src, zerolog.Nop())
	time.Sleep(400 * time.Millisecond)
	stop()
	out := buf.String()
	for _, want := range []string{"replay", "/1s", "p99 4.20ms", "VUs 7"} {
		if !strings.Contains(out, want) {
			t.Errorf("the bar lacks %q:\n%q", want, out)
		}
	}
	if strings.Contains(out, "dropped") {
		t.Errorf("a closed model's bar shows dropped iterations:\n%q", out)
	}
}

// TestProgressBarOpenModel: an open model's bar shows the target rate,
// dropped iterations and the error share.
func TestProgressBarOpenModel(t *testing.T) {
	var buf bytes.Buffer
	src := progressSources{
		live:    func() recording.Live { return recording.Live{Requests: 400, Failed: 10} },
		vus:     func() (int, int64) { return 9, 1 },
		open:    true,
		dropped: func() int64 { return 12 },
		target:  func() (int, float64, bool) { return 2, 400, true },
	}
	stop := startProgress(context.Background(), true, &buf, 50*time.Millisecond, time.Second, src, zerolog.Nop())
	time.Sleep(300 * time.Millisecond)
	stop()
	for _, want := range []string{"of 400/s", "failed 10 (2.50%)", "dropped 12", "VUs 9"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the bar lacks %q:\n%q", want, buf.String())
		}
	}
}
