package recording

import "github.com/HdrHistogram/hdrhistogram-go"

// Buckets are the latency (from due time) of the answered requests so far
// as cumulative counts at upper bounds, a Prometheus histogram's buckets:
// Counts[i] requests took at most Bounds[i] seconds. A request counts
// under a bound when the highest value its HDR bucket stands for is within
// it, as the percentiles read it, so the buckets and the percentiles
// agree to HDR precision (3 significant digits).
type Buckets struct {
	Bounds []float64 // seconds, ascending
	Counts []int64   // cumulative, one per bound
	Count  int64     // every answered request: the +Inf bucket
	SumS   float64   // total latency, seconds (HDR precision: mean × count)
}

// LiveBuckets returns the buckets of the latency so far at bounds
// (seconds, ascending). Safe during a run, like Live: it copies the
// histogram's counts under the lock (tens of µs) and walks the copy after,
// so the folding goroutine waits no longer than the copy. It costs about
// 1.5 MB of garbage and 0.4 ms: for scrapes, not for every tick.
func (r *Recorder) LiveBuckets(bounds []float64) Buckets {
	r.mu.Lock()
	snap := r.f.latency.Export()
	r.mu.Unlock()
	h := hdrhistogram.Import(snap)
	b := Buckets{Bounds: bounds, Counts: make([]int64, len(bounds)), Count: h.TotalCount()}
	b.SumS = h.Mean() * float64(b.Count) / 1e6
	if b.Count == 0 {
		return b
	}
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		top := float64(bar.To) / 1e6 // µs to s
		for i := len(bounds) - 1; i >= 0 && top <= bounds[i]; i-- {
			b.Counts[i] += bar.Count
		}
	}
	return b
}
