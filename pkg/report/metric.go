package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/result"
)

// metrics is the table of threshold metrics: what ParseThreshold accepts,
// where, how Evaluate measures it and which --abort-on-fail may call
// hopeless. Adding a metric is adding a row. The order is the one the
// error messages list them in.
var metrics = []metric{
	{name: "latency", stat: true, label: "latency", example: "p99", unit: "ms", scopes: onRun | onEndpoint | onStep,
		measure: answeredLatency(func(v *view) Latency { return v.latency })},
	{name: "service", stat: true, label: "service", example: "service p95", unit: "ms", scopes: onRun | onStep,
		measure: answeredLatency(func(v *view) Latency { return v.service })},
	{name: "e2e", stat: true, label: "e2e latency", example: "e2e.p99", unit: "ms", scopes: onRun | onStep | onStage,
		measure: func(v *view, q query) (float64, string) { x, missing, _ := e2eLatency(v, q); return x, missing },
		census:  func(v *view, q query) census { _, _, c := e2eLatency(v, q); return c }},
	{name: "errors", percent: share, unit: "requests", scopes: onRun | onEndpoint | onStep, grows: func(c counts) int64 { return c.failed },
		measure: failed},
	{name: "rps", unit: "/s", scopes: onRun | onStep, measure: number(func(v *view) float64 { return v.rps })},
	{name: "throughput", unit: "/s", scopes: onRun | onStep, measure: number(func(v *view) float64 { return v.throughput })},
	{name: "iteration_rate", unit: "/s", scopes: onRun | onStep, measure: number(func(v *view) float64 { return v.iterationRate })},
	{name: "dropped", unit: "iterations", scopes: onRun | onStep, grows: func(c counts) int64 { return c.dropped },
		measure: number(func(v *view) float64 { return float64(v.dropped) })},
	{name: "late", unit: "requests", scopes: onRun | onStep, grows: func(c counts) int64 { return c.late },
		measure: number(func(v *view) float64 { return float64(v.late) })},
	{name: "status", arg: &statusArg, percent: share, unit: "requests", scopes: onRun | onEndpoint | onStep, measure: statusShare},
	{name: "grpc", arg: &grpcArg, percent: share, unit: "calls", scopes: onRun | onEndpoint | onStep, measure: grpcShare},
	{name: "match", percent: percentage, unit: "%", scopes: onRun | onEndpoint, measure: matched},
	{name: "pending", percent: share, unit: "events", scopes: onRun | onStep | onStage,
		measure: allPending(overStages(func(st *e2e.Stage, q query) float64 { return shareOr(q, st.PendingPct, st.Pending) }, byWorst))},
	{name: "lost", percent: share, unit: "events", scopes: onRun | onStage,
		measure: proven(overStages(func(st *e2e.Stage, q query) float64 { return shareOr(q, st.LostPct, st.Lost) }, byWorst))},
	{name: "duplicates", unit: "events", scopes: onRun | onStage,
		measure: overStages(func(st *e2e.Stage, _ query) float64 { return float64(st.Duplicates) }, bySum)},
	{name: "ws", stat: true, label: "WebSocket latency", example: "ws.p99", unit: "ms", scopes: onRun | onEndpoint, aside: true,
		measure: wsLatency, census: wsCensus},
	{name: "ws", arg: &wsFailArg, percent: share, unit: "sessions", scopes: onRun | onEndpoint, aside: true, measure: wsFailedShare},
}

