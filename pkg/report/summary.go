package report

import (
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// SummaryVersion is the version of the summary JSON contract. It changes
// only when a field is renamed or dropped, or its meaning changes; adding
// fields keeps it. Version 2: latency, rps and their thresholds describe
// answered requests only (answered), and rates run over the wall time
// (wall_s). ReadSummary reads versions 1 and 2.
const SummaryVersion = 2

// Meta is what a Summary needs to know about the run that the results do
// not say: the engine's counters as they came, and the load asked for.
type Meta struct {
	// Run are the engine's counters; a zero Run.Started means the earliest
	// due time.
	Run        result.Counters
	Model      string   // load model: "closed", "rate" or "recorded"
	TargetRate *float64 // requested iterations per second; nil without a rate
	// LateAfter is the lateness past which Run.Late counts a request.
	LateAfter time.Duration
	// Steps are the run's --stages, in order (see Recorder.Steps); nil
	// without stages.
	Steps []StepPlan
}

// Summary is the outcome of a run as plain data: the summary JSON of
// DESIGN.md ("run --out"), a contract users script against and shards
// merge through. Fields may be added; renaming or dropping one needs a new
// Version. Render it with WriteJSON or WriteText.
//
// Times are in the unit their name says (_s seconds, _ms milliseconds);
// latencies come from the µs histograms, so they carry HDR precision (3
// significant digits).
type Summary struct {
	Version    int       `json:"version"`     // SummaryVersion
	Started    time.Time `json:"started"`     // RFC 3339, UTC
	DurationS  float64   `json:"duration_s"`  // issuing: last due time − Started (last end − Started if that is ≤ 0)
	WaitS      float64   `json:"wait_s"`      // last end − (Started + DurationS): waiting for the last answers
	WallS      float64   `json:"wall_s"`      // last end (answer or error) − Started: what rates divide by
	Model      string    `json:"model"`       // Meta.Model
	TargetRate *float64  `json:"target_rate"` // null without a rate
	Requests   int64     `json:"requests"`    // requests begun: Succeeded + Failed
	Succeeded  int64     `json:"succeeded"`   // HTTP status below 400; gRPC: grpc-status 0
	Failed     int64     `json:"failed"`      // status ≥ 400 (gRPC: grpc-status not 0), or an error
	Answered   int64     `json:"answered"`    // requests that got an answer, whatever its status: Requests − Σ Errors
	RPS        float64   `json:"rps"`         // Answered / WallS
	Throughput float64   `json:"throughput"`  // Succeeded / WallS
	Dropped    int64     `json:"dropped"`     // Meta.Dropped; never part of Requests
	Late       int64     `json:"late"`        // Meta.Late
	Reconnects int64     `json:"reconnects"`  // connections opened to replace one of the same VU
	VUsMax     int       `json:"vus_max"`     // Meta.VUsMax
	BytesIn    int64     `json:"bytes_in"`    // response bytes read
	BytesOut   int64     `json:"bytes_out"`   // request bytes written

	Connections int64 `json:"connections"` // connections opened
	// ConnectionsByProtocol splits Connections by the protocol spoken on
	// them, by ALPN name: {"http/1.1": 2, "h2": 48}.
	ConnectionsByProtocol map[string]int64 `json:"connections_by_protocol"`
	Downgraded            int64            `json:"downgraded"` // pairs recorded as HTTP/2, sent as HTTP/1.1
	Upgraded              int64            `json:"upgraded"`   // pairs recorded as HTTP/1.x (or no version), sent as HTTP/2
	// Retried counts the one retry replay makes: requests the SUT declared
	// unprocessed (HTTP/2 GOAWAY above their stream, REFUSED_STREAM), sent
	// again once on a new connection. Each is counted once in Requests.
	Retried   int64 `json:"retried"`
	Unsent    int64 `json:"unsent"`    // requests that put no byte on the wire (connect errors aside)
	Redirects int64 `json:"redirects"` // requests that followed a redirect (--follow-redirects); part of Requests
	Clamped   int64 `json:"clamped"`   // requests that took over an hour, recorded as one hour

	// Unsolicited counts connections closed because the SUT sent bytes no
	// request asked for (more than a complete answer, or anything on an
	// idle connection); RedirectLimit counts requests whose answer asked
	// for a redirect past --follow-redirects (the chain was cut there).
	Unsolicited   int64 `json:"unsolicited,omitempty"`
	RedirectLimit int64 `json:"redirect_limit,omitempty"`
	// Backoffs counts the VUs' waits after a failed connect (1 ms doubling
	// to 100 ms, per VU) instead of retrying a refused port at once.
	Backoffs int64 `json:"backoffs,omitempty"`

	Timings *Timings `json:"timings_ms,omitempty"` // --timings: the phases of a request
	// Intervals are the run second by second.
	Intervals []Interval `json:"intervals,omitempty"`
	// Steps are the run step by step (--stages): see Step.
	Steps []Step `json:"steps,omitempty"`
	// Compare is the comparison with the recorded responses (--compare).
	Compare *Compare `json:"compare,omitempty"`
	// E2E is the end-to-end section: events followed through the SUT to
	// sinks (--sink-http, --sink-redis).
	E2E *e2e.Summary `json:"e2e,omitempty"`
	// Transforms are what each transform did (--transforms and its flags),
	// in chain order.
	Transforms []Transform `json:"transforms,omitempty"`
	// Thresholds are the --threshold results, in the order given.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	// Skipped counts the lines of the traffic file that were valid but not
	// replayed, by kind (another protocol, response-only, gRPC, OUT);
	// absent when none was. It describes the file: a merge takes it once.
	Skipped *Skipped `json:"skipped,omitempty"`

	Iterations    int64     `json:"iterations"`                // iterations begun
	IterationRate float64   `json:"iteration_rate"`            // Iterations / DurationS: the achieved rate
	Schedule      *Schedule `json:"schedule,omitempty"`        // open models (rate, recorded)
	OutOfOrder    int       `json:"ts_out_of_order,omitempty"` // recorded pacing: iterations listed before earlier ones

	Latency Latency          `json:"latency_ms"` // answered, End − Due: from when the request was due
	Service Latency          `json:"service_ms"` // answered, End − Sent: from its first byte written
	Status  map[string]int64 `json:"status"`     // requests answered, by HTTP status: {"202": 119950}
	// GRPCStatus counts the answers to gRPC calls by grpc-status name
	// ({"OK": 10, "NOT_FOUND": 2}; a code without a name by its number);
	// absent when there were none. Those answers are in Status too, by
	// their HTTP status; all but "OK" are failed.
	GRPCStatus    map[string]int64   `json:"grpc_status,omitempty"`
	StatusLatency map[string]Latency `json:"status_latency_ms"` // latency by HTTP status
	Errors        map[string]int64   `json:"errors"`            // requests not answered, by kind: {"timeout": 10}
	Endpoints     []Endpoint         `json:"endpoints"`         // in endpoint table order, those with requests

	Histogram        string `json:"histogram"`         // latency, µs, HdrHistogram V2 compressed base64 ("HISTF...")
	ServiceHistogram string `json:"service_histogram"` // service time, same encoding

	// LatencyWithFailed is set on a summary read from version 1 (or merged
	// with one) that had requests fail without an answer: its latencies
	// include their time to failure, which version 1 did not keep apart.
	LatencyWithFailed bool `json:"latency_includes_failed,omitempty"`

	// Settings are the run's configuration as the HTML report shows it
	// (the target, the load, the file...). They are not written to the
	// JSON: a summary read back, or merged, has none.
	Settings []Setting `json:"-"`
}

// Setting is one line of the run's configuration shown in the HTML report.
type Setting struct{ Name, Value string }

// Transform is what one rewrite did over the run (result.TransformCount):
// the summary's "transforms" entries.
type Transform = result.TransformCount

// Skipped is the summary's "skipped" section (rrpair.Skipped):
//
//	{"protocol": {"postgres": 12}, "response_only": 3, "direction_out": 7}
type Skipped = rrpair.Skipped

// Timings are the phases of requests (--timings), k6's http_req_connecting,
// _tls_handshaking, _sending, _waiting and _receiving. Connecting and
// TLSHandshaking count only the requests that opened a connection.
type Timings struct {
	Connecting     Latency `json:"connecting"`
	TLSHandshaking Latency `json:"tls_handshaking"`
	Sending        Latency `json:"sending"`
	Waiting        Latency `json:"waiting"` // time to first byte
	Receiving      Latency `json:"receiving"`
}

// Schedule tells how an open model kept its schedule:
//
//	{"scheduled": 20000, "lag_mean_ms": 0.05, "lag_p50_ms": 0.04, "lag_p99_ms": 0.9,
//	 "lag_max_ms": 1.2, "late_after_ms": 10}
//
// Lag is how long after its due time the scheduler handed an iteration to
// a VU: the granularity this machine's timers allowed. Latency counts it
// (it runs from the due time).
type Schedule struct {
	Scheduled   int64   `json:"scheduled"` // iterations that came due: iterations + dropped
	LagMeanMS   float64 `json:"lag_mean_ms"`
	LagMaxMS    float64 `json:"lag_max_ms"`
	LateAfterMS float64 `json:"late_after_ms"` // a request begun later than this after due is late
	// LagP50MS and LagP99MS are the lag's percentiles; a merge of shards
	// keeps the worst shard's (an upper bound).
	LagP50MS float64 `json:"lag_p50_ms"`
	LagP99MS float64 `json:"lag_p99_ms"`
}

// Latency is a latency distribution in milliseconds (hist.Latency), as in
//
//	{"min": 0.2, "mean": 1.1, "p50": 0.9, "p90": 1.8, "p95": 2.3, "p99": 4.9, "p999": 12.0, "max": 40.1}
//
// All zero when nothing was recorded. It is defined in package hist, which
// the end-to-end tracker shares, so that every latency section of a Summary
// has the one type.
type Latency = hist.Latency

// Endpoint is the share of one endpoint of the file's table.
type Endpoint struct {
	Name      string           `json:"name"` // "POST /events"
	Requests  int64            `json:"requests"`
	Succeeded int64            `json:"succeeded"`
	Failed    int64            `json:"failed"`
	Answered  int64            `json:"answered"`   // requests with an answer, whatever its status
	Latency   Latency          `json:"latency_ms"` // answered requests
	Status    map[string]int64 `json:"status"`
	// GRPCStatus counts its gRPC answers by grpc-status name; absent
	// when there were none.
	GRPCStatus map[string]int64 `json:"grpc_status,omitempty"`
	Errors     map[string]int64 `json:"errors"`
	Histogram  string           `json:"histogram"` // its latency histogram, so endpoints merge exactly
}

// Summary closes r if Close was not called, waits until every result is
// folded, and returns the summary of the run described by m.
func (r *Recorder) Summary(m Meta) *Summary {
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
	s := &Summary{
		Version:     SummaryVersion,
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

		Latency:       latencyOf(f.latency),
		Service:       latencyOf(f.service),
		Status:        make(map[string]int64, len(f.status)),
		StatusLatency: make(map[string]Latency, len(f.status)),
		Errors:        errorCounts(&f.errors),
		GRPCStatus:    grpcCounts(f.grpc),
		Endpoints:     []Endpoint{},

		ConnectionsByProtocol: protoCounts(&f.connsByProto),

		Histogram:        encodeHistogram(f.latency),
		ServiceHistogram: encodeHistogram(f.service),
		Intervals:        f.intervals,
	}

	if f.seen {
		// vegeta's definitions: the run issues until the last request was
		// due, then waits for the last answers. Rates run over the whole
		// wall time, waiting included: a SUT that answers a burst and then
		// hangs until the requests time out is not fast.
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
		s.RPS, s.Throughput = rates(s.Answered, s.Succeeded, s.WallS)
		if dur > 0 {
			s.IterationRate = float64(m.Run.Iterations) / s.DurationS
		}
	}
	var stopped time.Duration
	if m.Run.Interrupted && !m.Run.Stopped.IsZero() {
		stopped = max(m.Run.Stopped.Sub(started), time.Nanosecond)
	}
	s.Steps = f.stepSummaries(m.Steps, stopped)
	if p := f.phases; p != nil {
		s.Timings = &Timings{
			Connecting: latencyOf(p[phaseConnect]), TLSHandshaking: latencyOf(p[phaseTLS]),
			Sending: latencyOf(p[phaseSend]), Waiting: latencyOf(p[phaseWait]), Receiving: latencyOf(p[phaseReceive]),
		}
	}
	if m.Model == "rate" || m.Model == "recorded" {
		s.Schedule = &Schedule{
			Scheduled: m.Run.Scheduled, LagMeanMS: durMS(m.Run.LagMean), LagMaxMS: durMS(m.Run.LagMax), LateAfterMS: durMS(m.LateAfter),
			LagP50MS: durMS(m.Run.LagP50), LagP99MS: durMS(m.Run.LagP99),
		}
	}

	for code, st := range f.status {
		k := strconv.Itoa(int(code))
		s.Status[k] = st.count
		s.StatusLatency[k] = latencyOf(st.latency)
	}
	for i, ep := range f.endpoints {
		if ep == nil || ep.requests == 0 {
			continue
		}
		e := Endpoint{
			Name:       f.names[i],
			Requests:   ep.requests,
			Succeeded:  ep.succeeded,
			Failed:     ep.failed,
			Answered:   ep.answered,
			Latency:    latencyOf(ep.latency),
			Status:     make(map[string]int64, len(ep.status)),
			Errors:     errorCounts(&ep.errors),
			GRPCStatus: grpcCounts(ep.grpc),
			Histogram:  encodeHistogram(ep.latency),
		}
		for code, n := range ep.status {
			e.Status[strconv.Itoa(int(code))] = n
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	return s
}

// rates returns rps (answered requests a second) and throughput
// (succeeded requests a second) over wall seconds; zero without a wall time.
func rates(answered, succeeded int64, wall float64) (rps, throughput float64) {
	if wall <= 0 {
		return 0, 0
	}
	return float64(answered) / wall, float64(succeeded) / wall
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
		if n != 0 && protoNames[p] != "" {
			m[protoNames[p]] = n
		}
	}
	return m
}

// latencyOf summarizes a µs histogram in milliseconds.
func latencyOf(h *hdrhistogram.Histogram) Latency { return hist.LatencyOf(h) }

// msOf converts µs to ms.
func msOf(us int64) float64 { return float64(us) / 1000 }

func durMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
