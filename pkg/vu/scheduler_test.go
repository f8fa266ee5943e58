package vu

import (
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/schedule"
)

// fakeClock advances only when slept on; each sleep overshoots by
// oversleep, as a busy machine's timers do.
type fakeClock struct {
	mu        sync.Mutex // guards now
	now       time.Time
	oversleep time.Duration
	sleeps    int
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewSleeper() Sleeper { return fakeSleeper{c} }

type fakeSleeper struct{ c *fakeClock }

func (s fakeSleeper) Sleep(d time.Duration, stop <-chan struct{}) bool {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.now = s.c.now.Add(d + s.c.oversleep)
	s.c.sleeps++
	return true
}

// runScheduler runs a scheduler on a fake clock and returns the slots it
// handed out; accept decides which dispatches find a free VU.
func runScheduler(t *testing.T, p Pacer, oversleep time.Duration, accept func(n int) bool) ([]slot, *scheduler, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1000, 0), oversleep: oversleep}
	var slots []slot
	s := &scheduler{
		pacer: p, clock: clock, base: clock.Now(), lateAfter: time.Millisecond,
		iteration: func(k int64) (int, bool) { return int(k % 7), true },
		dispatch: func(sl slot) bool {
			if accept != nil && !accept(len(slots)) {
				slots = append(slots, slot{iter: -1, due: sl.due})
				return false
			}
			slots = append(slots, sl)
			return true
		},
		stop: make(chan struct{}),
	}
	s.run()
	return slots, s, clock
}

func TestSchedulerRateExact(t *testing.T) {
	slots, s, _ := runScheduler(t, schedule.New(schedule.Load{Model: schedule.Rate, VUs: 1, Rate: 1000, Duration: time.Second}), 0, nil)
	if len(slots) != 1000 || s.scheduled.Load() != 1000 {
		t.Fatalf("got %d slots, want 1000", len(slots))
	}
	base := time.Unix(1000, 0).UnixNano()
	for k, sl := range slots {
		if want := base + int64(k)*int64(time.Millisecond); sl.due != want || sl.iter != k%7 {
			t.Fatalf("slot %d: due %d iter %d, want due %d iter %d", k, sl.due, sl.iter, want, k%7)
		}
	}
	if s.lagMax != 0 || s.late.Load() != 0 || s.dropped.Load() != 0 {
		t.Errorf("lag %v, late %d, dropped %d; want none on a punctual clock", s.lagMax, s.late.Load(), s.dropped.Load())
	}
}

// TestSchedulerCatchesUp: every sleep overshoots by 5ms, yet all 1000
// iterations come due at their exact times (no drift), the ones found
// overdue start at once, and the lag is measured.
func TestSchedulerCatchesUp(t *testing.T) {
	slots, s, clock := runScheduler(t, schedule.New(schedule.Load{Model: schedule.Rate, VUs: 1, Rate: 1000, Duration: time.Second}), 5*time.Millisecond, nil)
	if len(slots) != 1000 {
		t.Fatalf("got %d slots, want 1000", len(slots))
	}
	base := time.Unix(1000, 0).UnixNano()
	for k, sl := range slots {
		if want := base + int64(k)*int64(time.Millisecond); sl.due != want {
			t.Fatalf("slot %d drifted: due %d, want %d", k, sl.due, want)
		}
	}
	if clock.sleeps > 200 {
		t.Errorf("slept %d times: overdue iterations should start without sleeping", clock.sleeps)
	}
	if s.lagMax < 4*time.Millisecond || s.lagMax > 6*time.Millisecond {
		t.Errorf("lag max %v, want about the 5ms oversleep", s.lagMax)
	}
	if s.late.Load() == 0 {
		t.Error("no iteration counted late")
	}
}

func TestSchedulerDrops(t *testing.T) {
	_, s, _ := runScheduler(t, schedule.New(schedule.Load{Model: schedule.Rate, VUs: 1, Rate: 100, Duration: time.Second}), 0, func(n int) bool { return n%4 != 0 })
	if s.scheduled.Load() != 100 || s.dropped.Load() != 25 {
		t.Errorf("scheduled %d, dropped %d; want 100, 25", s.scheduled.Load(), s.dropped.Load())
	}
}

func TestSchedulerRamp(t *testing.T) {
	stages, _, _ := schedule.ParseStages("2s:1000", true)
	slots, _, _ := runScheduler(t, schedule.New(schedule.Load{Model: schedule.Rate, VUs: 1, Stages: stages}), 0, nil)
	if len(slots) != 1000 { // ∫ 0→1000 over 2s
		t.Fatalf("got %d slots, want 1000", len(slots))
	}
	// The first half of the ramp holds a quarter of the iterations.
	mid := time.Unix(1001, 0).UnixNano()
	n := 0
	for _, sl := range slots {
		if sl.due < mid {
			n++
		}
	}
	if n != 250 {
		t.Errorf("got %d iterations in the first second, want 250", n)
	}
}

func TestSchedulerRecorded(t *testing.T) {
	offsets := []time.Duration{0, 50 * time.Millisecond, 50 * time.Millisecond, 300 * time.Millisecond}
	slots, _, _ := runScheduler(t, NewRecordedPacer(offsets, false, 0), 0, nil)
	base := time.Unix(1000, 0).UnixNano()
	if len(slots) != 4 {
		t.Fatalf("got %d slots, want 4", len(slots))
	}
	for i, sl := range slots {
		if sl.due != base+int64(offsets[i]) {
			t.Errorf("slot %d due %v, want %v", i, time.Duration(sl.due-base), offsets[i])
		}
	}
}

func TestSchedulerStops(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	stop := make(chan struct{})
	n := 0
	s := &scheduler{
		pacer: schedule.New(schedule.Load{Model: schedule.Rate, VUs: 1, Rate: 1000, Duration: 0}), clock: clock, base: clock.Now(), stop: stop,
		iteration: func(k int64) (int, bool) { return 0, true },
		dispatch: func(slot) bool {
			if n++; n == 10 {
				close(stop)
			}
			return true
		},
	}
	s.run() // an endless rate: returns only because of stop
	if n != 10 {
		t.Errorf("dispatched %d, want 10", n)
	}
}
