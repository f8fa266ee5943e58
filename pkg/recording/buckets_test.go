package recording

import (
	"sync"
	"testing"

	"github.com/replay-dev/replay/pkg/result"
)

// TestLiveDuringSummary: a scrape (Live, LiveBuckets) while the summary is
// made, as a metrics endpoint that outlives its run does, is no race.
func TestLiveDuringSummary(t *testing.T) {
	r := NewRecorder(nil)
	for i := int64(1); i <= 3000; i++ {
		r.Record(result.Result{End: i * 1e6 * 3, Status: 200}) // over 9 seconds: intervals still open
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				r.Live()
				r.LiveBuckets([]float64{0.001, 1})
			}
		}
	})
	s := r.Summary(Meta{})
	close(stop)
	wg.Wait()
	b := r.LiveBuckets([]float64{0.5, 1, 10})
	if b.Count != 3000 || b.Counts[2] != 3000 || b.Counts[0] > b.Counts[1] || s.Requests != 3000 {
		t.Errorf("buckets %+v, summary requests %d; want 3000 each, cumulative", b, s.Requests)
	}
}

// BenchmarkLiveBuckets is one scrape's cost, the recorder's lock held,
// with latencies spread from 1 ms to 10 s.
func BenchmarkLiveBuckets(b *testing.B) {
	r := NewRecorder(nil)
	for i := int64(1); i <= 10000; i++ {
		r.Record(result.Result{End: i * i * 100, Status: 200})
	}
	r.Close()
	bounds := []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	b.ReportAllocs()
	for b.Loop() {
		r.LiveBuckets(bounds)
	}
}
