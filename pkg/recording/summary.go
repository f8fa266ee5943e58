package recording

import (
	"strconv"
	"time"

	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
)

// Meta is what a summary needs to know about the run that the results do
// not say: the engine's counters as they came, and the load asked for.
type Meta struct {
	// Run are the engine's counters; a zero Run.Started means the earliest
	// due time.
	Run        result.Counters
	Model      string   // load model: "closed", "rate" or "recorded"
	TargetRate *float64 // requested iterations per second; nil without a rate
	// Unit is the unit the rates were written in; PerIteration the mean
	// number of requests an iteration of the run holds, which converts
	// them (schedule.Load.InIterations).
	Unit         schedule.Unit
	PerIteration float64
	// LateAfter is the lateness past which Run.Late counts a request.
	LateAfter time.Duration
	// Steps are the run's --stages, in order (see Recorder.Steps); nil
	// without stages.
	Steps []StepPlan
}

// setTimes sets the summary's durations and the rates over them, of a run
// that started at started and began iterations: vegeta's definitions, the
// run issues until the last request was due, then waits for the last
// answers. Rates run over the whole wall time, waiting included: a SUT that
// answers a burst and then hangs until the requests time out is not fast.
func (f *fold) setTimes(s *report.Summary, started time.Time, iterations int64) {
	start := started.UnixNano()
	dur := f.maxDue - start
	if dur <= 0 { // one request, or all due at the start
		dur = f.maxEnd - start
	}
	dur = max(dur, 0)
	wait := max(f.maxEnd-(start+dur), 0)
	s.DurationS = float64(dur) / 1e9
	s.WaitS = float64(wait) / 1e9
	s.WallS = float64(dur+wait) / 1e9
	s.SetRates()
	if dur > 0 {
		s.IterationRate = float64(iterations) / s.DurationS
		s.RequestRate = float64(f.requests) / s.DurationS
	}
}

// Summary closes r if Close was not called, waits until every result is
// folded, and returns the summary of the run described by m: what was
// folded (counts, histograms, intervals, steps, timings) and what m says
// (the engine's counters, the model, the target, the schedule's lag).
func (r *Recorder) Summary(m Meta) *report.Summary {
	r.Close()
	f := r.f
	// Closing the last intervals writes what Live reads: a metrics
	// scrape may come while the summary is made.
	r.mu.Lock()
	f.closeIntervals(f.newestSec)
	r.mu.Unlock()

	started := m.Run.Started
	if started.IsZero() && f.seen {
		started = time.Unix(0, f.minDue)
	}
	s := &report.Summary{
		Version:     report.SummaryVersion,
		Started:     started.UTC(),
		Model:       m.Model,
		TargetRate:  m.TargetRate,
		Requests:    f.requests,
		Succeeded:   f.succeeded,
		Failed:      f.failed,
		Answered:    f.answered,
		Dropped:     m.Run.Dropped,
		Late:        m.Run.Late,
		Reconnects:  f.reconnects,
		Backoffs:    m.Run.Backoffs,
		VUsMax:      m.Run.VUs,
		BytesIn:     f.bytesIn,
		BytesOut:    f.bytesOut,
		Connections: f.connections,
		Downgraded:  f.downgraded,
		Upgraded:    f.upgraded,
		Retried:     f.retried,
		Unsent:      f.unsent,
		Redirects:   f.redirects,
		Clamped:     f.clamped,
		Iterations:  m.Run.Iterations,
		OutOfOrder:  m.Run.OutOfOrder,

		Unsolicited:   f.unsolicited,
		RedirectLimit: f.redirectLimit,

		Latency:       hist.LatencyOf(f.latency),
		Service:       hist.LatencyOf(f.service),
		Status:        make(map[string]int64, len(f.status)),
		StatusLatency: make(map[string]report.Latency, len(f.status)),
		Errors:        errorCounts(&f.errors),
		GRPCStatus:    grpcCounts(f.grpc),
		Endpoints:     []report.Endpoint{},

		ConnectionsByProtocol: protoCounts(&f.connsByProto),

		Histogram:        hist.Encode(f.latency),
		ServiceHistogram: hist.Encode(f.service),
		Intervals:        f.intervals,
		WebSocket:        f.wsSummary(),
	}

	if f.seen {
		f.setTimes(s, started, m.Run.Iterations)
	}
	s.RequestsPerIteration = m.PerIteration
	if m.TargetRate != nil {
		s.RateUnit = m.Unit.String()
		s.SetTargetRequestRate()
	}
	var stopped time.Duration
	if m.Run.Interrupted && !m.Run.Stopped.IsZero() {
		stopped = max(m.Run.Stopped.Sub(started), time.Nanosecond)
	}
	s.Steps = f.stepSummaries(m.Steps, stopped)
	if p := f.phases; p != nil {
		s.Timings = &report.Timings{
			Connecting: hist.LatencyOf(p[phaseConnect]), TLSHandshaking: hist.LatencyOf(p[phaseTLS]),
			Sending: hist.LatencyOf(p[phaseSend]), Waiting: hist.LatencyOf(p[phaseWait]), Receiving: hist.LatencyOf(p[phaseReceive]),
		}
	}
	if m.Model == "rate" || m.Model == "recorded" {
		s.Schedule = &report.Schedule{
			Scheduled: m.Run.Scheduled, LagMeanMS: durMS(m.Run.LagMean), LagMaxMS: durMS(m.Run.LagMax), LateAfterMS: durMS(m.LateAfter),
			LagP50MS: durMS(m.Run.LagP50), LagP99MS: durMS(m.Run.LagP99),
		}
	}

	for code, st := range f.status {
		k := strconv.Itoa(int(code))
		s.Status[k] = st.count
		s.StatusLatency[k] = hist.LatencyOf(st.latency)
	}
	for i, ep := range f.endpoints {
		if ep == nil || ep.requests == 0 {
			continue
		}
		e := report.Endpoint{
			Name:       f.names[i],
			Requests:   ep.requests,
			Succeeded:  ep.succeeded,
			Failed:     ep.failed,
			Answered:   ep.answered,
			Latency:    hist.LatencyOf(ep.latency),
			Status:     make(map[string]int64, len(ep.status)),
			Errors:     errorCounts(&ep.errors),
			GRPCStatus: grpcCounts(ep.grpc),
			Histogram:  hist.Encode(ep.latency),
		}
		for code, n := range ep.status {
			e.Status[strconv.Itoa(int(code))] = n
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	return s
}

// errorCounts returns the non-zero counts of errs by kind name.
func errorCounts(errs *[result.NumErrorKinds]int64) map[string]int64 {
	m := make(map[string]int64)
	for k, n := range errs {
		if k != int(result.ErrNone) && n != 0 {
			m[result.ErrorKind(k).String()] = n
		}
	}
	return m
}

// grpcCounts returns the gRPC answers by code name; nil when there were
// none, so that the summary leaves grpc_status out.
func grpcCounts(codes map[uint8]int64) map[string]int64 {
	if len(codes) == 0 {
		return nil
	}
	m := make(map[string]int64, len(codes))
	for c, n := range codes {
		m[result.GRPCCodeName(c)] = n
	}
	return m
}

// protoCounts returns the connections opened by protocol name.
func protoCounts(by *[3]int64) map[string]int64 {
	m := make(map[string]int64)
	for p, n := range by {
		if n != 0 {
			m[report.ProtocolName(uint8(p))] = n
		}
	}
	return m
}

// durMS is d in milliseconds, to the microsecond.
func durMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
