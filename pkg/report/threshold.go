package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Threshold is a pass/fail criterion on a run's summary, written as
//
//	p99<200ms              latency (from due time) percentile of answered requests: p50 p90 p95 p99 p999, min, mean, max
//	service p95<=50ms      the same on service time (from the first byte sent)
//	errors<1%              failed requests as a share of requests (or a count: errors<10)
//	rps>1000               answered requests per second of wall time; also throughput (succeeded), iteration_rate
//	dropped<=0             iterations an arrival rate dropped; also late (requests)
//	match>99%              responses matching the recorded ones (--compare)
//	status.202>99%         answers with this HTTP status (or class: status.5xx<0.1%) as a share of
//	                       all requests (a request without an answer counts against it), or a count
//	grpc.OK>99%            gRPC answers with this status name, as a share of the gRPC answers and the
//	                       requests without an answer, or a count
//	POST /events: p95<50ms the same for one endpoint (latency, errors, status, grpc, match)
//	e2e.p99<2s             end-to-end latency (send → seen by a sink), the worst stage, over the
//	                       events the API accepted: one not seen by the end of the drain is slower
//	                       than any bound (censor.go)
//	e2e.settled.p99<2s     the same for one stage
//	e2e.pending<1%         events accepted but not seen by the end of the drain, worst stage, as a
//	                       share of accepted (or a count); e2e.settled.pending for one stage;
//	                       pending<1% is the same
//	e2e.lost<0.1%          events proven lost, worst stage (or a count): only with sinks that prove
//	                       loss; e2e.STAGE.lost for one stage; lost<0.1% is the same
//	e2e.duplicates<1       events seen more than once, all stages; e2e.STAGE.duplicates for one;
//	                       duplicates<1 is the same
//	ws.p99<50ms            WebSocket latency: from each client message's due time to the next
//	                       server message (also per endpoint)
//	ws.closed_early<1%     WebSocket sessions failed as this kind (closed_early, refused, timeout,
//	                       too_large, protocol, close_error, error, or failed: any), a share of the sessions or a count
//	step 3: p99<200ms      the same for one step of --stages (from 1): latency, service,
//	                       errors, rps, throughput, iteration_rate, dropped, late, status, grpc,
//	                       e2e latency, e2e pending
//	each step: errors<1%   the same for every step: one result per step
//
// The metrics, with the scopes each takes, its unit, whether it takes %
// and how it is measured, are the rows of one table (metrics).
//
// Latencies take ms (default), s or µs/us. A latency threshold (overall,
// service or per endpoint) where no request was answered fails: requests
// that failed without an answer have no latency, and no latency is not a
// low one.
type Threshold struct {
	Text     string
	Endpoint string // "" for the whole run
	Stage    string // e2e (e2e.STAGE.p99, e2e.STAGE.pending): "" for the worst stage (all stages for duplicates)
	Step     int    // a step of --stages, from 1; EachStep for every step; 0 for the whole run
	Metric   string // "latency p99", "service max", "errors%", "errors", "rps", "status%", ...
	Arg      string // what status.CODE and grpc.NAME count: "202", "5xx", "OK"; "" for the others
	Op       string // <, <=, >, >=
	Value    float64
}

// EachStep is Threshold.Step for a threshold on every step ("each step:").
const EachStep = -1

// ThresholdResult is a threshold checked against a run, as in
//
//	{"threshold": "e2e.p99<2s", "measured": null, "unit": "ms", "pass": false,
//	 "pending": 120, "note": "no event seen (120 pending)"}
type ThresholdResult struct {
	Threshold string `json:"threshold"`
	Step      int    `json:"step,omitempty"` // the step measured, for a threshold on steps
	// Measured is the value measured in Unit. It is +Inf (null in JSON)
	// for an end-to-end latency that falls among the events not seen,
	// slower than any bound (Note says so); 0 when nothing could be
	// measured, and then Unit says why ("ms (no request was answered)").
	Measured float64 `json:"measured"`
	Unit     string  `json:"unit"`
	Pass     bool    `json:"pass"`
	// Pending, for an end-to-end latency, is the accepted events not
	// seen at the stage measured by the end of the drain, counted as
	// slower than any bound; Note says what they did to the value:
	// "no event seen (120 pending)", "slower than any bound: 30 of 100
	// events pending", "3 of 1000 events pending, counted as slower".
	Pending int64  `json:"pending,omitempty"`
	Note    string `json:"note,omitempty"`
}

