package recording

import (
	"sync/atomic"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
)

// fold is the state a Recorder accumulates: HDR histograms and counters.
// It is owned by the folding goroutine: add is called from that goroutine
// only, and nothing else touches a fold until that goroutine has exited.
// So there are no locks.
type fold struct {
	names    []string // endpoint table, plus rrpair.OtherEndpoint if it lacked one
	otherIdx int      // index in names for an out-of-table endpoint

	latency *hdrhistogram.Histogram // End−Due, µs
	service *hdrhistogram.Histogram // End−Sent, µs

	endpoints []*endpointFold        // by index in names; nil until its first result
	status    map[uint16]*statusFold // by HTTP status, for Err == ErrNone
	errors    [result.NumErrorKinds]int64
	grpc      map[uint8]int64 // gRPC answers (Result.GRPC) by grpc-status

	requests, succeeded, failed int64
	answered                    int64 // Err == ErrNone, whatever the status
	bytesIn, bytesOut           int64
	reconnects, connections     int64
	downgraded, unsent          int64
	upgraded, retried           int64
	redirects                   int64
	// connsByProto counts the connections opened by protocol
	// (Result.Proto, by protoIndex).
	connsByProto [3]int64
	clamped      int64 // results whose latency or service time exceeded an hour

	// Connection faults (result.Result.Unsolicited, RedirectLimit).
	unsolicited, redirectLimit int64

	// Per-second intervals: the open ones, by Unix second, and the closed
	// ones, compressed.
	open                  map[int64]*intervalFold
	intervals             []report.Interval
	closedUpTo, newestSec int64
	spare                 hist.Pool // the histograms of closed intervals, for new ones

	// Phase timings (--timings): nil until the first result that has them.
	phases *[numPhases]*hdrhistogram.Histogram

	// Steps (--stages): the schedule that says which step an offset from
	// base (the run's start, Unix ns, set by Recorder.Start) falls in, and
	// the steps' shares. Empty without stages.
	plan  *schedule.Schedule
	steps []stepFold
	base  atomic.Int64

	// The WebSocket sessions (websocket.go): nil until the first.
	ws          *wsFold
	wsEndpoints []*wsFold

	seen                   bool // a result has been folded: the times below are set
	minDue, maxDue, maxEnd int64
}

// endpointFold is the share of one endpoint.
type endpointFold struct {
	requests, succeeded, failed int64
	answered                    int64
	status                      map[uint16]int64
	errors                      [result.NumErrorKinds]int64
	grpc                        map[uint8]int64 // nil until its first gRPC answer
	latency                     *hdrhistogram.Histogram
}

// statusFold is the share of one HTTP status.
type statusFold struct {
	count   int64
	latency *hdrhistogram.Histogram
}

// newFold returns an empty fold for the endpoint table names.
func newFold(names []string) *fold {
	f := &fold{
		latency: hist.New(),
		service: hist.New(),
		status:  make(map[uint16]*statusFold),
		grpc:    make(map[uint8]int64),
		open:    make(map[int64]*intervalFold),
	}
	f.names = append(f.names, names...)
	f.otherIdx = -1
	for i := len(f.names) - 1; i >= 0; i-- {
		if f.names[i] == rrpair.OtherEndpoint {
			f.otherIdx = i
			break
		}
	}
	if f.otherIdx < 0 {
		f.names = append(f.names, rrpair.OtherEndpoint)
		f.otherIdx = len(f.names) - 1
	}
	f.endpoints = make([]*endpointFold, len(f.names))
	return f
}

// add folds one result. It allocates only the first time it meets an
// endpoint or a status.
//
// Latency and service time are those of answered requests (Err ==
// ErrNone, whatever the status): a request that failed without an answer
// has no latency, only a time to failure, which its interval keeps beside
// the answers' (addInterval). So a refused connection is not a fast
// request, and a run where nothing answered has no latency at all.
func (f *fold) add(r result.Result) {
	if r.WS != result.WSNone {
		f.addWS(&r)
		return
	}
	latency := r.End - r.Due
	service := r.End - r.Sent
	answered := r.Err == result.ErrNone
	if answered {
		c1 := hist.RecordNanos(f.latency, latency)
		c2 := hist.RecordNanos(f.service, service)
		if c1 || c2 {
			f.clamped++
		}
		f.answered++
	}

	ok := r.Succeeded()
	f.requests++
	if ok {
		f.succeeded++
	} else {
		f.failed++
	}
	f.bytesIn += r.BytesIn
	f.bytesOut += r.BytesOut
	f.addFlags(&r)

	kind := kindIndex(r.Err)
	if len(f.steps) > 0 {
		f.addStep(&r, kind, ok)
	}
	if kind == 0 {
		f.addStatus(&r, latency)
	} else {
		f.errors[kind]++
	}
	f.endpoint(r.Endpoint).add(&r, kind, ok, latency)

	if r.SendNs != 0 || r.ConnectNs != 0 {
		f.addPhases(&r)
	}
	f.addInterval(&r)
	f.addSpan(&r)
}

