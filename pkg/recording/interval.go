package recording

import (
	"math/bits"
	"strconv"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
)

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

// addAnswer folds an answered r into the interval: its status class, its
// latency and its gRPC status.
func (iv *intervalFold) addAnswer(r *result.Result) {
	class := int(r.Status) / 100
	if class < 1 || class > 5 {
		class = 0
	}
	iv.class[class]++
	hist.RecordNanos(iv.latency, r.End-r.Due)
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
		if hist.RecordNanos(iv.failedLatency, r.End-r.Due) {
			f.clamped++
		}
	} else {
		iv.addAnswer(r)
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
		out := report.Interval{T: s, Requests: iv.requests, Errors: iv.errors, Status: map[string]int64{}, VUs: vus,
			Latency:    report.IntervalLatencyOf(iv.latency),
			Histogram:  hist.Encode(iv.latency),
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
			out.FailedHistogram = hist.Encode(iv.failedLatency)
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
