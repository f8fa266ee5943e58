package run

import (
	"time"

	"github.com/replay-dev/replay/pkg/schedule"
)

// targetNow returns LiveSources.Target for a run paced by plan that
// starts about at start: the step under way (from 1; 0 without stages)
// and the rate the schedule asks for at this moment (a ramp's rate moves
// linearly through its step). Only the arrival-rate model has a target
// rate.
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
