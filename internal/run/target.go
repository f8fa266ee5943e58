package run

import (
	"time"

	"github.com/replay-dev/replay/pkg/vu"
)

// targetNow returns LiveSources.Target for a run configured by cfg that
// starts about at start: the stage under way and the rate the schedule
// asks for at this moment (a ramp's rate moves linearly through its
// stage). Only the arrival-rate model has a target rate.
func targetNow(cfg *vu.Config, start time.Time) func() (int, float64, bool) {
	if cfg.Model != vu.Rate {
		return func() (int, float64, bool) { return 0, 0, false }
	}
	rate, stages := cfg.Rate, cfg.Stages
	return func() (int, float64, bool) {
		step, r := rateAt(rate, stages, time.Since(start))
		return step, r, true
	}
}

// rateAt is the rate at offset at of a schedule starting at rate through
// stages, and the stage it falls in (from 1; 0 without stages). After the
// last stage its target holds.
func rateAt(rate float64, stages []vu.Stage, at time.Duration) (int, float64) {
	prev := rate
	var t time.Duration
	for i, st := range stages {
		if at < t+st.Duration {
			if st.Hold {
				return i + 1, st.Target
			}
			return i + 1, prev + (st.Target-prev)*float64(at-t)/float64(st.Duration)
		}
		t += st.Duration
		prev = st.Target
	}
	return len(stages), prev
}
