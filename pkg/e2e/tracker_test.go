package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/hist"
)

func TestTracker(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	tr := NewTracker(42, 2, start, nil)
	id := func(nonce uint32, vu int, seq uint64, sent time.Time) []byte {
		return AppendID(nil, ID{Nonce: nonce, VU: vu, Seq: seq, Sent: sent.UnixMicro()})
	}
	// 100 events accepted on two VUs; the sink sees 98 of them at
	// "processed" (one twice), 50 at "settled"; two foreign IDs.
	for seq := range uint64(50) {
		for vu := range 2 {
			tr.Stamped(vu)
			tr.Accepted(vu, seq, 0)
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
	s := tr.Summary(0)
	if s.Sent != 101 || s.Accepted != 100 || s.Foreign != 2 || len(s.Stages) != 2 {
		t.Fatalf("got %+v", s)
	}
	p, st := s.Stages[0], s.Stages[1]
	// The sinks cannot prove loss: what is unseen at the end is pending.
	// (TestTrackerProvesLoss checks LossKnown.)
	if got, want := missed(s, 0), [4]float64{2, 2, 0, 0}; s.Pending() != 50 || got != want {
		t.Errorf("pending %d, processed pending, %%, lost, %% %v; want 50 (the worst stage), %v", s.Pending(), got, want)
	}
	if p.Name != "processed" || p.Received != 99 || p.Unique != 98 || p.Duplicates != 1 {
		t.Errorf("processed: %+v", p)
	}
	if p.Latency.P50 < 4.99 || p.Latency.P50 > 5.01 || p.Latency.Max > 5.01 {
		t.Errorf("processed latency %+v, want 5 ms", p.Latency)
	}
	if st.Name != "settled" || st.Unique != 50 || missed(s, 1) != [4]float64{50, 50, 0, 0} || st.Latency.P50 < 1199 || st.Latency.P50 > 1201 {
		t.Errorf("settled: %+v", st)
	}
	if len(st.Intervals) != 1 || st.Intervals[0].T != start.Unix()+1 || st.Intervals[0].Received != 50 {
		t.Errorf("settled intervals %+v, want 50 in second 1", st.Intervals)
	}
	if h, err := hist.Decode(p.Histogram); err != nil || h.TotalCount() != 98 {
		t.Errorf("histogram: %v", err)
	}
}

// TestTrackerProvesLoss: sinks that prove loss turn the events unseen at
// the end into lost ones; others leave them pending.
func TestTrackerProvesLoss(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		proves bool
		want   [4]float64 // pending, %, lost, %
	}{{false, [4]float64{1, 25, 0, 0}}, {true, [4]float64{0, 0, 1, 25}}} {
		tr := NewTracker(9, 1, start, nil)
		tr.ProveLoss(tt.proves)
		for seq := range uint64(4) {
			tr.Stamped(0)
			tr.Accepted(0, seq, 0)
			if seq > 0 {
				tr.Seen(AppendID(nil, ID{Nonce: 9, Seq: seq, Sent: start.UnixMicro()}), "done", start)
			}
		}
		s := tr.Summary(0)
		if got := missed(s, 0); s.LossKnown != tt.proves || got != tt.want || s.Pending() != int64(tt.want[0]) {
			t.Errorf("proves %v: loss known %v, pending, %%, lost, %% %v, want %v", tt.proves, s.LossKnown, got, tt.want)
		}
	}
}

// missed is what stage i did not see: pending, pending %, lost, lost %.
func missed(s *Summary, i int) [4]float64 {
	st := s.Stages[i]
	return [4]float64{float64(st.Pending), st.PendingPct, float64(st.Lost), st.LostPct}
}

func TestTrackerDrain(t *testing.T) {
	clock := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	sleep := func(d time.Duration) { clock = clock.Add(d) }
	lastSend := clock
	if waited := NewTracker(1, 1, clock, now).Drain(context.Background(), lastSend, 30*time.Second, time.Second, sleep); waited != 0 {
		t.Errorf("nothing accepted: waited %v, want 0", waited)
	}
	tr := NewTracker(1, 1, clock, now)
	tr.Accepted(0, 0, 0)
	tr.Accepted(0, 1, 0)
	seen := func(seq uint64) {
		tr.Seen(AppendID(nil, ID{Nonce: 1, Seq: seq, Sent: lastSend.UnixMicro()}), "done", clock)
	}

	// Nothing arrives: the drain ends after 3 idle periods.
	if waited := tr.Drain(context.Background(), lastSend, 30*time.Second, time.Second, sleep); waited < 3*time.Second || waited > 3100*time.Millisecond {
		t.Errorf("idle: waited %v, want 3s", waited)
	}
	// Everything arrives: it ends at once.
	seen(0)
	seen(1)
	if waited := tr.Drain(context.Background(), lastSend, 30*time.Second, time.Second, sleep); waited != 0 {
		t.Errorf("complete: waited %v, want 0", waited)
	}
	// Events keep trickling in, one short of complete: the drain bound.
	tr2 := NewTracker(1, 1, clock, now)
	for seq := range uint64(1000) {
		tr2.Accepted(0, seq, 0)
	}
	lastSend = clock
	trickle := func(d time.Duration) {
		clock = clock.Add(d)
		tr2.Seen(AppendID(nil, ID{Nonce: 1, Seq: uint64(clock.Sub(lastSend) / (50 * time.Millisecond)), Sent: lastSend.UnixMicro()}), "done", clock)
	}
	if waited := tr2.Drain(context.Background(), lastSend, 10*time.Second, time.Second, trickle); waited < 10*time.Second || waited > 10100*time.Millisecond {
		t.Errorf("trickle: waited %v, want the 10s drain", waited)
	}
}

func BenchmarkAccepted(b *testing.B) {
	tr := NewTracker(1, 1, time.Now(), nil)
	b.ReportAllocs()
	for i := range b.N {
		tr.Accepted(0, uint64(i%100000), 0)
	}
}

// TestSinkTracker: a standalone sink counts the events of any run and
// shard, keeping the same VU and sequence of two runs or shards apart.
func TestSinkTracker(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	tr := NewSinkTracker(start)
	for _, id := range []ID{
		{Nonce: 1, Shard: 0, VU: 0, Seq: 0},
		{Nonce: 1, Shard: 1, VU: 0, Seq: 0}, // another shard
		{Nonce: 2, Shard: 0, VU: 0, Seq: 0}, // another run
		{Nonce: 2, Shard: 0, VU: 9, Seq: 5}, // a VU the sink did not know of
		{Nonce: 1, Shard: 0, VU: 0, Seq: 0}, // delivered again
	} {
		id.Sent = start.UnixMicro()
		tr.Seen(AppendID(nil, id), "done", start.Add(20*time.Millisecond))
	}
	tr.Seen([]byte("evt-1"), "done", start)
	s := tr.Summary(0)
	if s.Sent != 0 || s.Accepted != 0 || s.Foreign != 1 || len(s.Stages) != 1 {
		t.Fatalf("got %+v, want 0 sent, 0 accepted, 1 foreign, 1 stage", s)
	}
	if st := s.Stages[0]; st.Unique != 4 || st.Duplicates != 1 || st.Received != 5 || st.Lost != 0 || st.Latency.P50 < 19.9 || st.Latency.P50 > 20.1 {
		t.Errorf("got %+v, want 4 unique, 1 duplicate, none lost, 20 ms", st)
	}
}