// metric is one row of the table.
type metric struct {
	// name is the metric as written: "errors", "rps". A latency metric
	// (stat) is written with a statistic, and its name is its kind:
	// "latency" (p99, latency p99), "service" (service p95), "e2e"
	// (e2e.p99, e2e.STAGE.p99).
	name string
	// stat: it takes a latency statistic (latencyStats) and its value a
	// time unit (ms by default, s, µs or us).
	stat bool
	// label and example are how the error messages name a latency
	// metric: as a kind ("e2e latency") and as written ("e2e.p99").
	label, example string
	// arg, for a metric written with what it counts after a dot
	// (status.202, status.5xx, grpc.OK), reads that; nil for any other.
	arg *argument
	// percent says whether it takes %.
	percent percent
	// unit is what it is measured in; a share (errors<1%) is in %.
	unit   string
	scopes scope
	// grows, for a count that only grows during a run, reads it from the
	// live counts: then --abort-on-fail may call a threshold bounding it
	// from above hopeless (Threshold.Hopeless). Nil for any other.
	grows func(counts) int64
	// measure measures it on a view; see measureFunc.
	measure measureFunc
	// aside: a metric of WebSocket sessions (ws.p99, ws.closed_early),
	// named by its own errors but left out of the lists of metrics the
	// other errors give, which speak of requests and events.
	aside bool
	// census, for an end-to-end latency, is what the value measured
	// rests on: the events seen and not seen at the stage measured, which
	// the result reports (censor.go). Nil for any other.
	census func(v *view, q query) census
}

// argument is what a metric written NAME.ARG takes after the dot.
type argument struct {
	// placeholder names it in messages: "status.CODE".
	placeholder string
	// want says what it takes, for the error of one it cannot read.
	want string
	// read checks one as written and returns it as measured ("5XX" is
	// "5xx"); false when it is not one.
	read func(string) (string, bool)
}

// statusArg is an HTTP status (202) or a class of them (5xx).
var statusArg = argument{placeholder: "CODE", want: "an HTTP status from 100 to 599 (status.202) or a class from 1xx to 5xx (status.5xx)",
	read: func(s string) (string, bool) {
		if len(s) != 3 || s[0] < '1' || s[0] > '5' {
			return "", false
		}
		if strings.EqualFold(s[1:], "xx") {
			return s[:1] + "xx", true
		}
		n, err := strconv.Atoi(s)
		return s, err == nil && n >= 100 && n <= 599
	}}

// grpcArg is a gRPC status by the name gRPC gives it (OK, UNAVAILABLE).
var grpcArg = argument{placeholder: "NAME", want: "a gRPC status name (grpc.OK, grpc.UNAVAILABLE, grpc.DEADLINE_EXCEEDED, ...)",
	read: func(s string) (string, bool) {
		s = strings.ToUpper(s)
		_, ok := result.GRPCCode(s)
		return s, ok
	}}

// percent is whether a metric takes %.
type percent uint8

const (
	noPercent  percent = iota // a count or a rate: "rps>5%" is no number
	share                     // written with %, it is measured as a share: errors<1% (of requests), pending<1% (of accepted events)
	percentage                // it is a percentage, % or not: match>99, match>99%
)

// scope is where a metric may be measured, a bit each.
type scope uint8

const (
	onRun      scope = 1 << iota // the whole run: every metric
	onEndpoint                   // one endpoint: "POST /events: p99<50ms"
	onStep                       // one step, or each: "step 2: p99<50ms", "each step: errors<1%"
	onStage                      // one e2e stage: "e2e.settled.p99<2s", "e2e.settled.pending<1%" (the grammar names one only after "e2e.")
)

// counts are the live counts that only grow during a run, which
// Threshold.Hopeless is given.
type counts struct{ failed, dropped, late int64 }

// query is what a threshold asks a metric beside its view: the statistic
// of a latency metric, the e2e stage named (or "": every stage; only a
// metric that takes a stage is given one), what a metric written with an
// argument counts (Threshold.Arg: "202", "5xx", "OK"), and whether a
// metric that takes % is asked as a share.
type query struct {
	stat, stage, arg string
	share            bool
}

// measureFunc measures a metric on v. missing is "" when it could; else
// nothing could be measured (there was nothing to measure: no answer, no
// comparison, no event), the threshold fails, and missing is the unit
// its result shows, saying why: "ms (no request was answered)".
type measureFunc func(v *view, q query) (value float64, missing string)

