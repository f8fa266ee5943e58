package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/pkg/e2e"
)

// Threshold is a pass/fail criterion on a run's summary, written as
//
//	p99<200ms              latency (from due time) percentile of answered requests: p50 p90 p95 p99 p999, min, mean, max
//	service p95<=50ms      the same on service time (from the first byte sent)
//	errors<1%              failed requests as a share of requests (or a count: errors<10)
//	rps>1000               answered requests per second of wall time; also throughput (succeeded), iteration_rate
//	dropped<=0             iterations an arrival rate dropped; also late (requests)
//	match>99%              responses matching the recorded ones (--compare)
//	POST /events: p95<50ms the same for one endpoint (latency and errors)
//	e2e.p99<2s             end-to-end latency (send → seen by a sink), the worst stage
//	e2e.settled.p99<2s     the same for one stage
//	pending<1%             events accepted but not seen by the end of the drain, worst stage, as a share of accepted (or a count)
//	lost<0.1%              events proven lost, worst stage (or a count): only with sinks that prove loss
//	duplicates<1           events seen more than once, all stages
//	step 3: p99<200ms      the same for one step of --stages (from 1): latency, service,
//	                       errors, rps, throughput, iteration_rate, dropped, late, e2e latency
//	each step: errors<1%   the same for every step: one result per step
//
// Latencies take ms (default), s or µs/us. A latency threshold (overall,
// service or per endpoint) where no request was answered fails: requests
// that failed without an answer have no latency, and no latency is not a
// low one.
type Threshold struct {
	Text     string
	Endpoint string // "" for the whole run
	Stage    string // e2e latency (e2e.STAGE.p99): "" for the worst stage; pending, lost and duplicates have none
	Step     int    // a step of --stages, from 1; EachStep for every step; 0 for the whole run
	Metric   string // "latency p99", "service max", "errors%", "errors", "rps", ...
	Op       string // <, <=, >, >=
	Value    float64
}

// EachStep is Threshold.Step for a threshold on every step ("each step:").
const EachStep = -1

// ThresholdResult is a threshold checked against a run.
type ThresholdResult struct {
	Threshold string  `json:"threshold"`
	Step      int     `json:"step,omitempty"` // the step measured, for a threshold on steps
	Measured  float64 `json:"measured"`
	Unit      string  `json:"unit"`
	Pass      bool    `json:"pass"`
}

// Name is the threshold as reports show it: for a threshold on every
// step, with the step measured ("each step: errors<1% (step 2)").
func (r ThresholdResult) Name() string {
	if r.Step != 0 && !strings.HasPrefix(strings.TrimSpace(r.Threshold), "step ") {
		return fmt.Sprintf("%s (step %d)", r.Threshold, r.Step)
	}
	return r.Threshold
}

// stepMetrics are the metrics a threshold on a step may name.
var stepMetrics = []string{"errors", "errors%", "rps", "throughput", "iteration_rate", "dropped", "late"}

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

var latencyStats = []string{"min", "mean", "p50", "p90", "p95", "p99", "p999", "max"}

