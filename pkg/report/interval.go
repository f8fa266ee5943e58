package report

import "github.com/HdrHistogram/hdrhistogram-go"

// Interval is one second of a run, on wall-clock seconds, so the intervals
// of shards line up:
//
//	{"t": 1795356951, "requests": 2000, "errors": 3, "status": {"2xx": 1990, "5xx": 7}, "vus": 50,
//	 "latency_ms": {"p50": 0.9, "p90": 1.8, "p99": 4.9, "max": 12}, "histogram": "HISTF...",
//	 "failed": {"timeout": 3}, "failed_histogram": "HISTF...", "grpc_status": {"OK": 40}}
//
// A request belongs to the second its answer (or its error) ended in. The
// latency and its histogram (from due time, compressed) are those of the
// answered requests; the requests that failed without an answer are
// counted beside them by kind (failed), with the histogram of their time
// to failure (End − Due), so that timeouts show on the timeline. The
// histograms keep an hour-long run small and let intervals merge exactly.
type Interval struct {
	T         int64            `json:"t"` // Unix seconds of the interval's start
	Requests  int64            `json:"requests"`
	Errors    int64            `json:"errors"` // requests without an answer
	Status    map[string]int64 `json:"status"` // answers by class: "2xx"...
	VUs       int              `json:"vus"`    // VUs that finished a request in this second
	Latency   IntervalLatency  `json:"latency_ms"`
	Histogram string           `json:"histogram"`
	// Failed counts the requests without an answer by error kind; their
	// sum is Errors. Absent when there were none.
	Failed map[string]int64 `json:"failed,omitempty"`
	// FailedHistogram is their time to failure from due time, µs, in the
	// encoding of Histogram; absent when there were none.
	FailedHistogram string `json:"failed_histogram,omitempty"`
	// GRPCStatus counts the answers to gRPC calls by grpc-status name
	// ({"OK": 1990, "UNAVAILABLE": 7}): their HTTP class in Status says
	// little, a gRPC error comes with 200. Absent when there were none.
	GRPCStatus map[string]int64 `json:"grpc_status,omitempty"`
	// GRPCFailed counts the gRPC answers that failed (grpc-status not
	// OK) with an HTTP status below 400, which Status counts as 2xx or
	// 3xx: failures = Errors + 4xx + 5xx + GRPCFailed.
	GRPCFailed int64 `json:"grpc_failed,omitempty"`
}

// IntervalLatency is the latency of an interval, in ms.
type IntervalLatency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// IntervalLatencyOf is the latency of a second from its histogram (µs).
func IntervalLatencyOf(h *hdrhistogram.Histogram) IntervalLatency {
	return IntervalLatency{P50: msOf(h.ValueAtQuantile(50)), P90: msOf(h.ValueAtQuantile(90)),
		P99: msOf(h.ValueAtQuantile(99)), Max: msOf(h.Max())}
}