// view is what a threshold measures: the whole run, one endpoint of it,
// or one step, as the same numbers (runView, stepView).
type view struct {
	requests, failed, answered int64
	latency, service           Latency
	rps, throughput            float64
	iterationRate              float64
	dropped, late              int64
	e2e                        *e2e.Summary
	ws                         *WSCounts // nil without WebSocket sessions
	compared                   bool      // the run was compared with the recorded responses (--compare)
	match                      float64   // then: the share that matched, %
	// status counts the answers by HTTP status, grpc the gRPC answers by
	// status name (the summary's "status" and "grpc_status").
	status, grpc map[string]int64
}

// runView is the run of s, or with endpoint its share: that endpoint's
// requests, latency and comparison (all zero when it had none).
func runView(s *Summary, endpoint string) *view {
	v := &view{requests: s.Requests, failed: s.Failed, answered: s.Answered, latency: s.Latency, service: s.Service,
		rps: s.RPS, throughput: s.Throughput, iterationRate: s.IterationRate, dropped: s.Dropped, late: s.Late, e2e: s.E2E,
		status: s.Status, grpc: s.GRPCStatus}
	if s.Compare != nil {
		v.compared, v.match = true, s.Compare.MatchPct
	}
	if s.WebSocket != nil {
		v.ws = s.WebSocket.of(endpoint)
	}
	if endpoint == "" {
		return v
	}
	v.latency, v.requests, v.failed, v.answered = Latency{}, 0, 0, 0 // an endpoint without requests
	v.status, v.grpc = nil, nil
	for _, e := range s.Endpoints {
		if e.Name == endpoint {
			v.latency, v.requests, v.failed, v.answered = e.Latency, e.Requests, e.Failed, e.Answered
			v.status, v.grpc = e.Status, e.GRPCStatus
		}
	}
	if s.Compare != nil {
		v.match = 0
		for _, e := range s.Compare.Endpoints {
			if e.Name == endpoint {
				v.match = e.MatchPct
				break
			}
		}
	}
	return v
}

// stepView is step st: its counts, rates and latencies, and its
// end-to-end latency by stage.
func stepView(st *Step) *view {
	v := &view{requests: st.Requests, failed: st.Failed, answered: st.Answered, latency: st.Latency, service: st.Service,
		rps: st.RPS, iterationRate: st.IterationRate, dropped: st.Dropped, late: st.Late, status: st.Status, grpc: st.GRPCStatus}
	if st.DurationS > 0 {
		v.throughput = float64(st.Succeeded) / st.DurationS
	}
	if len(st.E2E) > 0 || st.Accepted > 0 {
		v.e2e = &e2e.Summary{Accepted: st.Accepted}
		for _, e := range st.E2E {
			v.e2e.Stages = append(v.e2e.Stages, e2e.Stage{Name: e.Stage, Unique: e.Events, Pending: e.Pending, PendingPct: e.PendingPct,
				Latency: e.Latency, Histogram: e.Histogram})
		}
	}
	return v
}

// lookup finds the row of a threshold's Metric ("latency p99", "errors%",
// "match%", "rps"), with the statistic it asks and whether it asks a
// share; nil for a metric the table lacks.
func lookup(name string) (m *metric, stat string, asShare bool) {
	name, stat, _ = strings.Cut(name, " ")
	name, pct := strings.CutSuffix(name, "%")
	for i := range metrics {
		m := &metrics[i]
		if m.name == name && m.stat == (stat != "") && (!pct || m.percent != noPercent) {
			return m, stat, pct && m.percent == share
		}
	}
	return nil, "", false
}

// measurement is what a threshold measured on a view.
type measurement struct {
	// value is in unit: NaN when there is nothing to measure (Evaluate
	// fails the threshold) and unit says why; +Inf for an end-to-end
	// latency that falls among the events not seen (censor.go).
	value float64
	unit  string
	// note and unseen, for an end-to-end latency: what the events not
	// seen at the stage measured did to it (census.note), and how many
	// there were.
	note   string
	unseen int64
}

