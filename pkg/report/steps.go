package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/e2e"
)

// Step is the share of one step of a run with --stages (one item of the
// list): its target, what was achieved, and the requests whose iteration
// was due in it (docs/design.md, Counting), as in
//
//	{"step": 2, "start_s": 2, "duration_s": 2, "target": "100/s→500/s", "unit": "rate",
//	 "from": 100, "to": 500, "request_from": 100, "request_to": 500, "ramp": true,
//	 "scheduled": 600, "iterations": 600, "iteration_rate": 300, "request_rate": 300,
//	 "dropped": 0, "late": 0, "requests": 600, "succeeded": 600, "failed": 0,
//	 "answered": 600, "rps": 300, "throughput": 300, "latency_ms": {...},
//	 "service_ms": {...}, "status": {"200": 600}, "errors": {},
//	 "kept_up": true, "histogram": "HISTF...", "service_histogram": "HISTF..."}
//
// A ramp step moves its target linearly from From to To; a hold (or the
// step of a stepped pace) has From = To. Rates run over the step's own
// duration, cut short where the run stopped early; a request due in the
// step counts there even when its answer came after the step ended.
type Step struct {
	Step      int     `json:"step"`       // from 1, in --stages order
	StartS    float64 `json:"start_s"`    // its start, seconds after the run's start
	DurationS float64 `json:"duration_s"` // as planned, or until the run stopped
	Target    string  `json:"target"`     // in the unit written: "300/s", "100/s→500/s", "1800req/s", "50 VUs", "10→50 VUs"
	Unit      string  `json:"unit"`       // "rate": From and To are iterations per second; "vus"
	From      float64 `json:"from"`       // target at its start
	To        float64 `json:"to"`         // target at its end
	Ramp      bool    `json:"ramp"`
	// RateUnit is "requests" when the stages were written in requests a
	// second (the target says so; From and To are still iterations);
	// absent for iterations and VUs. RequestFrom and RequestTo are From
	// and To in requests a second (rate steps; 0 for VUs).
	RateUnit    string  `json:"rate_unit,omitempty"`
	RequestFrom float64 `json:"request_from"`
	RequestTo   float64 `json:"request_to"`

	Scheduled     int64   `json:"scheduled,omitempty"` // rate: iterations that came due (iterations + dropped)
	Iterations    int64   `json:"iterations"`          // iterations begun that were due in it
	IterationRate float64 `json:"iteration_rate"`      // Iterations / DurationS: the rate begun
	RequestRate   float64 `json:"request_rate"`        // Requests / DurationS: the same in requests
	Dropped       int64   `json:"dropped"`             // iterations due in it that no VU could start
	Late          int64   `json:"late"`                // requests due in it begun late

	Requests   int64   `json:"requests"`
	Succeeded  int64   `json:"succeeded"`
	Failed     int64   `json:"failed"`
	Answered   int64   `json:"answered"`
	RPS        float64 `json:"rps"`        // Answered / DurationS
	Throughput float64 `json:"throughput"` // Succeeded / DurationS
	Latency    Latency `json:"latency_ms"` // answered, from due time
	Service    Latency `json:"service_ms"` // answered, from the first byte sent

	Status map[string]int64 `json:"status"` // answers by HTTP status
	// GRPCStatus counts its gRPC answers by grpc-status name; absent
	// when there were none.
	GRPCStatus map[string]int64 `json:"grpc_status,omitempty"`
	Errors     map[string]int64 `json:"errors"` // requests without an answer, by kind
	// Accepted is the events the API accepted of the requests stamped in
	// this step, AcceptedRate the same a second (runs with sinks).
	Accepted     int64   `json:"e2e_accepted,omitempty"`
	AcceptedRate float64 `json:"e2e_accepted_rate,omitempty"`
	// E2E is, per e2e stage, the events of this step seen there and
	// their end-to-end latency (runs with sinks): every stage named for
	// the run, seen or not.
	E2E []StepE2E `json:"e2e,omitempty"`
	// KeptUp says whether the step kept up (see JudgeSteps); absent when
	// nothing judged it. Behind says why it did not.
	KeptUp *bool    `json:"kept_up,omitempty"`
	Behind []string `json:"behind,omitempty"`
	// NotJudged says why a step has no verdict though it has checks: an
	// e2e stage saw too little of it (the drain ended before the stage's
	// delay had passed).
	NotJudged []string `json:"not_judged,omitempty"`

	Histogram        string `json:"histogram"`         // latency, µs, as Summary.Histogram
	ServiceHistogram string `json:"service_histogram"` // service time
}