// ParseThreshold reads one threshold expression (see Threshold).
//
// A parser, kept as one function on purpose (cyclomatic complexity over 30):
// its branches follow the grammar in order — scope, statistic, operator,
// value and unit — and each names what it expected, so the error a user
// sees points at the token that is wrong.
func ParseThreshold(s string) (Threshold, error) {
	t := Threshold{Text: s}
	expr := strings.TrimSpace(s)
	if i := strings.LastIndex(expr, ": "); i >= 0 {
		t.Endpoint, expr = strings.TrimSpace(expr[:i]), strings.TrimSpace(expr[i+2:])
		step, isStep, err := parseStepScope(s, t.Endpoint)
		if err != nil {
			return t, err
		}
		if isStep {
			t.Endpoint, t.Step = "", step
		}
	}
	opAt := strings.IndexAny(expr, "<>")
	if opAt <= 0 {
		return t, fmt.Errorf("threshold %q: want METRIC<VALUE or METRIC>VALUE, such as p99<200ms or errors<1%%", s)
	}
	metric, rest := strings.TrimSpace(expr[:opAt]), expr[opAt:]
	t.Op = rest[:1]
	rest = rest[1:]
	if strings.HasPrefix(rest, "=") {
		t.Op += "="
		rest = rest[1:]
	}
	rest = strings.TrimSpace(rest)
	if e2e, ok := strings.CutPrefix(metric, "e2e."); ok {
		metric = "e2e " + e2e
		if i := strings.LastIndexByte(e2e, '.'); i >= 0 {
			t.Stage, metric = e2e[:i], "e2e "+e2e[i+1:]
		}
	}
	kind, stat, two := strings.Cut(metric, " ")
	if !two {
		kind, stat = "", metric
		if slices.Contains(latencyStats, stat) {
			kind = "latency"
		}
	}
	unitScale := 1.0
	switch {
	case kind == "latency" || kind == "service" || kind == "e2e":
		if !slices.Contains(latencyStats, stat) {
			return t, fmt.Errorf("threshold %q: unknown statistic %q, want one of %s", s, stat, strings.Join(latencyStats, " "))
		}
		t.Metric = kind + " " + stat
		for _, u := range []struct {
			suffix string
			scale  float64
		}{{"ms", 1}, {"µs", 0.001}, {"us", 0.001}, {"s", 1000}} {
			if strings.HasSuffix(rest, u.suffix) {
				rest, unitScale = strings.TrimSuffix(rest, u.suffix), u.scale
				break
			}
		}
	case kind == "" && stat == "errors":
		t.Metric = "errors"
		if strings.HasSuffix(rest, "%") {
			t.Metric, rest = "errors%", strings.TrimSuffix(rest, "%")
		}
	case kind == "" && slices.Contains([]string{"rps", "throughput", "iteration_rate", "dropped", "late"}, stat):
		t.Metric = stat
	case kind == "" && stat == "match":
		t.Metric, rest = "match%", strings.TrimSuffix(rest, "%")
	case kind == "" && slices.Contains([]string{"pending", "lost", "duplicates"}, stat):
		t.Metric = stat
		if stat != "duplicates" && strings.HasSuffix(rest, "%") {
			t.Metric, rest = stat+"%", strings.TrimSuffix(rest, "%")
		}
	default:
		return t, fmt.Errorf("threshold %q: unknown metric %q, want a latency statistic (p99, service p95, e2e.p99, ...), errors, rps, throughput, iteration_rate, dropped, late, match, pending, lost or duplicates", s, metric)
	}
	if t.Step != 0 && !strings.HasPrefix(t.Metric, "latency") && !strings.HasPrefix(t.Metric, "service") &&
		!strings.HasPrefix(t.Metric, "e2e") && !slices.Contains(stepMetrics, t.Metric) {
		return t, fmt.Errorf("threshold %q: per step, only latency, service, e2e latency, %s are known", s, strings.Join(stepMetrics[1:], ", "))
	}
	if t.Endpoint != "" && !strings.HasPrefix(t.Metric, "latency") && !strings.HasPrefix(t.Metric, "errors") && t.Metric != "match%" {
		return t, fmt.Errorf("threshold %q: per endpoint, only latency, errors and match are known", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return t, fmt.Errorf("threshold %q: want a number after %s, got %q", s, t.Op, rest)
	}
	t.Value = v * unitScale
	return t, nil
}

// Hopeless reports whether threshold t can no longer pass once the counts so
// far break it: it bounds from above a count that only grows (errors as a
// count, dropped, late). --abort-on-fail stops a run on these.
func (t Threshold) Hopeless(failed, dropped, late int64) bool {
	if t.Endpoint != "" || t.Step != 0 || (t.Op != "<" && t.Op != "<=") {
		return false
	}
	var n int64
	switch t.Metric {
	case "errors":
		n = failed
	case "dropped":
		n = dropped
	case "late":
		n = late
	default:
		return false
	}
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
	var measured float64
	var unit string
	switch {
	case step == 0:
		measured, unit = measure(s, t)
	case step < 0 || step > len(s.Steps):
		measured, unit = math.NaN(), fmt.Sprintf("(the run has %d steps)", len(s.Steps))
	default:
		measured, unit = measure(stepView(&s.Steps[step-1]), t)
	}
	if step < 0 {
		step = 0
	}
	if math.IsNaN(measured) { // nothing to measure: it cannot pass, and JSON has no NaN
		s.Thresholds = append(s.Thresholds, ThresholdResult{Threshold: t.Text, Step: step, Unit: unit, Pass: false})
		return false
	}
	var pass bool
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
	s.Thresholds = append(s.Thresholds, ThresholdResult{Threshold: t.Text, Step: step, Measured: measured, Unit: unit, Pass: pass})
	return pass
}

// stepView is step st as a summary, for measure: its counts, rates and
// latencies, and its end-to-end latency by stage.
func stepView(st *Step) *Summary {
	v := &Summary{Requests: st.Requests, Succeeded: st.Succeeded, Failed: st.Failed, Answered: st.Answered,
		RPS: st.RPS, IterationRate: st.IterationRate, Dropped: st.Dropped, Late: st.Late,
		Latency: st.Latency, Service: st.Service}
	if st.DurationS > 0 {
		v.Throughput = float64(st.Succeeded) / st.DurationS
	}
	if len(st.E2E) > 0 {
		v.E2E = &e2e.Summary{}
		for _, e := range st.E2E {
			v.E2E.Stages = append(v.E2E.Stages, e2e.Stage{Name: e.Stage, Unique: e.Events, Latency: e.Latency})
		}
	}
	return v
}

// noAnswer is the unit of a latency threshold measured on no answer.
const noAnswer = "ms (no request was answered)"

// measure returns what threshold t measures on s and its unit; NaN when
// there is nothing to measure (Evaluate fails the threshold).
func measure(s *Summary, t Threshold) (float64, string) {
	lat, svc := s.Latency, s.Service
	requests, failed, answered := s.Requests, s.Failed, s.Answered
	if t.Endpoint != "" {
		lat, requests, failed, answered = Latency{}, 0, 0, 0 // an endpoint without requests
		for _, e := range s.Endpoints {
			if e.Name == t.Endpoint {
				lat, requests, failed, answered = e.Latency, e.Requests, e.Failed, e.Answered
			}
		}
	}
	kind, stat, _ := strings.Cut(t.Metric, " ")
	switch kind {
	case "latency":
		if answered == 0 {
			return math.NaN(), noAnswer
		}
		return statOf(lat, stat), "ms"
	case "service":
		if answered == 0 {
			return math.NaN(), noAnswer
		}
		return statOf(svc, stat), "ms"
	case "errors%":
		if requests == 0 {
			return 0, "%"
		}
		return 100 * float64(failed) / float64(requests), "%"
	case "errors":
		return float64(failed), "requests"
	case "rps":
		return s.RPS, "/s"
	case "throughput":
		return s.Throughput, "/s"
	case "iteration_rate":
		return s.IterationRate, "/s"
	case "dropped":
		return float64(s.Dropped), "iterations"
	case "late":
		return float64(s.Late), "requests"
	case "e2e", "pending", "pending%", "lost", "lost%", "duplicates":
		return measureE2E(s.E2E, t, stat)
	case "match%":
		if s.Compare == nil {
			return math.NaN(), "% (no --compare)"
		}
		if t.Endpoint == "" {
			return s.Compare.MatchPct, "%"
		}
		for _, e := range s.Compare.Endpoints {
			if e.Name == t.Endpoint {
				return e.MatchPct, "%"
			}
		}
		return 0, "%"
	}
	return math.NaN(), ""
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

// WriteJUnit writes the threshold results as JUnit XML: one test case per
// threshold, for CI systems that display it.
func WriteJUnit(w io.Writer, s *Summary) error {
	type failure struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure,omitempty"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	suite := testsuite{Name: "replay thresholds", Tests: len(s.Thresholds)}
	for _, r := range s.Thresholds {
		c := testcase{Name: r.Name(), Classname: "replay"}
		if !r.Pass {
			suite.Failures++
			c.Failure = &failure{Message: fmt.Sprintf("measured %s %s", strconv.FormatFloat(r.Measured, 'f', -1, 64), r.Unit)}
		}
		suite.Cases = append(suite.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(suite); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// measureE2E measures an end-to-end threshold: for one stage (latency
// only: ParseThreshold gives pending, lost and duplicates no stage), or
// the worst (largest) over all stages, or for duplicates their sum. Loss
// is not measured (NaN: the threshold fails) unless the sinks proved it.
func measureE2E(e *e2e.Summary, t Threshold, stat string) (float64, string) {
	if e == nil || len(e.Stages) == 0 {
		return math.NaN(), "(no event seen by a sink)"
	}
	if (t.Metric == "lost" || t.Metric == "lost%") && !e.LossKnown {
		return math.NaN(), "(loss not known: no sink proves it)"
	}
	worst, found := math.Inf(-1), false
	var dups int64
	for _, st := range e.Stages {
		if t.Stage != "" && st.Name != t.Stage {
			continue
		}
		found = true
		dups += st.Duplicates
		var v float64
		switch t.Metric {
		case "pending":
			v = float64(st.Pending)
		case "pending%":
			v = st.PendingPct
		case "lost":
			v = float64(st.Lost)
		case "lost%":
			v = st.LostPct
		default:
			v = statOf(st.Latency, stat)
		}
		worst = max(worst, v)
	}
	if !found {
		return math.NaN(), fmt.Sprintf("(no stage %q)", t.Stage)
	}
	switch t.Metric {
	case "pending", "lost":
		return worst, "events"
	case "pending%", "lost%":
		return worst, "%"
	case "duplicates":
		return float64(dups), "events"
	}
	return worst, "ms"
}