// measure returns what threshold t measures on v.
func measure(v *view, t Threshold) measurement {
	m, stat, asShare := lookup(t.Metric)
	if m == nil {
		return measurement{value: math.NaN()}
	}
	q := query{stat: stat, arg: t.Arg, share: asShare}
	if m.scopes&onStage != 0 {
		q.stage = t.Stage
	}
	value, missing := m.measure(v, q)
	var out measurement
	switch {
	case missing != "":
		out = measurement{value: math.NaN(), unit: missing}
	case asShare:
		out = measurement{value: value, unit: "%"}
	default:
		out = measurement{value: value, unit: m.unit}
	}
	if m.census != nil {
		if c := m.census(v, q); c.word != "" { // a stage was measured
			out.note, out.unseen = c.note(value), c.unseen
		}
	}
	return out
}

// noAnswer is the unit of a latency threshold measured on no answer.
const noAnswer = "ms (no request was answered)"

// answeredLatency measures a statistic of the latency of answered
// requests: requests that failed without an answer have none, and no
// latency is not a low one.
func answeredLatency(of func(*view) Latency) measureFunc {
	return func(v *view, q query) (float64, string) {
		if v.answered == 0 {
			return math.NaN(), noAnswer
		}
		return statOf(of(v), q.stat), ""
	}
}

func statOf(l Latency, stat string) float64 {
	switch stat {
	case "min":
		return l.Min
	case "mean":
		return l.Mean
	case "p50":
		return l.P50
	case "p90":
		return l.P90
	case "p95":
		return l.P95
	case "p99":
		return l.P99
	case "p999":
		return l.P999
	}
	return l.Max
}

// number measures a number of the view as it is.
func number(f func(*view) float64) measureFunc {
	return func(v *view, _ query) (float64, string) { return f(v), "" }
}

// failed measures the failed requests: their count, or their share of
// the requests (0 without requests).
func failed(v *view, q query) (float64, string) {
	switch {
	case !q.share:
		return float64(v.failed), ""
	case v.requests == 0:
		return 0, ""
	}
	return 100 * float64(v.failed) / float64(v.requests), ""
}

// statusShare measures the answers with the status or class q.arg
// ("202", "5xx"): their count, or their share of all the requests, so that
// a request that failed without an answer counts against status.202>99%
// as a 503 does. Without a request there is nothing to measure.
func statusShare(v *view, q query) (float64, string) {
	var n int64
	for code, c := range v.status {
		if code == q.arg || strings.HasSuffix(q.arg, "xx") && len(code) == 3 && code[0] == q.arg[0] {
			n += c
		}
	}
	switch {
	case !q.share:
		return float64(n), ""
	case v.requests == 0:
		return math.NaN(), "% (no request was sent)"
	}
	return 100 * float64(n) / float64(v.requests), ""
}

// grpcShare measures the gRPC answers with the status named q.arg ("OK"):
// their count, or their share of the gRPC answers and of the requests
// that failed without an answer (which gRPC call failed is not known
// there: each counts against grpc.OK>99%, as it would against
// status.200>99%). Without a gRPC answer there is nothing to measure.
func grpcShare(v *view, q query) (float64, string) {
	var n, calls int64
	for name, c := range v.grpc {
		calls += c
		if name == q.arg {
			n += c
		}
	}
	switch {
	case calls == 0:
		return math.NaN(), "(no gRPC call was answered)"
	case !q.share:
		return float64(n), ""
	}
	return 100 * float64(n) / float64(calls+v.requests-v.answered), ""
}

// matched measures the share of responses that matched the recorded ones.
func matched(v *view, _ query) (float64, string) {
	if !v.compared {
		return math.NaN(), "% (no --compare)"
	}
	return v.match, ""
}

// shareOr is a stage's share (pct) when q asks one, else its count.
func shareOr(q query, pct float64, count int64) float64 {
	if q.share {
		return pct
	}
	return float64(count)
}

