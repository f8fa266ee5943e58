package vu

import (
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/schedule"
)

// StepCount is what the VUs counted of one step (one item of Stages): the
// iterations begun, dropped and the requests begun late, each in the step
// it was due in (docs/design.md, Counting). Results carry their own due time,
// so the recorder attributes requests to steps itself; these counts have
// no result.
type StepCount struct {
	Began, Dropped, Late int64
}

// stepCounts counts by step, by the schedule's steps (schedule.StepOf).
type stepCounts struct {
	base                 int64 // Unix ns of the start
	plan                 *schedule.Schedule
	began, dropped, late []atomic.Int64
}

// newStepCounts counts by the steps of plan; nil when it has none.
func newStepCounts(base int64, plan *schedule.Schedule) *stepCounts {
	n := len(plan.Ends())
	if n == 0 {
		return nil
	}
	s := &stepCounts{base: base, plan: plan}
	s.began, s.dropped, s.late = make([]atomic.Int64, n), make([]atomic.Int64, n), make([]atomic.Int64, n)
	return s
}

// of returns the step that due (Unix ns) falls in. It allocates nothing.
func (s *stepCounts) of(due int64) int { return s.plan.StepOf(time.Duration(due - s.base)) }

// Steps returns the counts per step of the last Run (nil without Stages):
// call it after Run has returned.
func (p *Pool) Steps() []StepCount {
	r := p.running.Load()
	if r == nil || r.steps == nil {
		return nil
	}
	out := make([]StepCount, len(r.steps.began))
	for i := range out {
		out[i] = StepCount{Began: r.steps.began[i].Load(), Dropped: r.steps.dropped[i].Load(), Late: r.steps.late[i].Load()}
	}
	return out
}
