package vu

import (
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
)

// slot is an iteration handed to a VU by the scheduler.
type slot struct {
	iter int
	due  int64 // Unix ns: when its first request is due
}

// scheduler starts the iterations of an open model when its Pacer says,
// on one timeline computed from the start (a late wake-up is caught up by
// starting what is due at once, never by shifting what follows). It owns no
// VUs: dispatch hands a slot to one, or reports that none was free.
type scheduler struct {
	pacer Pacer
	clock Clock
	base  time.Time // the start; due times are offsets from it
	// iteration maps the k-th scheduled iteration to a file iteration, or
	// false when the walk is over.
	iteration func(k int64) (int, bool)
	dispatch  func(s slot) bool
	stop      <-chan struct{}
	lateAfter time.Duration
	precise   bool // Config.PrecisePacing on the wall clock

	// Counters, read after run returns (or atomically during it).
	scheduled atomic.Int64 // iterations that came due
	dropped   atomic.Int64 // due, but no VU was free
	late      atomic.Int64 // handed out more than lateAfter after due
	lagMax    time.Duration
	lagSum    time.Duration
	lags      *hdrhistogram.Histogram // every lag, µs (the one geometry)
}

// run schedules until the pacer or the walk ends, or stop is closed.
func (s *scheduler) run() {
	sleep := s.clock.NewSleeper()
	if s.precise {
		sleep = newPreciseSleeper()
	}
	if s.lags == nil {
		s.lags = hist.New()
	}
	baseUnix := s.base.UnixNano()
	for k := int64(0); ; k++ {
		due, ok := s.pacer.Due(k)
		if !ok {
			return
		}
		iter, ok := s.iteration(k)
		if !ok {
			return
		}
		if wait := due - s.clock.Now().Sub(s.base); wait > 0 {
			if !sleep.Sleep(wait, s.stop) {
				return
			}
		}
		select {
		case <-s.stop:
			return
		default:
		}
		lag := s.clock.Now().Sub(s.base) - due
		if lag > s.lagMax {
			s.lagMax = lag
		}
		if lag > 0 {
			s.lagSum += lag
		}
		hist.RecordNanos(s.lags, int64(max(lag, 0)))
		if lag > s.lateAfter {
			s.late.Add(1)
		}
		s.scheduled.Add(1)
		if !s.dispatch(slot{iter: iter, due: baseUnix + int64(due)}) {
			s.dropped.Add(1)
		}
	}
}
