package progress

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/rs/zerolog"
)

// TestProgressBar renders the terminal display into a buffer.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	n := int64(0)
	src := recording.LiveView{
		Now: func() recording.Live {
			n += 100
			return recording.Live{Requests: n, LastInterval: &report.Interval{Latency: report.IntervalLatency{P99: 4.2}}, VUs: 7, InFlight: 3}
		},
	}
	stop := Start(context.Background(), true, &buf, 50*time.Millisecond, time.Second, src, zerolog.Nop())
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

// TestProgressBarOpenModel: an open model's bar shows the target rate in
// the unit of the rate beside it (requests a second: 400 iterations of 3
// requests), dropped iterations and the error share.
func TestProgressBarOpenModel(t *testing.T) {
	var buf bytes.Buffer
	src := recording.LiveView{
		Model: "rate",
		Now: func() recording.Live {
			return recording.Live{Requests: 400, Failed: 10, VUs: 9, InFlight: 1, Dropped: 12,
				HasTarget: true, Step: 2, Target: 400, PerIteration: 3} // 3 requests an iteration
		},
	}
	stop := Start(context.Background(), true, &buf, 50*time.Millisecond, time.Second, src, zerolog.Nop())
	time.Sleep(300 * time.Millisecond)
	stop()
	for _, want := range []string{" req/s of 1200 req/s", "failed 10 (2.50%)", "dropped 12", "VUs 9"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the bar lacks %q:\n%q", want, buf.String())
		}
	}
}
