package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/chartcheck"
	"github.com/replay-dev/replay/pkg/e2e"
)

// steppedWithDeltas is the stepped run followed to two stages, queued and
// delivered, with the time between them (--e2e-deltas).
func steppedWithDeltas(t *testing.T) *Summary {
	s := steppedFixture(t)
	tr := e2e.NewTracker(3, 1, s.Started, nil)
	tr.Deltas(time.Minute)
	for seq := range uint64(60) {
		sent := s.Started.Add(time.Duration(seq) * 100 * time.Millisecond)
		tr.Stamped(0)
		tr.Accepted(0, seq, sent.UnixMicro())
		id := e2e.AppendID(nil, e2e.ID{Nonce: 3, Seq: seq, Sent: sent.UnixMicro()})
		tr.Seen(id, "queued", sent.Add(time.Duration(2+seq%7)*time.Millisecond))
		tr.Seen(id, "delivered", sent.Add(time.Duration(20+seq%13)*time.Millisecond))
	}
	s.E2E = tr.Summary(time.Second)
	s.Transforms = []Transform{{Name: "timestamps", Changed: 420}, {Name: "jwt", Changed: 420}}
	return s
}

// steppedWithBacklog is the stepped run followed to a sink behind a
// worker slower than the run: its events arrive until six seconds after
// the run's last request, and the sinks count a second more (the drain).
func steppedWithBacklog(t *testing.T) *Summary {
	s := steppedFixture(t)
	var last time.Time
	tr := e2e.NewTracker(4, 1, s.Started, func() time.Time { return last.Add(time.Second) })
	free := s.Started
	for seq := range uint64(60) {
		sent := s.Started.Add(time.Duration(seq) * 100 * time.Millisecond)
		tr.Stamped(0)
		tr.Accepted(0, seq, sent.UnixMicro())
		at := sent.Add(5 * time.Millisecond)
		if at.Before(free) {
			at = free
		}
		free, last = at.Add(200*time.Millisecond), at // five a second
		tr.Seen(e2e.AppendID(nil, e2e.ID{Nonce: 4, Seq: seq, Sent: sent.UnixMicro()}), "processed", at)
	}
	s.E2E = tr.Summary(7 * time.Second)
	return s
}

// mergedShards is the html run merged with a second shard of it that
// started 300 ms later.
func mergedShards(t *testing.T) *Summary {
	b := htmlFixture(t)
	b.Started = b.Started.Add(300 * time.Millisecond)
	m, err := Merge([]*Summary{htmlFixture(t), b})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHTMLLayoutInChromium renders each kind of run report (a run, a
// stepped run followed to two stages with the time between them, merged
// shards) in headless Chromium, 1200 pixels wide, and measures through
// the DOM that no two text labels of a chart overlap and nothing is drawn
// outside its chart, and that every time chart of a page draws the same x
// axis: the same ticks at the same places, the step bands at the same
// places (a run whose sinks counted past its last request included).
// REPLAY_SCREENSHOTS=DIR leaves their screenshots.
func TestHTMLLayoutInChromium(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      func(*testing.T) *Summary
		charts int
	}{
		{"run", htmlFixture, 5},
		{"stepped-e2e", steppedWithDeltas, 6},
		{"stepped-backlog", steppedWithBacklog, 6},
		{"merged-shards", mergedShards, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteHTML(&buf, tc.s(t)); err != nil {
				t.Fatal(err)
			}
			l := chartcheck.Check(t, tc.name, buf.String(), 1200, tc.charts)
			checkOneTimeAxis(t, l.Axes)
		})
	}
}

// checkOneTimeAxis fails t unless every time chart (all but the
// percentile chart) drew the x axis of the first: the same tick labels
// at the same places, the same step bands, within half a pixel.
func checkOneTimeAxis(t *testing.T, axes []chartcheck.Axis) {
	t.Helper()
	var first *chartcheck.Axis
	near := func(a, b float64) bool { return math.Abs(a-b) <= 0.5 }
	for i := range axes {
		a := &axes[i]
		if strings.HasPrefix(a.Chart, "Latency by percentile") {
			continue
		}
		if first == nil {
			first = a
			if len(a.Ticks) < 2 {
				t.Fatalf("%s: %d x ticks measured, want the axis's", a.Chart, len(a.Ticks))
			}
			continue
		}
		if !slices.EqualFunc(a.Ticks, first.Ticks, func(p, q chartcheck.Tick) bool { return p.Label == q.Label && near(p.X, q.X) }) {
			t.Errorf("%s: x ticks %v, want those of %s: %v", a.Chart, a.Ticks, first.Chart, first.Ticks)
		}
		if !slices.EqualFunc(a.Bands, first.Bands, func(p, q [2]float64) bool { return near(p[0], q[0]) && near(p[1], q[1]) }) {
			t.Errorf("%s: step bands at %v, want those of %s: %v", a.Chart, a.Bands, first.Chart, first.Bands)
		}
	}
}
