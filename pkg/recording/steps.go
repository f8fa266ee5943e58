package recording

import (
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
)

// StepPlan is what a summary needs to know of one step that the results do
// not say: its length, its target and what the VUs counted in it.
type StepPlan struct {
	Duration time.Duration
	From, To float64 // target at its start and end
	Ramp     bool
	VUs      bool // targets are VUs (closed model), not iterations per second
	// Unit is the unit the rates were written in, PerIteration the mean
	// number of requests an iteration holds: the target in requests a
	// second is From and To × PerIteration.
	Unit         schedule.Unit
	PerIteration float64
	// The VUs' counts of iterations begun and dropped and of requests
	// begun late, due in this step.
	Began, Dropped, Late int64
}

// stepFold is the share of one step. Owned by the folding goroutine.
type stepFold struct {
	requests, succeeded, failed, answered int64
	errors                                [result.NumErrorKinds]int64
	status                                map[uint16]int64
	grpc                                  map[uint8]int64 // nil until its first gRPC answer
	latency, service                      *hdrhistogram.Histogram
}

// Steps tells the recorder the steps of the run: the steps of plan, as
// offsets from the start (Start). A result counts in the step its due time
// falls in (schedule.Schedule.StepOf). Call it before the first Record.
func (r *Recorder) Steps(plan *schedule.Schedule) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.f
	f.plan = plan
	f.steps = make([]stepFold, len(plan.Ends()))
	for i := range f.steps {
		f.steps[i] = stepFold{status: map[uint16]int64{}, latency: hist.New(), service: hist.New()}
	}
}

// Start tells the recorder when the run started, the origin of the steps'
// offsets; results are attributed to steps by their due time from it.
// Call it before the first result is due (vu.Config.OnStart). Safe from
// any goroutine.
func (r *Recorder) Start(t time.Time) { r.f.base.Store(t.UnixNano()) }

// stepOf returns the index of the step due (Unix ns) falls in: a due time
// past the last step belongs to the last, one before the start to the
// first.
func (f *fold) stepOf(due int64) int { return f.plan.StepOf(time.Duration(due - f.base.Load())) }

// addStep folds r into its step. It allocates only at a step's first
// meeting with a status (or gRPC status).
func (f *fold) addStep(r *result.Result, kind int, ok bool) {
	st := &f.steps[f.stepOf(r.Due)]
	st.requests++
	if ok {
		st.succeeded++
	} else {
		st.failed++
	}
	if kind != 0 {
		st.errors[kind]++
		return
	}
	st.answered++
	st.status[r.Status]++
	if r.GRPC {
		if st.grpc == nil {
			st.grpc = make(map[uint8]int64)
		}
		st.grpc[r.GRPCStatus]++
	}
	hist.RecordNanos(st.latency, r.End-r.Due)
	hist.RecordNanos(st.service, r.End-r.Sent)
}

// stepSummaries makes the steps of a summary from the fold and the plan;
// stopped is how long after the start the run stopped issuing (0: it ran
// its course).
func (f *fold) stepSummaries(plan []StepPlan, stopped time.Duration) []report.Step {
	if len(plan) == 0 {
		return nil
	}
	out := make([]report.Step, len(plan))
	var at time.Duration
	for i, p := range plan {
		dur := p.Duration
		if stopped > 0 && at+dur > stopped {
			dur = max(stopped-at, 0)
		}
		st := report.Step{
			Step: i + 1, StartS: at.Seconds(), DurationS: dur.Seconds(),
			Target: report.TargetText(p.From, p.To, p.Ramp, p.VUs), Unit: "rate", From: p.From, To: p.To, Ramp: p.Ramp,
			Iterations: p.Began, Dropped: p.Dropped, Late: p.Late,
			Status: map[string]int64{}, Errors: map[string]int64{},
		}
		if p.VUs {
			st.Unit = "vus"
		} else {
			st.Scheduled = p.Began + p.Dropped
			st.RequestFrom, st.RequestTo = p.From*p.PerIteration, p.To*p.PerIteration
			if p.Unit == schedule.Requests {
				st.RateUnit = p.Unit.String()
				st.Target = report.TargetTextIn(st.RequestFrom, st.RequestTo, p.Ramp, false, p.Unit.Suffix())
			}
		}
		if i < len(f.steps) {
			sf := &f.steps[i]
			st.Requests, st.Succeeded, st.Failed, st.Answered = sf.requests, sf.succeeded, sf.failed, sf.answered
			st.Latency, st.Service = hist.LatencyOf(sf.latency), hist.LatencyOf(sf.service)
			st.Histogram, st.ServiceHistogram = hist.Encode(sf.latency), hist.Encode(sf.service)
			st.Errors = errorCounts(&sf.errors)
			for code, n := range sf.status {
				st.Status[strconv.Itoa(int(code))] = n
			}
			st.GRPCStatus = grpcCounts(sf.grpc)
		}
		st.SetRates()
		out[i] = st
		at += p.Duration
	}
	return out
}
