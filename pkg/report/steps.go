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
// was due in it (DESIGN.md, Counting), as in
//
//	{"step": 2, "start_s": 2, "duration_s": 2, "target": "100/s→500/s", "unit": "rate",
//	 "from": 100, "to": 500, "ramp": true, "scheduled": 600, "iterations": 600,
//	 "iteration_rate": 300, "dropped": 0, "late": 0, "requests": 600, "succeeded": 600,
//	 "failed": 0, "answered": 600, "rps": 300, "latency_ms": {...}, "service_ms": {...},
//	 "status": {"200": 600}, "errors": {}, "histogram": "HISTF...", "service_histogram": "HISTF..."}
//
// A ramp step moves its target linearly from From to To; a hold (or the
// step of a stepped pace) has From = To. Rates run over the step's own
// duration, cut short where the run stopped early; a request due in the
// step counts there even when its answer came after the step ended.
type Step struct {
	Step      int     `json:"step"`       // from 1, in --stages order
	StartS    float64 `json:"start_s"`    // its start, seconds after the run's start
	DurationS float64 `json:"duration_s"` // as planned, or until the run stopped
	Target    string  `json:"target"`     // "300/s", "100/s→500/s", "50 VUs", "10→50 VUs"
	Unit      string  `json:"unit"`       // "rate": iterations per second; "vus"
	From      float64 `json:"from"`       // target at its start
	To        float64 `json:"to"`         // target at its end
	Ramp      bool    `json:"ramp"`

	Scheduled     int64   `json:"scheduled,omitempty"` // rate: iterations that came due (iterations + dropped)
	Iterations    int64   `json:"iterations"`          // iterations begun that were due in it
	IterationRate float64 `json:"iteration_rate"`      // Iterations / DurationS: the achieved rate
	Dropped       int64   `json:"dropped"`             // iterations due in it that no VU could start
	Late          int64   `json:"late"`                // requests due in it begun late

	Requests  int64   `json:"requests"`
	Succeeded int64   `json:"succeeded"`
	Failed    int64   `json:"failed"`
	Answered  int64   `json:"answered"`
	RPS       float64 `json:"rps"`        // Answered / DurationS
	Latency   Latency `json:"latency_ms"` // answered, from due time
	Service   Latency `json:"service_ms"` // answered, from the first byte sent

	Status map[string]int64 `json:"status"` // answers by HTTP status
	// GRPCStatus counts its gRPC answers by grpc-status name; absent
	// when there were none.
	GRPCStatus map[string]int64 `json:"grpc_status,omitempty"`
	Errors     map[string]int64 `json:"errors"` // requests without an answer, by kind
	// E2E is the end-to-end latency per e2e stage of the events sent in
	// this step (run with sinks).
	E2E []StepE2E `json:"e2e,omitempty"`

	Histogram        string `json:"histogram"`         // latency, µs, as Summary.Histogram
	ServiceHistogram string `json:"service_histogram"` // service time
}

// StepE2E is the end-to-end latency at one e2e stage of the events sent in
// a step.
type StepE2E struct {
	Stage     string  `json:"stage"`
	Events    int64   `json:"events"` // distinct events seen at the stage
	Latency   Latency `json:"latency_ms"`
	Histogram string  `json:"histogram"`
}