// StepE2E is what one e2e stage saw of the events sent in a step:
//
//	{"stage": "processed", "events": 980, "seen": 980, "seen_rate": 490, "pending": 20,
//	 "pending_pct": 2, "latency_ms": {...}, "histogram": "HISTF..."}
type StepE2E struct {
	Stage  string `json:"stage"`
	Events int64  `json:"events"` // distinct events seen at the stage
	// Seen is the step's accepted events seen at the stage by the end of
	// the drain, SeenRate the same a second of the step; Pending the
	// accepted ones not seen (of Step.Accepted, PendingPct). They are the
	// final accounting, which a longer --drain can change; whether the
	// step kept up reads Window instead.
	Seen       int64   `json:"seen"`
	SeenRate   float64 `json:"seen_rate"`
	Pending    int64   `json:"pending"`
	PendingPct float64 `json:"pending_pct"`
	Latency    Latency `json:"latency_ms"`
	Histogram  string  `json:"histogram"`
	// Window is what the stage saw during the step, which its keep-up
	// verdict reads (JudgeSteps); absent from summaries written before
	// the e2e series were kept.
	Window *StepWindow `json:"window,omitempty"`
}

// SeenPerSecond is the rate the step's "seen/s" column shows: the events
// first seen at the stage during the step shifted by its delay, a second
// (Window.SeenRate); for a summary written before the windows were kept,
// the step's accepted events seen by the end of the drain, a second of
// the step (SeenRate).
func (e StepE2E) SeenPerSecond() float64 {
	if e.Window != nil && e.Window.JudgedS > 0 {
		return e.Window.SeenRate
	}
	return e.SeenRate
}

// StepWindow is one e2e stage's account of a step by its own window, as
// in
//
//	{"delay_ms": 4.2, "judged_s": 3, "accepted": 1350, "accepted_rate": 450,
//	 "seen": 900, "seen_rate": 300, "backlog_start": 2, "backlog_end": 452}
//
// The window is the step's span [start, end) for the events accepted
// (by their send time), and the same span shifted by the stage's delay
// for the events first seen at the stage: DelayMS, the lowest p99
// end-to-end latency of the stage in any step (its delay where the
// system was least loaded). Where the sinks stopped counting before the
// shifted end (a drain shorter than the delay), the window ends earlier:
// JudgedS is its length (0: none of the step could be judged). The
// backlog at a moment t is the events accepted before t less those seen
// at the stage by t + the delay (below 0 when events sent after t are
// seen within the delay: what counts is its growth); BacklogEnd −
// BacklogStart = Accepted − Seen.
type StepWindow struct {
	DelayMS      float64 `json:"delay_ms"`
	JudgedS      float64 `json:"judged_s"`
	Accepted     int64   `json:"accepted"`
	AcceptedRate float64 `json:"accepted_rate"`
	Seen         int64   `json:"seen"`
	SeenRate     float64 `json:"seen_rate"`
	BacklogStart int64   `json:"backlog_start"`
	BacklogEnd   int64   `json:"backlog_end"`
}

// TargetText writes a step's target: "300/s", "100/s→500/s", "50 VUs",
// "10→50 VUs".
func TargetText(from, to float64, ramp, vus bool) string {
	return TargetTextIn(from, to, ramp, vus, "/s")
}

// TargetTextIn writes a step's target, a rate with unit after its
// numbers ("/s" for iterations, "req/s" for requests): "1800req/s",
// "600req/s→1800req/s".
func TargetTextIn(from, to float64, ramp, vus bool, unit string) string {
	n := func(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }
	switch {
	case vus && ramp:
		return n(from) + "→" + n(to) + " VUs"
	case vus:
		return n(to) + " VUs"
	case ramp:
		return n(from) + unit + "→" + n(to) + unit
	}
	return n(to) + unit
}

