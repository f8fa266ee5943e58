package e2e

import (
	"testing"
	"time"
)

// TestDeltas: with Deltas, the tracker times each event from one stage to
// the next it reaches (queued → settled → completed), per pair of stages
// in the order events reached them; an event seen again after the window
// has passed is not paired with its old sighting; without Deltas nothing
// is kept.
func TestDeltas(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	id := func(seq uint64) []byte {
		return AppendID(nil, ID{Nonce: 7, VU: 0, Seq: seq, Sent: start.UnixMicro()})
	}
	tr := NewTracker(7, 1, start, nil)
	tr.Deltas(5 * time.Second)
	for seq := range uint64(20) {
		tr.Stamped(0)
		tr.Accepted(0, seq, 0)
		at := start.Add(time.Duration(seq) * 10 * time.Millisecond)
		tr.Seen(id(seq), "queued", at)
		tr.Seen(id(seq), "settled", at.Add(30*time.Millisecond))
		if seq < 10 {
			tr.Seen(id(seq), "completed", at.Add(130*time.Millisecond))
		}
	}
	// seen again long after the window: its last sighting is forgotten
	tr.Seen(id(19), "completed", start.Add(time.Minute))
	s := tr.Summary(0)
	if len(s.Deltas) != 2 {
		t.Fatalf("deltas %+v, want queued→settled and settled→completed", s.Deltas)
	}
	qs, sc := s.Deltas[0], s.Deltas[1]
	if qs.From != "queued" || qs.To != "settled" || qs.Events != 20 || qs.Latency.P50 < 29.9 || qs.Latency.Max > 30.1 {
		t.Errorf("queued→settled: %+v, want 20 events of 30 ms", qs)
	}
	if sc.From != "settled" || sc.To != "completed" || sc.Events != 10 || sc.Latency.P50 < 99.9 || sc.Latency.Max > 100.1 {
		t.Errorf("settled→completed: %+v, want 10 events of 100 ms", sc)
	}
	if s.DeltasPeakInFlight < 20 {
		t.Errorf("peak in flight %d, want at least the 20 events followed at once", s.DeltasPeakInFlight)
	}

	plain := NewTracker(7, 1, start, nil)
	plain.Stamped(0)
	plain.Accepted(0, 0, 0)
	plain.Seen(id(0), "queued", start)
	plain.Seen(id(0), "settled", start.Add(time.Millisecond))
	if s := plain.Summary(0); len(s.Deltas) != 0 || s.DeltasPeakInFlight != 0 {
		t.Errorf("without Deltas: %+v, %d in flight; want none", s.Deltas, s.DeltasPeakInFlight)
	}
}
