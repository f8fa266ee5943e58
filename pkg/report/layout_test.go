package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/chart/charttest"
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
// outside its chart. REPLAY_SCREENSHOTS=DIR leaves their screenshots.
func TestHTMLLayoutInChromium(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      func(*testing.T) *Summary
		charts int
	}{
		{"run", htmlFixture, 5},
		{"stepped-e2e", steppedWithDeltas, 6},
		{"merged-shards", mergedShards, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteHTML(&buf, tc.s(t)); err != nil {
				t.Fatal(err)
			}
			charttest.Check(t, tc.name, buf.String(), 1200, tc.charts)
		})
	}
}
