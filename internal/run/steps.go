package run

import (
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/vu"
)

// stepEnds are the ends of the run's steps (--stages) as offsets from its
// start, cut at --duration: a step that would begin after it is not run.
// Nil without stages.
func stepEnds(cfg *vu.Config) []time.Duration {
	var ends []time.Duration
	var at time.Duration
	for _, st := range cfg.Stages {
		if cfg.Duration > 0 && at >= cfg.Duration {
			break
		}
		at += st.Duration
		if cfg.Duration > 0 {
			at = min(at, cfg.Duration)
		}
		ends = append(ends, at)
	}
	return ends
}

// stepPlans describes the run's steps for its summary: their length and
// target (a ramp from the previous target, or from --rate or --vus for the
// first), with what the VUs counted in each.
func stepPlans(cfg *vu.Config, counts []vu.StepCount) []recording.StepPlan {
	ends := stepEnds(cfg)
	plans := make([]recording.StepPlan, len(ends))
	prev := cfg.Rate
	if cfg.Model == vu.Closed {
		prev = float64(cfg.VUs)
	}
	var at time.Duration
	for i, end := range ends {
		st := cfg.Stages[i]
		p := recording.StepPlan{Duration: end - at, From: prev, To: st.Target, Ramp: !st.Hold && prev != st.Target, VUs: cfg.Model == vu.Closed}
		if !p.Ramp {
			p.From = st.Target
		}
		if i < len(counts) {
			p.Began, p.Dropped, p.Late = counts[i].Began, counts[i].Dropped, counts[i].Late
		}
		plans[i] = p
		prev, at = st.Target, end
	}
	return plans
}

// startSteps has the recorder (and the end-to-end tracker) count by step:
// it gives them the steps' ends, and has the VUs tell them when the run
// starts, the origin of the steps.
func (r *runner) startSteps() {
	ends := stepEnds(&r.pool.Config)
	if len(ends) == 0 {
		return
	}
	r.rec.Steps(ends)
	r.pool.Config.OnStart = func(t time.Time) {
		r.rec.Start(t)
		if r.track != nil {
			r.track.tracker.SetSteps(t, ends)
		}
	}
}
