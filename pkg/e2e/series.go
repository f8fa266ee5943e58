package e2e

import (
	"fmt"
	"math"
)

// SliceMS is the width of a Series' slices, in milliseconds: fine enough
// that a step of a few seconds is counted within a few percent at its
// edges, coarse enough that an hour is 36,000 numbers.
const SliceMS = 100

// Series counts events by the slice of Unix time they fall in, as in
//
//	{"start_ms": 1795424400000, "slice_ms": 100, "counts": [12, 30, 0, 31]}
//
// Counts[i] is the events in [StartMS + i·SliceMS, StartMS + (i+1)·SliceMS).
// Slices are aligned on Unix time, so the series of shards and standalone
// sinks add slice by slice (AddSeries), exactly. A step's keep-up verdict
// reads its window in them (Until).
type Series struct {
	StartMS int64   `json:"start_ms"`
	SliceMS int64   `json:"slice_ms"`
	Counts  []int64 `json:"counts"`
}

// sliceOf is the index on Unix time of the slice holding Unix ms ms.
func sliceOf(ms, width int64) int64 {
	q := ms / width
	if ms%width != 0 && ms < 0 {
		q--
	}
	return q
}

// Add counts one event at Unix ms ms. It allocates only when the series
// grows (amortized: the slice doubles).
func (s *Series) Add(ms int64) { s.addN(ms, 1) }

// addN counts n events at Unix ms ms.
func (s *Series) addN(ms, n int64) {
	if s.SliceMS == 0 {
		s.SliceMS = SliceMS
	}
	k := sliceOf(ms, s.SliceMS)
	if len(s.Counts) == 0 {
		s.StartMS = k * s.SliceMS
	}
	first := s.StartMS / s.SliceMS
	if k < first { // before the first slice: grow at the front
		grown := make([]int64, int(first-k)+len(s.Counts))
		copy(grown[first-k:], s.Counts)
		s.Counts, s.StartMS, first = grown, k*s.SliceMS, k
	}
	i := int(k - first)
	for i >= len(s.Counts) {
		s.Counts = append(s.Counts, 0)
	}
	s.Counts[i] += n
}

// AddSeries adds o into s slice by slice; the two must have the same
// slice width (o may be nil or empty).
func (s *Series) AddSeries(o *Series) error {
	if o == nil || len(o.Counts) == 0 {
		return nil
	}
	if s.SliceMS != 0 && len(s.Counts) > 0 && o.SliceMS != s.SliceMS {
		return fmt.Errorf("slices of %d ms against %d ms", o.SliceMS, s.SliceMS)
	}
	if o.SliceMS <= 0 || o.StartMS%o.SliceMS != 0 {
		return fmt.Errorf("slice_ms %d, start_ms %d: want slices of a positive width aligned on Unix time", o.SliceMS, o.StartMS)
	}
	s.SliceMS = o.SliceMS
	for i, n := range o.Counts {
		if n != 0 {
			s.addN(o.StartMS+int64(i)*o.SliceMS, n)
		}
	}
	return nil
}

// Total is the events the series counts.
func (s *Series) Total() int64 {
	var n int64
	if s == nil {
		return 0
	}
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Until is the events counted before Unix ms ms: whole slices before it,
// and of the slice it falls in the share before it (events spread evenly
// across a slice). 0 for a nil series.
func (s *Series) Until(ms float64) float64 { return s.UntilEnd(ms, math.Inf(1)) }

// UntilEnd is Until for a series that stopped counting at Unix ms end:
// the events of the slice end falls in were counted before end, so they
// spread evenly over the part of the slice before it.
func (s *Series) UntilEnd(ms, end float64) float64 {
	if s == nil || len(s.Counts) == 0 || s.SliceMS <= 0 {
		return 0
	}
	x := (ms - float64(s.StartMS)) / float64(s.SliceMS) // in slices from the first
	if x <= 0 {
		return 0
	}
	whole := int(math.Floor(x))
	sum := 0.0
	for i := 0; i < whole && i < len(s.Counts); i++ {
		sum += float64(s.Counts[i])
	}
	if whole < len(s.Counts) {
		width := min(float64(s.SliceMS), end-float64(s.StartMS+int64(whole)*s.SliceMS)) // the part of the slice counted
		sum += float64(s.Counts[whole]) * min((x-float64(whole))*float64(s.SliceMS)/max(width, 1e-9), 1)
	}
	return sum
}

// Between is the events counted in [from, to) (Unix ms), as Until counts.
func (s *Series) Between(from, to float64) float64 { return s.BetweenEnd(from, to, math.Inf(1)) }

// BetweenEnd is Between for a series that stopped counting at end, as
// UntilEnd counts.
func (s *Series) BetweenEnd(from, to, end float64) float64 {
	if to <= from {
		return 0
	}
	return s.UntilEnd(to, end) - s.UntilEnd(from, end)
}
