package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A series counts events by 100 ms slice of Unix time, grows either way,
// reads back the events before a moment (spread evenly within a slice),
// and adds to another slice by slice.
func TestSeries(t *testing.T) {
	var s Series
	for _, ms := range []int64{1_000_050, 1_000_150, 1_000_199, 999_950} {
		s.Add(ms)
	}
	if s.StartMS != 999_900 || s.SliceMS != SliceMS || len(s.Counts) != 3 || s.Counts[0] != 1 || s.Counts[1] != 1 || s.Counts[2] != 2 {
		t.Fatalf("got %+v, want slices from 999900: [1 1 2]", s)
	}
	for _, c := range []struct {
		ms   float64
		want float64
	}{
		{999_000, 0}, {999_900, 0}, {999_950, 0.5}, {1_000_000, 1}, {1_000_100, 2}, {1_000_150, 3}, {1_000_300, 4}, {2e6, 4},
	} {
		if got := s.Until(c.ms); got != c.want {
			t.Errorf("Until(%g): got %g, want %g", c.ms, got, c.want)
		}
	}
	if got := s.Between(1_000_000, 1_000_200); got != 3 {
		t.Errorf("Between: got %g, want 3", got)
	}
	// Counting stopped at 1000170: the slice's two events came before it.
	for _, c := range []struct{ ms, want float64 }{{1_000_135, 3}, {1_000_170, 4}, {1_000_190, 4}} {
		if got := s.UntilEnd(c.ms, 1_000_170); got != c.want {
			t.Errorf("UntilEnd(%g, 1000170): got %g, want %g", c.ms, got, c.want)
		}
	}
	var sum Series
	o := Series{StartMS: 1_000_400, SliceMS: SliceMS, Counts: []int64{5}}
	for _, x := range []*Series{&s, &o} {
		if err := sum.AddSeries(x); err != nil {
			t.Fatal(err)
		}
	}
	if sum.Total() != 9 || sum.StartMS != 999_900 || len(sum.Counts) != 6 || sum.Counts[5] != 5 {
		t.Errorf("sum %+v, want 9 events from 999900 to the slice at 1000400", sum)
	}
	if err := sum.AddSeries(&Series{StartMS: 0, SliceMS: 1000, Counts: []int64{1}}); err == nil || !strings.Contains(err.Error(), "slices of 1000 ms against 100 ms") {
		t.Errorf("another width: got %v", err)
	}
	if err := (&Series{}).AddSeries(&Series{StartMS: 50, SliceMS: 100, Counts: []int64{1}}); err == nil {
		t.Error("a series not aligned on Unix time: no error")
	}
}

// The tracker counts accepted events by the slice they were sent in, and
// each stage's first sightings by the slice they were seen in; a merge
// adds them and keeps the earliest end of counting.
func TestTrackerSeries(t *testing.T) {
	start := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	clock := start.Add(10 * time.Second)
	tr := NewTracker(5, 1, start, func() time.Time { return clock })
	for seq := range uint64(20) {
		sent := start.Add(time.Duration(seq) * 50 * time.Millisecond) // two a slice
		tr.Stamped(0)
		tr.Accepted(0, seq, sent.UnixMicro())
		if seq < 10 {
			id := AppendID(nil, ID{Nonce: 5, Seq: seq, Sent: sent.UnixMicro()})
			tr.Seen(id, "processed", sent.Add(time.Second))
			tr.Seen(id, "processed", sent.Add(2*time.Second)) // a duplicate: not counted again
		}
	}
	s := tr.Summary(0)
	a, seen := s.AcceptedSeries, s.Stages[0].SeenSeries
	if a == nil || a.Total() != 20 || a.StartMS != start.UnixMilli() || len(a.Counts) != 10 || a.Counts[9] != 2 {
		t.Fatalf("accepted series %+v, want 20 events two a slice from the start", a)
	}
	if seen == nil || seen.Total() != 10 || seen.StartMS != start.UnixMilli()+1000 {
		t.Fatalf("seen series %+v, want 10 events from a second after the start", seen)
	}
	if s.SeenUntilMS != clock.UnixMilli() {
		t.Errorf("seen until %d, want the clock's %d", s.SeenUntilMS, clock.UnixMilli())
	}
	other := &Summary{Accepted: 1, SeenUntilMS: clock.UnixMilli() - 500, AcceptedSeries: &Series{StartMS: start.UnixMilli(), SliceMS: SliceMS, Counts: []int64{3}},
		Stages: []Stage{{Name: "processed", SeenSeries: &Series{StartMS: start.UnixMilli(), SliceMS: SliceMS, Counts: []int64{1}}}}}
	m, err := Merge([]*Summary{s, nil, other})
	if err != nil {
		t.Fatal(err)
	}
	if m.AcceptedSeries.Total() != 23 || m.AcceptedSeries.Counts[0] != 5 || m.Stages[0].SeenSeries.Total() != 11 || m.SeenUntilMS != other.SeenUntilMS {
		t.Errorf("merged: accepted %+v, seen %+v, until %d; want 23 and 11 events, the earlier end", m.AcceptedSeries, m.Stages[0].SeenSeries, m.SeenUntilMS)
	}
	bad := &Summary{AcceptedSeries: &Series{StartMS: 0, SliceMS: 1000, Counts: []int64{1}}}
	if _, err := Merge([]*Summary{s, bad}); err == nil || !strings.Contains(err.Error(), "merge: summary 2, e2e accepted_series: slices of 1000 ms against 100 ms") {
		t.Errorf("a series of another width: got %v", err)
	}
}

// The series end where the drain ended: an event the sinks pass on while
// they close is counted, but not in the series, which are exact up to
// the drain's end (SeenUntilMS).
func TestTrackerSeriesEndAtDrain(t *testing.T) {
	start := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	clock := start
	tr := NewTracker(6, 1, start, func() time.Time { return clock })
	for seq := range uint64(2) {
		tr.Stamped(0)
		tr.Accepted(0, seq, start.UnixMicro())
	}
	tr.Seen(AppendID(nil, ID{Nonce: 6, Seq: 0, Sent: start.UnixMicro()}), "done", start.Add(100*time.Millisecond))
	clock = start.Add(time.Second)
	tr.Drain(context.Background(), start, 500*time.Millisecond, time.Second, func(time.Duration) {})
	tr.Seen(AppendID(nil, ID{Nonce: 6, Seq: 1, Sent: start.UnixMicro()}), "done", clock.Add(10*time.Millisecond))
	clock = clock.Add(time.Second)
	s := tr.Summary(time.Second)
	if s.Stages[0].Unique != 2 || s.Stages[0].SeenSeries.Total() != 1 || s.SeenUntilMS != start.Add(time.Second).UnixMilli() {
		t.Errorf("unique %d, in the series %d, until %d: want 2, 1 (the one before the drain's end), %d",
			s.Stages[0].Unique, s.Stages[0].SeenSeries.Total(), s.SeenUntilMS, start.Add(time.Second).UnixMilli())
	}
}

// BenchmarkTrackerAccepted records accepted events, a thousand a second
// of send time, as a VU does after each answer: the bit set and the
// series of send times grow by doubling, so nothing is allocated per
// event once they have grown (allocs/op rounds to 0).
func BenchmarkTrackerAccepted(b *testing.B) {
	start := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	tr := NewTracker(1, 1, start, nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tr.Accepted(0, uint64(i), start.UnixMicro()+int64(i)*1000)
	}
}