// combine is how an end-to-end metric combines its stages' values.
type combine bool

const (
	byWorst combine = false // the largest
	bySum   combine = true  // their sum
)

// overStages measures an end-to-end metric: of each stage (only the one
// the threshold names, if it names one), combined over the stages (by). Nothing is measured without a stage seen, or without the one
// named.
func overStages(of func(st *e2e.Stage, q query) float64, by combine) measureFunc {
	return func(v *view, q query) (float64, string) {
		e := v.e2e
		if e == nil || len(e.Stages) == 0 {
			return math.NaN(), "(no event seen by a sink)"
		}
		largest, total, found := math.Inf(-1), 0.0, false
		for i := range e.Stages {
			st := &e.Stages[i]
			if q.stage != "" && st.Name != q.stage {
				continue
			}
			found = true
			x := of(st, q)
			largest, total = max(largest, x), total+x
		}
		switch {
		case !found:
			return math.NaN(), fmt.Sprintf("(no stage %q)", q.stage)
		case by == bySum:
			return total, ""
		}
		return largest, ""
	}
}

// allPending measures pending events where the API accepted some and no
// stage was listed (no sink named one and none saw an event), or the
// stage named is not listed (no event reached it): all of them are
// pending there.
func allPending(m measureFunc) measureFunc {
	return func(v *view, q query) (float64, string) {
		e := v.e2e
		if e == nil || e.Accepted == 0 || e.LossKnown {
			return m(v, q)
		}
		listed := slices.ContainsFunc(e.Stages, func(st e2e.Stage) bool { return st.Name == q.stage })
		if len(e.Stages) == 0 || q.stage != "" && !listed {
			return shareOr(q, 100, e.Accepted), ""
		}
		return m(v, q)
	}
}

// proven measures loss only where the sinks proved it (e2e.Summary's
// LossKnown); else an event not seen is pending, and nothing is measured.
func proven(m measureFunc) measureFunc {
	return func(v *view, q query) (float64, string) {
		if e := v.e2e; e != nil && len(e.Stages) > 0 && !e.LossKnown {
			return math.NaN(), "(loss not known: no sink proves it)"
		}
		return m(v, q)
	}
}

// Refusals: what ParseThreshold says of a metric asked in a scope it does
// not take, listing those the scope takes, and of a metric it does not
// know, listing all.
var (
	stepRefusal     = "per step, only " + strings.Join(listed(onStep, true), ", ") + " are known"
	endpointRefusal = "per endpoint, only " + orList(listed(onEndpoint, false), "and") + " are known"
	unknownMetric   = unknownMetricText()
)

// listed names the metrics that scope sc takes, in table order: a latency
// metric by its label; with shares, a metric that takes % as a share
// written with it ("errors%").
func listed(sc scope, shares bool) []string {
	var names []string
	for _, m := range metrics {
		switch {
		case m.scopes&sc == 0, m.aside:
		case m.stat:
			names = append(names, m.label)
		case shares && m.percent == share:
			names = append(names, m.written()+"%")
		default:
			names = append(names, m.written())
		}
	}
	return names
}

// unknownMetricText is what a metric ParseThreshold does not know is told
// to want: "a latency statistic (p99, service p95, e2e.p99, ...), errors,
// rps, ... or duplicates".
func unknownMetricText() string {
	var examples, names []string
	for _, m := range metrics {
		if m.aside {
			continue
		}
		if m.stat {
			examples = append(examples, m.example)
		} else {
			names = append(names, m.written())
		}
	}
	return "a latency statistic (" + strings.Join(examples, ", ") + ", ...), " + orList(names, "or")
}

// written is how a metric that is not a latency is written in messages:
// its name, with the placeholder of its argument ("status.CODE").
func (m *metric) written() string {
	if m.arg != nil {
		return m.name + "." + m.arg.placeholder
	}
	return m.name
}

// orList joins names with commas, and the last with the word: "a, b or c".
func orList(names []string, word string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + word + " " + names[len(names)-1]
}