// add counts r, of kind (0: answered), in its endpoint, with its latency
// when answered.
func (ep *endpointFold) add(r *result.Result, kind int, ok bool, latency int64) {
	ep.requests++
	if ok {
		ep.succeeded++
	} else {
		ep.failed++
	}
	if kind != 0 {
		ep.errors[kind]++
		return
	}
	ep.status[r.Status]++
	ep.answered++
	if r.GRPC {
		if ep.grpc == nil {
			ep.grpc = make(map[uint8]int64)
		}
		ep.grpc[r.GRPCStatus]++
	}
	hist.RecordNanos(ep.latency, latency)
}

// addFlags counts what r says happened to its request beside its answer:
// connections, reconnects, protocol changes, retries, redirects, bytes no
// request asked for, and a request that put no byte on the wire.
func (f *fold) addFlags(r *result.Result) {
	if r.Reconnect {
		f.reconnects++
	}
	if r.Connected {
		f.connections++
		f.connsByProto[protoIndex(r.Proto)]++
	}
	if r.Downgraded {
		f.downgraded++
	}
	if r.Upgraded {
		f.upgraded++
	}
	if r.Retried {
		f.retried++
	}
	if r.Redirect {
		f.redirects++
	}
	if r.Unsolicited {
		f.unsolicited++
	}
	if r.RedirectLimit {
		f.redirectLimit++
	}
	if r.Err != result.ErrConnect && !r.Written {
		f.unsent++
	}
}

// addStatus counts an answered r by its status (and gRPC status), with
// its latency.
func (f *fold) addStatus(r *result.Result, latency int64) {
	s := f.status[r.Status]
	if s == nil {
		s = &statusFold{latency: hist.New()}
		f.status[r.Status] = s
	}
	s.count++
	hist.RecordNanos(s.latency, latency)
	if r.GRPC {
		f.grpc[r.GRPCStatus]++
	}
}

// addSpan widens the span of due and end times the fold has seen to r's.
func (f *fold) addSpan(r *result.Result) {
	if !f.seen {
		f.seen = true
		f.minDue, f.maxDue, f.maxEnd = r.Due, r.Due, r.End
		return
	}
	f.minDue = min(f.minDue, r.Due)
	f.maxDue = max(f.maxDue, r.Due)
	f.maxEnd = max(f.maxEnd, r.End)
}

// protoIndex is p as an index into fold.connsByProto. A connection whose
// result does not name its protocol (0) is HTTP/1.1: the one protocol of
// the transports that came before Result.Proto.
func protoIndex(p uint8) int {
	if p == result.ProtoHTTP2 {
		return int(result.ProtoHTTP2)
	}
	return int(result.ProtoHTTP1)
}

// endpoint returns the share of endpoint index i, creating it on first use;
// an index outside the table is the "other" endpoint.
func (f *fold) endpoint(i uint16) *endpointFold {
	idx := int(i)
	if idx >= len(f.names) {
		idx = f.otherIdx
	}
	ep := f.endpoints[idx]
	if ep == nil {
		ep = &endpointFold{status: make(map[uint16]int64), latency: hist.New()}
		f.endpoints[idx] = ep
	}
	return ep
}

// kindIndex returns k as an index into an errors array: an unknown kind
// counts as result.ErrOther, like its name.
func kindIndex(k result.ErrorKind) int {
	if int(k) >= result.NumErrorKinds {
		return int(result.ErrOther)
	}
	return int(k)
}

// The phases of a request, in the order of Timings' fields.
const (
	phaseConnect = iota
	phaseTLS
	phaseSend
	phaseWait
	phaseReceive
	numPhases
)

// addPhases folds the phase timings of r. A connect or TLS phase is folded
// only for requests that opened a connection (a reused one has none).
func (f *fold) addPhases(r *result.Result) {
	if f.phases == nil {
		f.phases = new([numPhases]*hdrhistogram.Histogram)
		for i := range f.phases {
			f.phases[i] = hist.New()
		}
	}
	if r.Connected {
		hist.RecordNanos(f.phases[phaseConnect], r.ConnectNs)
		if r.TLSNs != 0 {
			hist.RecordNanos(f.phases[phaseTLS], r.TLSNs)
		}
	}
	if r.Written {
		hist.RecordNanos(f.phases[phaseSend], r.SendNs)
	}
	if r.Err == result.ErrNone {
		hist.RecordNanos(f.phases[phaseWait], r.WaitNs)
		hist.RecordNanos(f.phases[phaseReceive], r.ReceiveNs)
	}
}
