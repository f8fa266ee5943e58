package run

import (
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/schedule"
)

// liveNow is the one producer of a run's live counters: the recorder's
// part, then the engine's (the VUs, what an open model dropped or began
// late, the target, the events seen), read at each call. start is about
// when the run starts: the target of a run with stages moves with time.
func (r *runner) liveNow(start time.Time) func() recording.Live {
	target := targetNow(r.plan, start)
	perIteration := r.pool.Config.PerIteration
	return func() recording.Live {
		l := r.rec.Live()
		l.VUs, l.InFlight = r.pool.Live()
		l.Dropped, l.Late = r.pool.Dropped(), r.pool.Late()
		l.Step, l.Target, l.HasTarget = target()
		l.PerIteration = perIteration
		if r.track != nil {
			l.Events = r.track.tracker.LiveStages()
		}
		return l
	}
}

// targetNow returns, for a run paced by plan that starts about at start,
// the step under way (from 1; 0 without stages) and the rate the schedule
// asks for at this moment (a ramp's rate moves linearly through its
// step). Only the arrival-rate model has a target rate.
func targetNow(plan *schedule.Schedule, start time.Time) func() (int, float64, bool) {
	if plan.Model() != schedule.Rate {
		return func() (int, float64, bool) { return 0, 0, false }
	}
	return func() (int, float64, bool) {
		at := time.Since(start)
		rate, _ := plan.Target(at)
		return plan.StepOf(at) + 1, rate, true
	}
}
