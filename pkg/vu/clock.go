package vu

import (
	"runtime"
	"time"
)

// Clock is the time a run is paced and stamped with: the wall clock in a
// run, a fake one in tests of the scheduling logic.
type Clock interface {
	Now() time.Time
	// NewSleeper returns a Sleeper for one goroutine.
	NewSleeper() Sleeper
}

// Sleeper waits, reusing one timer: sleeping allocates nothing.
type Sleeper interface {
	// Sleep waits for d, or until stop is closed; it reports whether the
	// whole of d passed.
	Sleep(d time.Duration, stop <-chan struct{}) bool
}

// WallClock is the real clock.
type WallClock struct{}

// Now implements Clock.
func (WallClock) Now() time.Time { return time.Now() }

// NewSleeper implements Clock.
func (WallClock) NewSleeper() Sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &wallSleeper{t: t}
}

type wallSleeper struct{ t *time.Timer }

func (s *wallSleeper) Sleep(d time.Duration, stop <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	s.t.Reset(d)
	select {
	case <-s.t.C:
		return true
	case <-stop:
		s.t.Stop()
		return false
	}
}

// PreciseSpin is how long before a due time a precise sleeper stops
// trusting its timer and spins, yielding the processor, until the time.
const PreciseSpin = 2 * time.Millisecond

// preciseSleeper sleeps on a timer until PreciseSpin before the end, then
// spins: --precise-pacing.
type preciseSleeper struct{ wallSleeper }

// newPreciseSleeper is the scheduler's sleeper with Config.PrecisePacing.
func newPreciseSleeper() Sleeper {
	return &preciseSleeper{*WallClock{}.NewSleeper().(*wallSleeper)}
}

func (s *preciseSleeper) Sleep(d time.Duration, stop <-chan struct{}) bool {
	end := time.Now().Add(d)
	if d > PreciseSpin && !s.wallSleeper.Sleep(d-PreciseSpin, stop) {
		return false
	}
	for time.Now().Before(end) {
		select {
		case <-stop:
			return false
		default:
		}
		runtime.Gosched()
	}
	return true
}
