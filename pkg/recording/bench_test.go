package recording

import (
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/result"
)

// benchResults is a small mix of endpoints, statuses, gRPC codes and errors to cycle
// through, so the fold meets each once before the timer matters.
func benchResults() []result.Result {
	rs := append(fixture(), grpcFixture()...)
	for i := range rs {
		rs[i].Endpoint %= uint16(len(testEndpoints) + 1)
	}
	return rs
}

// BenchmarkRecord measures the hot path a VU sees: a channel send. It must
// not allocate (0 allocs/op).
func BenchmarkRecord(b *testing.B) {
	rs := benchResults()
	r := NewRecorder(testEndpoints)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Record(rs[i%len(rs)])
	}
	b.StopTimer()
	r.Close()
}

// TestRecordDoesNotAllocate holds the hot path to zero allocations in
// every test run, not only when benchmarks run.
func TestRecordDoesNotAllocate(t *testing.T) {
	rs := benchResults()
	r := NewRecorder(testEndpoints)
	defer r.Close()
	for _, res := range rs { // the fold meets every endpoint and status
		r.Record(res)
	}
	i := 0
	allocs := testing.AllocsPerRun(10_000, func() {
		r.Record(rs[i%len(rs)])
		i++
	})
	if allocs != 0 {
		t.Errorf("got %v allocs per Record, want 0", allocs)
	}
}

// BenchmarkRecordParallel is BenchmarkRecord with every P recording at
// once, as VUs do.
func BenchmarkRecordParallel(b *testing.B) {
	rs := benchResults()
	r := NewRecorder(testEndpoints)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			r.Record(rs[i%len(rs)])
		}
	})
	b.StopTimer()
	r.Close()
}

// BenchmarkFold measures folding one result into the histograms and
// counters, which bounds the rate a Recorder sustains.
func BenchmarkFold(b *testing.B) {
	rs := benchResults()
	f := newFold(testEndpoints)
	for _, r := range rs { // meet every endpoint and status once
		f.add(r)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.add(rs[i%len(rs)])
	}
}

// BenchmarkSummary measures building a summary (histogram queries and
// encodings) after a run.
func BenchmarkSummary(b *testing.B) {
	r := record(testEndpoints, benchResults())
	m := Meta{Run: result.Counters{Started: time.Unix(0, 0)}, Model: "closed"}
	b.ReportAllocs()
	for b.Loop() {
		r.Summary(m)
	}
}
