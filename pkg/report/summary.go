package report

import (
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

// Summary is the outcome of a run as plain data: the summary JSON of
// docs/design.md ("run --out"), a contract users script against and shards
// merge through. Fields may be added; renaming or dropping one needs a new
// Version. A Recorder (package recording) makes one from a run; render it
// with a Renderer (WriteJSON, WriteText, ...).
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
	Model      string    `json:"model"`       // load model: closed, rate, recorded (mixed in a merge of several; sink for a standalone sink)
	TargetRate *float64  `json:"target_rate"` // iterations per second asked for; null without a rate
	// RateUnit is the unit the user wrote the rate in: "iterations"
	// (--rate 500/s) or "requests" (--rate 3000req/s, scheduled as
	// iterations by RequestsPerIteration); absent without a rate.
	RateUnit string `json:"rate_unit,omitempty"`
	// TargetRequestRate is TargetRate in requests a second (TargetRate ×
	// RequestsPerIteration); absent without a rate.
	TargetRequestRate *float64 `json:"target_request_rate,omitempty"`
	// RequestsPerIteration is the mean number of requests an iteration
	// of the run holds (the traffic file after the filters and the
	// shard): what converts a rate in requests to iterations, and back.
	RequestsPerIteration float64 `json:"requests_per_iteration,omitempty"`
	Requests             int64   `json:"requests"`   // requests begun: Succeeded + Failed
	Succeeded            int64   `json:"succeeded"`  // HTTP status below 400; gRPC: grpc-status 0
	Failed               int64   `json:"failed"`     // status ≥ 400 (gRPC: grpc-status not 0), or an error
	Answered             int64   `json:"answered"`   // requests that got an answer, whatever its status: Requests − Σ Errors
	RPS                  float64 `json:"rps"`        // Answered / WallS
	Throughput           float64 `json:"throughput"` // Succeeded / WallS
	// SUTCPUs is the SUT's vCPUs (--sut-cpus); with it, RPSPerVCPU and
	// ThroughputPerVCPU are RPS and Throughput divided by them (absent
	// without it).
	SUTCPUs           float64 `json:"sut_cpus,omitempty"`
	RPSPerVCPU        float64 `json:"rps_per_vcpu,omitempty"`
	ThroughputPerVCPU float64 `json:"throughput_per_vcpu,omitempty"`
	Dropped           int64   `json:"dropped"`    // iterations an open model could not start; never part of Requests
	Late              int64   `json:"late"`       // requests begun more than --late-after past their due time
	Reconnects        int64   `json:"reconnects"` // connections opened to replace one of the same VU
	VUsMax            int     `json:"vus_max"`    // the most VUs the run had
	BytesIn           int64   `json:"bytes_in"`   // response bytes read
	BytesOut          int64   `json:"bytes_out"`  // request bytes written

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
	// StepsVerdict says where the steps stopped keeping up (JudgeSteps);
	// absent without steps, or when nothing judged them.
	StepsVerdict *StepsVerdict `json:"steps_verdict,omitempty"`
	// Compare is the comparison with the recorded responses (--compare).
	Compare *Compare `json:"compare,omitempty"`
	// WebSocket is the WebSocket sessions the run replayed (websocket.go);
	// absent when it replayed none.
	WebSocket *WebSocket `json:"websocket,omitempty"`
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
	RequestRate   float64   `json:"request_rate"`              // Requests / DurationS: the achieved rate in requests, beside IterationRate
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

	// MergedFrom is how many summaries report merge folded into this one
	// (shards, a sink's); absent on a run's own.
	MergedFrom int `json:"merged_from,omitempty"`

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

// SetRates sets RPS (answered requests a second) and Throughput
// (succeeded requests a second) over the wall time, zero without one, and
// with SUTCPUs both per vCPU.
func (s *Summary) SetRates() {
	s.RPS, s.Throughput = 0, 0
	if s.WallS > 0 {
		s.RPS, s.Throughput = float64(s.Answered)/s.WallS, float64(s.Succeeded)/s.WallS
	}
	s.RPSPerVCPU, s.ThroughputPerVCPU = 0, 0
	if s.SUTCPUs > 0 {
		s.RPSPerVCPU, s.ThroughputPerVCPU = s.RPS/s.SUTCPUs, s.Throughput/s.SUTCPUs
	}
}

// SetSUTCPUs sets the SUT's vCPUs (--sut-cpus) and the rates per vCPU.
func (s *Summary) SetSUTCPUs(n float64) {
	s.SUTCPUs = n
	s.SetRates()
}

// SetTargetRequestRate sets TargetRequestRate from TargetRate and
// RequestsPerIteration; nil without either.
func (s *Summary) SetTargetRequestRate() {
	s.TargetRequestRate = nil
	if s.TargetRate != nil && s.RequestsPerIteration > 0 {
		r := *s.TargetRate * s.RequestsPerIteration
		s.TargetRequestRate = &r
	}
}

// perIteration is the requests an iteration held, to draw or state a
// target in requests: RequestsPerIteration, or for a summary written
// before it, the requests begun per iteration begun; 0 when neither is
// known.
func (s *Summary) perIteration() float64 {
	switch {
	case s.RequestsPerIteration > 0:
		return s.RequestsPerIteration
	case s.Iterations > 0 && s.Requests > 0:
		return float64(s.Requests) / float64(s.Iterations)
	}
	return 0
}

// ProtocolName is the key of "connections_by_protocol" for connections of
// protocol p (result.Result.Proto): its ALPN name. A connection whose
// result does not name its protocol (0) is HTTP/1.1: the one protocol of
// the transports that came before Result.Proto.
func ProtocolName(p uint8) string {
	if p == result.ProtoHTTP2 {
		return "h2"
	}
	return "http/1.1"
}

// latencyOf summarizes a µs histogram in milliseconds.
func latencyOf(h *hdrhistogram.Histogram) Latency { return hist.LatencyOf(h) }

// msOf converts µs to ms.
func msOf(us int64) float64 { return float64(us) / 1000 }
