package vu

import (
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/http1"
	"github.com/rs/zerolog"
)

// A slot handed to a VU as the run stops (the scheduler checked the stop
// just before) is not begun: it counts as dropped, not as an iteration
// begun that sent nothing, so that scheduled = begun + dropped and every
// begun iteration sent its first request.
func TestSlotAtTheStopIsDropped(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	cfg := Config{Load: schedule.Load{Model: schedule.Rate, Rate: 10, VUs: 1, Walk: schedule.Loop, Duration: time.Second}, Log: zerolog.Nop()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sink := &collect{}
	p := &Pool{File: openLines(t, manyLines(3)...), Config: cfg, Sink: sink,
		Transport: newTransport(t, http1.Options{Conn: conn.Options{Target: srv.URL(), Timeout: 5 * time.Second}})}
	p.Config.SetDefaults()
	p.Schedule = schedule.New(p.Config.Load)
	r := &run{cfg: &p.Config, file: p.File, pool: p, plan: p.Schedule, stopCh: make(chan struct{}), sched: &scheduler{}}
	r.base = time.Now()
	r.baseUnix, r.wall = r.base.UnixNano(), true
	r.idle = make(chan *vu, 1)
	r.spawn()
	r.stop()
	r.sched.scheduled.Add(1)
	if !r.dispatch(slot{iter: 0, due: r.baseUnix}) {
		t.Fatal("no VU took the slot")
	}
	r.endWork()
	r.wg.Wait()
	if got := len(sink.Results()); got != 0 {
		t.Fatalf("%d requests sent after the stop", got)
	}
	if r.started.Load() != 0 || r.sched.dropped.Load() != 1 {
		t.Errorf("begun %d, dropped %d; want 0 and 1: the slot came due and was not begun", r.started.Load(), r.sched.dropped.Load())
	}
}
