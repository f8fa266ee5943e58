package vu

import (
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/result"
)

// StepCount is what the VUs counted of one step (one item of Stages): the
// iterations begun, dropped and the requests begun late, each in the step
// it was due in (DESIGN.md, Counting). Results carry their own due time,
// so the recorder attributes requests to steps itself; these counts have
// no result.
type StepCount struct {
	Began, Dropped, Late int64
}

// stepCounts counts by step: ends[i] is the offset from the start at which
// step i ends. A due time past the last step (a session's later request)
// belongs to the last; one before the start, to the first.
type stepCounts struct {
	base                 int64 // Unix ns of the start
	ends                 []int64
	began, dropped, late []atomic.Int64
}

func newStepCounts(base int64, stages []Stage) *stepCounts {
	if len(stages) == 0 {
		return nil
	}
	s := &stepCounts{base: base, ends: StageEnds(stages)}
	n := len(stages)
	s.began, s.dropped, s.late = make([]atomic.Int64, n), make([]atomic.Int64, n), make([]atomic.Int64, n)
	return s
}

// StageEnds returns the offset from the start at which each stage ends, in
// ns: the step boundaries.
func StageEnds(stages []Stage) []int64 {
	ends := make([]int64, len(stages))
	var at time.Duration
	for i, st := range stages {
		at += st.Duration
		ends[i] = int64(at)
	}
	return ends
}

// of returns the step that due (Unix ns) falls in. It allocates nothing.
func (s *stepCounts) of(due int64) int { return result.StepOf(s.ends, due-s.base) }

// Steps returns the counts per step of the last Run (nil without Stages):
// call it after Run has returned.
func (p *Pool) Steps() []StepCount {
	r := p.running.Load()
	if r == nil || r.steps == nil {
		return nil
	}
	out := make([]StepCount, len(r.steps.ends))
	for i := range out {
		out[i] = StepCount{Began: r.steps.began[i].Load(), Dropped: r.steps.dropped[i].Load(), Late: r.steps.late[i].Load()}
	}
	return out
}