// thresholdJSON is a ThresholdResult as JSON has it: Measured null for
// +Inf.
type thresholdJSON struct {
	Threshold string   `json:"threshold"`
	Step      int      `json:"step,omitempty"`
	Measured  *float64 `json:"measured"`
	Unit      string   `json:"unit"`
	Pass      bool     `json:"pass"`
	Pending   int64    `json:"pending,omitempty"`
	Note      string   `json:"note,omitempty"`
}

// MarshalJSON writes r with a Measured of +Inf as null: JSON has no
// infinity, and no number would be honest.
func (r ThresholdResult) MarshalJSON() ([]byte, error) {
	w := thresholdJSON{Threshold: r.Threshold, Step: r.Step, Unit: r.Unit, Pass: r.Pass, Pending: r.Pending, Note: r.Note}
	if !math.IsInf(r.Measured, 0) {
		w.Measured = &r.Measured
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads r as MarshalJSON writes it: a null measured is +Inf
// (an absent one, 0).
func (r *ThresholdResult) UnmarshalJSON(b []byte) error {
	var w struct {
		thresholdJSON
		Measured json.RawMessage `json:"measured"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = ThresholdResult{Threshold: w.Threshold, Step: w.Step, Unit: w.Unit, Pass: w.Pass, Pending: w.Pending, Note: w.Note}
	switch {
	case string(w.Measured) == "null":
		r.Measured = math.Inf(1)
	case w.Measured != nil:
		return json.Unmarshal(w.Measured, &r.Measured)
	}
	return nil
}

// MeasuredText is what r measured, as reports write it after the
// threshold, the value with prec decimals (-1: as few as needed):
// "measured 250.000 ms", "measured 2310.000 ms (3 of 1000 events pending,
// counted as slower)", or for no value, what stands for it: "no event
// seen (120 pending)", "slower than any bound: 30 of 100 events pending".
func (r ThresholdResult) MeasuredText(prec int) string {
	if r.noValue() {
		return r.Note
	}
	return "measured " + r.ValueText(prec)
}

// Rounded is r with its measure rounded to three decimals, as a verdict's
// reasons quote it (a value past any bound stays so).
func (r ThresholdResult) Rounded() ThresholdResult {
	if !math.IsInf(r.Measured, 0) {
		r.Measured = math.Round(r.Measured*1000) / 1000
	}
	return r
}

// ValueText is MeasuredText without "measured ", for a column headed so:
// "250.00 ms", "no event seen (120 pending)".
func (r ThresholdResult) ValueText(prec int) string {
	if r.noValue() {
		return r.Note
	}
	text := strconv.FormatFloat(r.Measured, 'f', prec, 64) + " " + r.Unit
	if r.Note != "" {
		text += " (" + r.Note + ")"
	}
	return text
}

// noValue reports whether r has no number to show and its note stands for
// it: a value past any bound, or none measured.
func (r ThresholdResult) noValue() bool {
	return r.Note != "" && (math.IsInf(r.Measured, 0) || r.Measured == 0 && !r.Pass)
}

// Name is the threshold as reports show it: for a threshold on every
// step, with the step measured ("each step: errors<1% (step 2)").
func (r ThresholdResult) Name() string {
	if r.Step != 0 && !strings.HasPrefix(strings.TrimSpace(r.Threshold), "step ") {
		return fmt.Sprintf("%s (step %d)", r.Threshold, r.Step)
	}
	return r.Threshold
}

// parseStepScope reads a "step N" or "each step" scope; ok is false for
// any other scope (an endpoint).
func parseStepScope(s, scope string) (step int, ok bool, err error) {
	if scope == "each step" {
		return EachStep, true, nil
	}
	n, isStep := strings.CutPrefix(scope, "step ")
	if !isStep {
		return 0, false, nil
	}
	step, err = strconv.Atoi(strings.TrimSpace(n))
	if err != nil || step < 1 {
		return 0, true, fmt.Errorf("threshold %q: want a step number from 1 after \"step\" (step 3: p99<200ms), or \"each step:\", got %q", s, scope)
	}
	return step, true, nil
}

// e2eCounts are the end-to-end metrics that are counts, not latencies:
// written e2e.pending or e2e.STAGE.pending as well as pending.
var e2eCounts = []string{"pending", "lost", "duplicates"}

// latencyStats are the statistics a latency metric takes.
var latencyStats = []string{"min", "mean", "p50", "p90", "p95", "p99", "p999", "max"}

// ParseThreshold reads one threshold expression (see Threshold). It reads
// the grammar in order — scope, metric (the table of metrics), operator,
// value and unit — and each error names what it expected, so that the
// error a user sees points at the token that is wrong.
func ParseThreshold(s string) (Threshold, error) {
	t := Threshold{Text: s}
	expr, err := t.parseScope(s)
	if err != nil {
		return t, err
	}
	name, rest, err := t.parseOp(s, expr)
	if err != nil {
		return t, err
	}
	m, err := t.parseMetric(s, name)
	if err != nil {
		return t, err
	}
	rest, scale := t.takeUnit(m, rest)
	switch {
	case t.Step != 0 && m.scopes&onStep == 0:
		return t, fmt.Errorf("threshold %q: %s", s, stepRefusal)
	case t.Endpoint != "" && m.scopes&onEndpoint == 0:
		return t, fmt.Errorf("threshold %q: %s", s, endpointRefusal)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return t, fmt.Errorf("threshold %q: want a number after %s, got %q", s, t.Op, rest)
	}
	t.Value = v * scale
	return t, nil
}

// parseScope reads the scope of threshold s, before the last ": ": an
// endpoint, a step or every step. It returns the expression after it.
func (t *Threshold) parseScope(s string) (string, error) {
	expr := strings.TrimSpace(s)
	i := strings.LastIndex(expr, ": ")
	if i < 0 {
		return expr, nil
	}
	t.Endpoint, expr = strings.TrimSpace(expr[:i]), strings.TrimSpace(expr[i+2:])
	step, isStep, err := parseStepScope(s, t.Endpoint)
	if err != nil {
		return "", err
	}
	if isStep {
		t.Endpoint, t.Step = "", step
	}
	return expr, nil
}

// parseOp reads the operator of expr (threshold s): it returns the
// metric before it and the value after it.
func (t *Threshold) parseOp(s, expr string) (name, rest string, err error) {
	opAt := strings.IndexAny(expr, "<>")
	if opAt <= 0 {
		return "", "", fmt.Errorf("threshold %q: want METRIC<VALUE or METRIC>VALUE, such as p99<200ms or errors<1%%", s)
	}
	name, rest = strings.TrimSpace(expr[:opAt]), expr[opAt:]
	t.Op = rest[:1]
	rest = rest[1:]
	if strings.HasPrefix(rest, "=") {
		t.Op += "="
		rest = rest[1:]
	}
	return name, strings.TrimSpace(rest), nil
}

// e2eMetric reads the name of an end-to-end metric past its "e2e.": a
// statistic, or a stage then a statistic (kept in t.Stage). It returns the
// metric's name in the table: "e2e STAT", or the count's name alone.
func (t *Threshold) e2eMetric(e2e string) string {
	stat := e2e
	if i := strings.LastIndexByte(e2e, '.'); i >= 0 {
		t.Stage, stat = e2e[:i], e2e[i+1:]
	}
	if slices.Contains(e2eCounts, stat) { // e2e.pending is pending's
		return stat
	}
	return "e2e " + stat
}

// latencyName reads the name of a latency written with a dot as the
// table names it: e2e.p99 (or e2e.STAGE.p99, the stage kept in t.Stage)
// is "e2e p99", ws.p99 is "ws p99"; any other name is as written.
func (t *Threshold) latencyName(name string) string {
	if e2e, ok := strings.CutPrefix(name, "e2e."); ok {
		return t.e2eMetric(e2e)
	}
	if stat, ok := strings.CutPrefix(name, "ws."); ok && slices.Contains(latencyStats, stat) {
		return "ws " + stat // the WebSocket latency's
	}
	return name
}

// parseMetric finds the row of the metric written name (threshold s): a
// latency statistic alone is the latency's (p99), e2e.p99 the end-to-end
// latency's, e2e.STAGE.p99 that of one stage, ws.p99 the WebSocket
// latency's. It keeps the statistic in t.Metric for takeUnit.
func (t *Threshold) parseMetric(s, name string) (*metric, error) {
	name = t.latencyName(name)
	kind, stat, _ := strings.Cut(name, " ")
	if stat == "" && slices.Contains(latencyStats, kind) { // p99 alone
		kind, stat = "latency", kind
	}
	kind, arg, dotted := strings.Cut(kind, ".")
	for i := range metrics {
		m := &metrics[i]
		if m.name != kind || m.stat != (stat != "") || dotted && m.arg == nil {
			continue
		}
		if m.arg != nil {
			v, ok := m.arg.read(arg)
			switch {
			case !dotted:
				return nil, fmt.Errorf("threshold %q: %s: want %s, %s %s", s, kind, m.written(), m.arg.placeholder, m.arg.want)
			case !ok:
				return nil, fmt.Errorf("threshold %q: %s.%s: want %s", s, kind, arg, m.arg.want)
			}
			t.Arg = v
		}
		if m.stat && !slices.Contains(latencyStats, stat) {
			return nil, fmt.Errorf("threshold %q: unknown statistic %q, want one of %s", s, stat, strings.Join(latencyStats, " "))
		}
		t.Metric = stat
		return m, nil
	}
	return nil, fmt.Errorf("threshold %q: unknown metric %q, want %s", s, name, unknownMetric)
}

// takeUnit names the metric in t.Metric as Evaluate reads it ("latency
// p99", "errors%", "match%", "rps") and takes the unit off the value
// rest: a time unit of a latency (ms, the default; s; µs or us), the %
// of a share or a percentage. It returns the number left and its scale
// to ms for a latency, else 1.
func (t *Threshold) takeUnit(m *metric, rest string) (string, float64) {
	switch {
	case m.stat:
		t.Metric = m.name + " " + t.Metric
		for _, u := range []struct {
			suffix string
			scale  float64
		}{{"ms", 1}, {"µs", 0.001}, {"us", 0.001}, {"s", 1000}} {
			if strings.HasSuffix(rest, u.suffix) {
				return strings.TrimSuffix(rest, u.suffix), u.scale
			}
		}
	case m.percent == percentage:
		t.Metric, rest = m.name+"%", strings.TrimSuffix(rest, "%")
	case m.percent == share && strings.HasSuffix(rest, "%"):
		t.Metric, rest = m.name+"%", strings.TrimSuffix(rest, "%")
	default:
		t.Metric = m.name
	}
	return rest, 1
}

// Hopeless reports whether threshold t can no longer pass once the counts so
// far break it: it bounds from above a count that only grows (errors as a
// count, dropped, late: the metrics whose row says so). --abort-on-fail
// stops a run on these.
func (t Threshold) Hopeless(failed, dropped, late int64) bool {
	if t.Endpoint != "" || t.Step != 0 || (t.Op != "<" && t.Op != "<=") {
		return false
	}
	m, _, asShare := lookup(t.Metric)
	if m == nil || m.grows == nil || asShare {
		return false
	}
	n := m.grows(counts{failed: failed, dropped: dropped, late: late})
	if t.Op == "<" {
		return float64(n) >= t.Value
	}
	return float64(n) > t.Value
}

// NeedsCompare reports whether a threshold checks the response comparison.
func NeedsCompare(ts []Threshold) bool {
	for _, t := range ts {
		if t.Metric == "match%" {
			return true
		}
	}
	return false
}

// CheckEndpoints reports a threshold naming an endpoint the run cannot have.
func CheckEndpoints(ts []Threshold, endpoints []string) error {
	for _, t := range ts {
		if t.Endpoint != "" && !slices.Contains(endpoints, t.Endpoint) {
			return fmt.Errorf("threshold %q: no endpoint %q in the file (its endpoints: %s)", t.Text, t.Endpoint, strings.Join(endpoints, ", "))
		}
	}
	return nil
}

// CheckSteps reports a threshold naming a step the run does not have (it
// has steps steps), or a threshold on steps for a run without --stages:
// refused before any traffic.
func CheckSteps(ts []Threshold, steps int) error {
	for _, t := range ts {
		switch {
		case t.Step != 0 && steps == 0:
			return fmt.Errorf("threshold %q: the run has no steps (give --stages)", t.Text)
		case t.Step > steps:
			return fmt.Errorf("threshold %q: no step %d, the run has %d (--stages)", t.Text, t.Step, steps)
		}
	}
	return nil
}

// Evaluate checks the thresholds against s and stores the results in s.
// It reports whether all passed. A threshold on every step gives one
// result per step.
func Evaluate(s *Summary, ts []Threshold) bool {
	s.Thresholds = s.Thresholds[:0]
	all := true
	for _, t := range ts {
		for _, step := range stepsOf(s, t) {
			all = evaluateOne(s, t, step) && all
		}
	}
	return all
}

// stepsOf lists the steps threshold t is measured on: 0 for the whole run.
func stepsOf(s *Summary, t Threshold) []int {
	switch {
	case t.Step == EachStep && len(s.Steps) > 0:
		steps := make([]int, len(s.Steps))
		for i := range steps {
			steps[i] = i + 1
		}
		return steps
	case t.Step == EachStep:
		return []int{EachStep} // no step: it fails, saying so
	}
	return []int{t.Step}
}

// evaluateOne checks threshold t on step (0: the whole run) of s and
// appends its result to s.Thresholds.
func evaluateOne(s *Summary, t Threshold, step int) bool {
	var m measurement
	switch {
	case step == 0:
		m = measure(runView(s, t.Endpoint), t)
	case step < 0 || step > len(s.Steps):
		m = measurement{value: math.NaN(), unit: fmt.Sprintf("(the run has %d steps)", len(s.Steps))}
	default:
		m = measure(stepView(&s.Steps[step-1]), t)
	}
	if step < 0 {
		step = 0
	}
	r := ThresholdResult{Threshold: t.Text, Step: step, Measured: m.value, Unit: m.unit, Pending: m.unseen, Note: m.note}
	if math.IsNaN(m.value) { // nothing to measure: it cannot pass, and JSON has no NaN
		r.Measured = 0
		s.Thresholds = append(s.Thresholds, r)
		return false
	}
	measured, pass := m.value, false
	switch t.Op {
	case "<":
		pass = measured < t.Value
	case "<=":
		pass = measured <= t.Value
	case ">":
		pass = measured > t.Value
	case ">=":
		pass = measured >= t.Value
	}
	r.Pass = pass
	s.Thresholds = append(s.Thresholds, r)
	return pass
}
