package run

import (
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/vu"
)

// stepPlans describes the run's steps for its summary: the schedule's
// steps (their length and target: a ramp from the previous target, or
// from --rate or --vus for the first), with what the VUs counted in each,
// and the unit the rates were written in (unit: converted by
// perIteration requests an iteration).
func stepPlans(plan *schedule.Schedule, counts []vu.StepCount, unit schedule.Unit, perIteration float64) []recording.StepPlan {
	steps := plan.Steps()
	plans := make([]recording.StepPlan, len(steps))
	for i, st := range steps {
		p := recording.StepPlan{Duration: st.End - st.Start, From: st.From, To: st.To, Ramp: st.Ramp, VUs: plan.Model() == schedule.Closed,
			Unit: unit, PerIteration: perIteration}
		if i < len(counts) {
			p.Began, p.Dropped, p.Late = counts[i].Began, counts[i].Dropped, counts[i].Late
		}
		plans[i] = p
	}
	return plans
}

// startSteps has the recorder (and the end-to-end tracker) count by step:
// it gives them the run's schedule, and has the VUs tell them when the run
// starts, the origin of the steps.
func (r *runner) startSteps() {
	if len(r.plan.Ends()) == 0 {
		return
	}
	r.rec.Steps(r.plan)
	r.pool.Config.OnStart = func(t time.Time) {
		r.rec.Start(t)
		if r.track != nil {
			r.track.tracker.SetSteps(t, r.plan)
		}
	}
}