// TargetText writes a step's target: "300/s", "100/s→500/s", "50 VUs",
// "10→50 VUs".
func TargetText(from, to float64, ramp, vus bool) string {
	n := func(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }
	switch {
	case vus && ramp:
		return n(from) + "→" + n(to) + " VUs"
	case vus:
		return n(to) + " VUs"
	case ramp:
		return n(from) + "/s→" + n(to) + "/s"
	}
	return n(to) + "/s"
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
// iterations begun (IterationRate) and the answered requests (RPS) per
// second of DurationS; 0 without a duration.
func (st *Step) SetRates() {
	st.IterationRate, st.RPS = 0, 0
	if st.DurationS > 0 {
		st.IterationRate = float64(st.Iterations) / st.DurationS
		st.RPS = float64(st.Answered) / st.DurationS
	}
}

// SetStepE2E fills the steps' end-to-end sections from the histograms per
// step and e2e stage the tracker kept (e2e.Tracker.StepHistograms):
// byStage[stage][step].
func (s *Summary) SetStepE2E(byStage []e2e.StepStage) {
	for _, ss := range byStage {
		for i, h := range ss.Steps {
			if i >= len(s.Steps) || h == nil || h.TotalCount() == 0 {
				continue
			}
			s.Steps[i].E2E = append(s.Steps[i].E2E, StepE2E{Stage: ss.Stage, Events: h.TotalCount(), Latency: latencyOf(h), Histogram: encodeHistogram(h)})
		}
	}
}

// mergeSteps merges the steps of shards, which ran the same --stages with
// their share of the targets: counts and targets add, histograms merge
// exactly. Summaries without steps (a standalone sink's) are skipped.
func mergeSteps(ss []*Summary) ([]Step, error) {
	var out []Step
	var lat, svc []*hdrhistogram.Histogram
	var e2es []map[string]*hdrhistogram.Histogram
	var e2eOrder [][]string
	for i, s := range ss {
		if len(s.Steps) == 0 {
			continue
		}
		if out == nil {
			out = make([]Step, len(s.Steps))
			lat, svc = make([]*hdrhistogram.Histogram, len(s.Steps)), make([]*hdrhistogram.Histogram, len(s.Steps))
			e2es, e2eOrder = make([]map[string]*hdrhistogram.Histogram, len(s.Steps)), make([][]string, len(s.Steps))
			for j, st := range s.Steps {
				out[j] = Step{Step: st.Step, StartS: st.StartS, DurationS: st.DurationS, Unit: st.Unit, Ramp: st.Ramp,
					Status: map[string]int64{}, Errors: map[string]int64{}}
				lat[j], svc[j], e2es[j] = newHistogram(), newHistogram(), map[string]*hdrhistogram.Histogram{}
			}
		}
		if len(s.Steps) != len(out) {
			return nil, fmt.Errorf("merge: summary %d has %d steps, the others %d: shards of one run share --stages", i+1, len(s.Steps), len(out))
		}
		for j, st := range s.Steps {
			o := &out[j]
			if st.Unit != o.Unit || math.Abs(st.StartS-o.StartS) > 0.001 {
				return nil, fmt.Errorf("merge: summary %d, step %d: starts at %gs in %s, the others at %gs in %s: shards of one run share --stages", i+1, j+1, st.StartS, st.Unit, o.StartS, o.Unit)
			}
			o.DurationS = max(o.DurationS, st.DurationS)
			o.From += st.From
			o.To += st.To
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
			if err := mergeHistogram(lat[j], st.Histogram, i, what); err != nil {
				return nil, err
			}
			if err := mergeHistogram(svc[j], st.ServiceHistogram, i, what+" service"); err != nil {
				return nil, err
			}
			for _, e := range st.E2E {
				h := e2es[j][e.Stage]
				if h == nil {
					h = newHistogram()
					e2es[j][e.Stage] = h
					e2eOrder[j] = append(e2eOrder[j], e.Stage)
				}
				if err := mergeHistogram(h, e.Histogram, i, what+" e2e "+e.Stage); err != nil {
					return nil, err
				}
			}
		}
	}
	for j := range out {
		o := &out[j]
		o.Target = TargetText(o.From, o.To, o.Ramp, o.Unit == "vus")
		o.Latency, o.Service = latencyOf(lat[j]), latencyOf(svc[j])
		o.Histogram, o.ServiceHistogram = encodeHistogram(lat[j]), encodeHistogram(svc[j])
		for _, name := range e2eOrder[j] {
			h := e2es[j][name]
			o.E2E = append(o.E2E, StepE2E{Stage: name, Events: h.TotalCount(), Latency: latencyOf(h), Histogram: encodeHistogram(h)})
		}
		o.SetRates()
	}
	return out, nil
}
