package report

import (
	"math/bits"
	"strconv"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/result"
)

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

// intervalFold is an open interval. Owned by the folding goroutine.
type intervalFold struct {
	requests, errors int64
	class            [6]int64
	latency          *hdrhistogram.Histogram // answered
	failed           [result.NumErrorKinds]int64
	failedLatency    *hdrhistogram.Histogram // time to failure; nil until the first
	grpc             map[uint8]int64         // gRPC answers by code; nil until the first
	grpcFailed       int64                   // failed gRPC answers with a status below 400
	vus              []uint64                // bit set of the VUs seen
}

// intervalDelay is how long after its end an interval stays open for
// answers that arrive late to the recorder.
const intervalDelay = 2

// addInterval folds r into its second's interval, closing the intervals
// old enough that no more answers will come for them.
func (f *fold) addInterval(r *result.Result) {
	sec := r.End / 1e9
	if f.closedUpTo != 0 && sec <= f.closedUpTo {
		sec = f.closedUpTo + 1 // too late for its own second: counted in the next open one
	}
	iv := f.open[sec]
	if iv == nil {
		iv = &intervalFold{latency: f.spare.Get()}
		f.open[sec] = iv
	}
	iv.requests++
	if w := int(r.VU / 64); w < 1<<16 { // up to a few million VUs
		for len(iv.vus) <= w {
			iv.vus = append(iv.vus, 0)
		}
		iv.vus[w] |= 1 << (r.VU % 64)
	}
	if r.Err != result.ErrNone {
		iv.errors++
		iv.failed[kindIndex(r.Err)]++
		if iv.failedLatency == nil {
			iv.failedLatency = f.spare.Get()
		}
		if recordNanos(iv.failedLatency, r.End-r.Due) {
			f.clamped++
		}
	} else {
		class := int(r.Status) / 100
		if class < 1 || class > 5 {
			class = 0
		}
		iv.class[class]++
		recordNanos(iv.latency, r.End-r.Due)
		if r.GRPC {
			if iv.grpc == nil {
				iv.grpc = make(map[uint8]int64)
			}
			iv.grpc[r.GRPCStatus]++
			if r.GRPCStatus != result.GRPCOK && r.Status < 400 {
				iv.grpcFailed++
			}
		}
	}
	if sec > f.newestSec {
		f.newestSec = sec
		f.closeIntervals(sec - intervalDelay)
	}
}

// closeIntervals compresses the open intervals up to and including second
// upTo into f.intervals.
func (f *fold) closeIntervals(upTo int64) {
	for _, s := range hist.SecondsUpTo(f.open, upTo) {
		iv := f.open[s]
		delete(f.open, s)
		vus := 0
		for _, w := range iv.vus {
			vus += bits.OnesCount64(w)
		}
		out := Interval{T: s, Requests: iv.requests, Errors: iv.errors, Status: map[string]int64{}, VUs: vus,
			Latency: IntervalLatency{
				P50: msOf(iv.latency.ValueAtQuantile(50)), P90: msOf(iv.latency.ValueAtQuantile(90)),
				P99: msOf(iv.latency.ValueAtQuantile(99)), Max: msOf(iv.latency.Max()),
			},
			Histogram:  encodeHistogram(iv.latency),
			GRPCStatus: grpcCounts(iv.grpc),
			GRPCFailed: iv.grpcFailed,
		}
		for c := 1; c <= 5; c++ {
			if iv.class[c] > 0 {
				out.Status[strconv.Itoa(c)+"xx"] = iv.class[c]
			}
		}
		if iv.failedLatency != nil {
			out.Failed = errorCounts(&iv.failed)
			out.FailedHistogram = encodeHistogram(iv.failedLatency)
			f.spare.Put(iv.failedLatency)
		}
		f.intervals = append(f.intervals, out)
		f.spare.Put(iv.latency)
		iv.vus = nil
		if s > f.closedUpTo {
			f.closedUpTo = s
		}
	}
}
