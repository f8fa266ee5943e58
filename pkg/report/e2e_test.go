package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/golden"
	"github.com/replay-dev/replay/pkg/e2e"
)

// TestE2EText renders the end-to-end section of a tracker's summary: 100
// events accepted on two VUs; the sink sees 98 of them at "processed" (one
// twice), 50 at "settled"; two foreign IDs. (Package e2e tests the counts.)
func TestE2EText(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	tr := e2e.NewTracker(42, 2, start, nil)
	id := func(nonce uint32, vu int, seq uint64, sent time.Time) []byte {
		return e2e.AppendID(nil, e2e.ID{Nonce: nonce, VU: vu, Seq: seq, Sent: sent.UnixMicro()})
	}
	for seq := range uint64(50) {
		for vu := range 2 {
			tr.Stamped(vu)
			tr.Accepted(vu, seq)
		}
	}
	tr.Stamped(0) // stamped, answered 500: not accepted
	for seq := range uint64(50) {
		for vu := range 2 {
			sent := start.Add(time.Duration(seq) * 10 * time.Millisecond)
			if !(vu == 1 && seq >= 48) {
				tr.Seen(id(42, vu, seq, sent), "processed", sent.Add(5*time.Millisecond))
			}
			if vu == 0 {
				tr.Seen(id(42, vu, seq, sent), "settled", sent.Add(time.Second+200*time.Millisecond))
			}
		}
	}
	tr.Seen(id(42, 0, 3, start), "processed", start.Add(time.Second))
	tr.Seen(id(7, 0, 3, start), "processed", start)
	tr.Seen([]byte("evt-1"), "processed", start)
	var buf bytes.Buffer
	if err := WriteE2EText(&buf, tr.Summary(0)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "e2e.golden", buf.Bytes())
}