// targetText is st's target in the unit it was written in.
func (st *Step) targetText() string {
	if st.RateUnit == "requests" {
		return TargetTextIn(st.RequestFrom, st.RequestTo, st.Ramp, false, "req/s")
	}
	return TargetText(st.From, st.To, st.Ramp, st.Unit == "vus")
}

// StagesText writes a run's steps for a report's header:
// "300/s 2s, 100/s→500/s 2s".
func StagesText(steps []Step) string {
	parts := make([]string, len(steps))
	for i, st := range steps {
		parts[i] = st.Target + " " + strconv.FormatFloat(st.planS(), 'f', -1, 64) + "s"
	}
	return strings.Join(parts, ", ")
}

// planS is the step's planned length: the span to the next step's start,
// or its measured duration for the last.
func (st Step) planS() float64 { return math.Round(st.DurationS*1000) / 1000 }

// SetRates sets the step's rates from its counts and duration: the
// iterations and requests begun (IterationRate, RequestRate), the
// answered and succeeded requests (RPS, Throughput), the events accepted
// and those seen at each e2e stage, per second of DurationS; 0 without a
// duration. It sets each stage's pending events too.
func (st *Step) SetRates() {
	st.IterationRate, st.RequestRate, st.RPS, st.Throughput, st.AcceptedRate = 0, 0, 0, 0, 0
	per := func(n int64) float64 { return 0 }
	if st.DurationS > 0 {
		per = func(n int64) float64 { return float64(n) / st.DurationS }
	}
	st.IterationRate, st.RequestRate = per(st.Iterations), per(st.Requests)
	st.RPS, st.Throughput = per(st.Answered), per(st.Succeeded)
	st.AcceptedRate = per(st.Accepted)
	for i := range st.E2E {
		e := &st.E2E[i]
		e.SeenRate = per(e.Seen)
		e.Pending = max(st.Accepted-e.Seen, 0)
		e.PendingPct = 0
		if st.Accepted > 0 {
			e.PendingPct = 100 * float64(e.Pending) / float64(st.Accepted)
		}
	}
}

// SetStepE2E fills the steps' end-to-end sections from what the tracker
// kept by step (e2e.Tracker.StepStages): per e2e stage, the latency of
// the events sent in each step and how many of the step's accepted
// events it saw, and the events accepted in each step. Every stage is
// listed in every step, seen or not.
func (s *Summary) SetStepE2E(byStage []e2e.StepStage, accepted []int64) {
	for i := range s.Steps {
		st := &s.Steps[i]
		st.E2E = st.E2E[:0]
		if i < len(accepted) {
			st.Accepted = accepted[i]
		}
		for _, ss := range byStage {
			e := StepE2E{Stage: ss.Stage}
			if i < len(ss.Steps) && ss.Steps[i] != nil && ss.Steps[i].TotalCount() > 0 {
				h := ss.Steps[i]
				e.Events, e.Latency, e.Histogram = h.TotalCount(), latencyOf(h), encodeHistogram(h)
			}
			if i < len(ss.Seen) {
				e.Seen = ss.Seen[i]
			}
			st.E2E = append(st.E2E, e)
		}
		if len(st.E2E) == 0 {
			st.E2E = nil
		}
		st.SetRates()
	}
	s.SetStepWindows()
}

// mergeSteps merges the steps of shards, which ran the same --stages with
// their share of the targets: counts and targets add, histograms merge
// exactly. Summaries without steps (a standalone sink's) are skipped.
func mergeSteps(ss []*Summary) ([]Step, error) {
	var out []Step
	var ms []stepMerge
	for i, s := range ss {
		if len(s.Steps) == 0 {
			continue
		}
		if out == nil {
			out, ms = newStepMerges(s.Steps)
		}
		if len(s.Steps) != len(out) {
			return nil, fmt.Errorf("merge: summary %d has %d steps, the others %d: shards of one run share --stages", i+1, len(s.Steps), len(out))
		}
		for j := range s.Steps {
			if err := ms[j].add(&out[j], &s.Steps[j], i, j); err != nil {
				return nil, err
			}
		}
	}
	for j := range out {
		ms[j].finish(&out[j])
	}
	return out, nil
}

// stepMerge is one step's histograms as the shards' steps merge into it:
// latency, service time, and per e2e stage (in the order first seen) the
// end-to-end latency and the events seen.
type stepMerge struct {
	lat, svc *hdrhistogram.Histogram
	e2e      map[string]*hdrhistogram.Histogram
	order    []string
	seen     map[string]int64
}

// newStepMerges makes the merged steps, empty, of a run with steps, and
// their merges.
func newStepMerges(steps []Step) ([]Step, []stepMerge) {
	out, ms := make([]Step, len(steps)), make([]stepMerge, len(steps))
	for j, st := range steps {
		out[j] = Step{Step: st.Step, StartS: st.StartS, DurationS: st.DurationS, Unit: st.Unit, RateUnit: st.RateUnit, Ramp: st.Ramp,
			Status: map[string]int64{}, Errors: map[string]int64{}}
		ms[j] = stepMerge{lat: newHistogram(), svc: newHistogram(), e2e: map[string]*hdrhistogram.Histogram{}, seen: map[string]int64{}}
	}
	return out, ms
}

// add merges step j of summary i, st, into o: counts and targets add,
// histograms merge.
func (m *stepMerge) add(o, st *Step, i, j int) error {
	if st.Unit != o.Unit || math.Abs(st.StartS-o.StartS) > 0.001 {
		return fmt.Errorf("merge: summary %d, step %d: starts at %gs in %s, the others at %gs in %s: shards of one run share --stages", i+1, j+1, st.StartS, st.Unit, o.StartS, o.Unit)
	}
	o.DurationS = max(o.DurationS, st.DurationS)
	o.From += st.From
	o.To += st.To
	o.RequestFrom += st.RequestFrom
	o.RequestTo += st.RequestTo
	o.Accepted += st.Accepted
	o.Scheduled += st.Scheduled
	o.Iterations += st.Iterations
	o.Dropped += st.Dropped
	o.Late += st.Late
	o.Requests += st.Requests
	o.Succeeded += st.Succeeded
	o.Failed += st.Failed
	o.Answered += st.Answered
	addCounts(o.Status, st.Status)
	addCounts(o.Errors, st.Errors)
	o.GRPCStatus = addOptCounts(o.GRPCStatus, st.GRPCStatus)
	what := fmt.Sprintf("step %d", j+1)
	if err := mergeHistogram(m.lat, st.Histogram, i, what); err != nil {
		return err
	}
	if err := mergeHistogram(m.svc, st.ServiceHistogram, i, what+" service"); err != nil {
		return err
	}
	for _, e := range st.E2E {
		h := m.e2e[e.Stage]
		if h == nil {
			h = newHistogram()
			m.e2e[e.Stage] = h
			m.order = append(m.order, e.Stage)
		}
		m.seen[e.Stage] += e.Seen
		if err := mergeHistogram(h, e.Histogram, i, what+" e2e "+e.Stage); err != nil {
			return err
		}
	}
	return nil
}

// finish sets the merged step o's target, latencies, histograms, e2e
// stages and rates from what was merged.
func (m *stepMerge) finish(o *Step) {
	o.Target = o.targetText()
	o.Latency, o.Service = latencyOf(m.lat), latencyOf(m.svc)
	o.Histogram, o.ServiceHistogram = encodeHistogram(m.lat), encodeHistogram(m.svc)
	for _, name := range m.order {
		h := m.e2e[name]
		e := StepE2E{Stage: name, Events: h.TotalCount(), Seen: m.seen[name]}
		if e.Events > 0 {
			e.Latency, e.Histogram = latencyOf(h), encodeHistogram(h)
		}
		o.E2E = append(o.E2E, e)
	}
	o.SetRates()
}
