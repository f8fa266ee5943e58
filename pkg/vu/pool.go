package vu

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport"
)

// Rewriter changes an outgoing request in place before it is sent (the
// transform chain). It is called from every VU concurrently, with that VU's
// own request; vu is the VU's number, from 0 to the most VUs of the run.
// Begin is called when VU vu starts an iteration (a session), so that what
// it learned in the previous one is forgotten. Rewrite is not called for
// the hops of a redirect: they follow the Location as given. An error
// fails the request (result.ErrOther) without sending it.
type Rewriter interface {
	Begin(vu int)
	Rewrite(vu int, req *rrpair.Request, pair *rrpair.Pair) error
}

// Pool runs virtual users over a file. Set the fields, then call Run once.
type Pool struct {
	File *rrpair.File
	// Config is trusted as given: the caller checks it with Validate (Run
	// fills what it leaves zero with SetDefaults).
	Config Config
	// Transport makes each VU's client: where and how requests are sent.
	Transport transport.Transport
	Rewriter  Rewriter
	Observers []result.Observer
	Sink      result.Sink
	Failures  result.FailureSink // optional
	// DecodeResponses has each VU decode the recorded response of a pair
	// too (headers and body), for Observers that compare.
	DecodeResponses bool
	// Schedule is the schedule of Config.Load (schedule.New), shared with
	// whoever else counts by it (the recorder's steps); nil: Run makes it.
	Schedule *schedule.Schedule

	running atomic.Pointer[run] // the run under way, for Live
}

// Dropped and Late return the run's counts so far: iterations an open
// model dropped, requests begun late. Safe during Run; zeros before it.
func (p *Pool) Dropped() int64 {
	if r := p.running.Load(); r != nil && r.sched != nil {
		return r.sched.dropped.Load()
	}
	return 0
}

// Late: see Dropped.
func (p *Pool) Late() int64 {
	if r := p.running.Load(); r != nil {
		return r.late.Load()
	}
	return 0
}

// Live returns how many VUs the run has started and how many requests are
// in flight; zeros before Run. Safe to call from any goroutine during Run.
func (p *Pool) Live() (vus int, inFlight int64) {
	r := p.running.Load()
	if r == nil {
		return 0, 0
	}
	r.vusMu.Lock()
	vus = len(r.vus)
	r.vusMu.Unlock()
	return vus, r.inFlight.Load()
}

// run is the state the VUs of one Run share.
type run struct {
	cfg  *Config
	file *rrpair.File
	pool *Pool
	plan *schedule.Schedule // what the load asks for over time

	base     time.Time // clock origin: nanos() = base + monotonic offset
	baseUnix int64
	wall     bool // the clock is WallClock: nanos reads time.Since(base)

	stopping atomic.Bool // no new requests
	stopCh   chan struct{}
	stopped  atomic.Int64 // when stopping began, Unix ns
	hard     atomic.Bool  // the grace expired: in-flight requests are cut off
	next     atomic.Int64 // Once, closed model: next iteration to hand out
	started  atomic.Int64 // iterations begun (open models: counted as each ends, settle)
	late     atomic.Int64
	inFlight atomic.Int64 // requests begun and not yet recorded
	active   atomic.Int64 // closed model with stages: VUs with id < active run
	backoffs atomic.Int64 // waits after a failed connect
	// localSeen is set at the first request failed by the generator's own
	// limits (result.ErrLocal), which is logged once.
	localSeen atomic.Bool

	wg     sync.WaitGroup // VUs and the scheduler
	vusMu  sync.Mutex     // guards vus
	vus    []*vu
	idle   chan *vu    // open models: VUs waiting for an iteration
	sched  *scheduler  // open models
	steps  *stepCounts // with Stages; nil otherwise
	errMu  sync.Mutex
	runErr error

	// redirectLimitLogged: the first chain cut by --follow-redirects was
	// logged (once a run; the rest are counted in the results).
	redirectLimitLogged atomic.Bool
}

// Run runs the VUs until the file is done (Once), the duration or iteration
// limit is reached, or ctx is cancelled; then it stops issuing, lets
// in-flight requests finish within Config.Grace, cuts off the rest, and
// returns after every goroutine it started has exited. Before any traffic
// it asks the transport whether every request has somewhere to go
// (transport.Transport.Check). It does not validate Config: its caller has.
func (p *Pool) Run(ctx context.Context) (result.Counters, error) {
	if err := p.prepare(); err != nil {
		return result.Counters{}, err
	}
	cfg := &p.Config
	r := &run{cfg: cfg, file: p.File, pool: p, plan: p.Schedule, stopCh: make(chan struct{})}

	var sched *scheduler
	var outOfOrder int
	if cfg.Model != schedule.Closed {
		var err error
		if sched, outOfOrder, err = r.newScheduler(); err != nil {
			return result.Counters{}, err
		}
	}
	r.base = cfg.Clock.Now()
	r.baseUnix = r.base.UnixNano()
	_, r.wall = cfg.Clock.(WallClock)
	r.sched = sched
	r.steps = newStepCounts(r.baseUnix, r.plan)
	if cfg.OnStart != nil {
		cfg.OnStart(r.base)
	}
	p.running.Store(r)
	stats := result.Counters{Started: r.base, OutOfOrder: outOfOrder}

	// The watcher turns ctx, the duration and the end of the VUs into the
	// stop, then the grace into the hard stop. It starts before the VUs:
	// starting tens of thousands of them takes seconds, during which the
	// duration and a signal must hold.
	done := make(chan struct{})
	watcherDone := make(chan struct{})
	go r.watch(ctx, done, watcherDone)
	r.startVUs(sched)

	r.wg.Wait()
	close(done)
	<-watcherDone
	r.count(ctx, &stats, sched)
	return stats, r.runErr
}

// watch is the watcher: it stops the run when ctx is done, the duration
// is over or the VUs are (done closed), then, past the grace, cuts off the
// requests still in flight. It closes watcherDone as it returns.
func (r *run) watch(ctx context.Context, done <-chan struct{}, watcherDone chan<- struct{}) {
	cfg := r.cfg
	defer close(watcherDone)
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case <-done:
		r.stop()
		return
	case <-ctx.Done():
	case <-deadline:
	}
	r.stop()
	grace := time.NewTimer(cfg.Grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		r.vusMu.Lock()
		r.hard.Store(true)
		for _, v := range r.vus {
			v.client.Interrupt()
		}
		r.vusMu.Unlock()
	}
}

// startVUs starts the VUs: open models, the first VUs idle and the
// scheduler handing them iterations (sched); the closed model, every VU,
// with the goroutine that ramps the active ones under stages.
func (r *run) startVUs(sched *scheduler) {
	cfg := r.cfg
	switch {
	case sched != nil:
		sched.base = r.base
		r.idle = make(chan *vu, cfg.MaxVUs)
		for i := 0; i < cfg.VUs && !r.stopping.Load(); i++ {
			r.idle <- r.spawn()
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			sched.run()
			r.endWork()
		}()
	default:
		n := cfg.MostVUs()
		if len(cfg.Stages) > 0 {
			r.active.Store(int64(r.plan.VUs(0)))
			r.wg.Add(1)
			go func() { defer r.wg.Done(); r.rampVUs() }()
		} else {
			r.active.Store(int64(n))
		}
		for i := 0; i < n && !r.stopping.Load(); i++ {
			r.spawn()
		}
	}
}

// count fills stats, once the run is over, with what it counted and, for
// open models, what the scheduler did.
func (r *run) count(ctx context.Context, stats *result.Counters, sched *scheduler) {
	cfg := r.cfg
	stats.Stopped = time.Unix(0, r.stopped.Load())
	stats.Ended = time.Unix(0, r.nanos())
	stats.VUs = len(r.vus)
	stats.Iterations = r.started.Load()
	if cfg.Iterations > 0 {
		stats.Iterations = min(stats.Iterations, cfg.Iterations)
	}
	stats.Interrupted = ctx.Err() != nil
	stats.Late = r.late.Load()
	stats.Backoffs = r.backoffs.Load()
	if sched != nil {
		stats.Scheduled = sched.scheduled.Load()
		stats.Dropped = sched.dropped.Load()
		stats.LagMax = sched.lagMax
		if n := stats.Scheduled; n > 0 {
			stats.LagMean = sched.lagSum / time.Duration(n)
			stats.LagP50 = time.Duration(sched.lags.ValueAtQuantile(50)) * time.Microsecond
			stats.LagP99 = time.Duration(sched.lags.ValueAtQuantile(99)) * time.Microsecond
		}
	}
}

// prepare fills the Config's defaults and asks the transport whether
// every request of the file has somewhere to go: Run's and DryRun's first
// step, before any traffic.
func (p *Pool) prepare() error {
	if p.Transport == nil {
		return errors.New("vu: Pool.Transport is nil")
	}
	if p.File.Iterations() == 0 {
		// Nothing to schedule (a shard that got no iteration): refused
		// here rather than divided by in the scheduler.
		return fmt.Errorf("%s: no iteration to replay", p.File.Name())
	}
	p.Config.SetDefaults()
	if p.Schedule == nil {
		p.Schedule = schedule.New(p.Config.Load)
	}
	return p.Transport.Check(p.File)
}

// spawn starts a VU. Closed-model VUs walk iterations themselves; a VU of
// an open model waits for the scheduler's slots.
func (r *run) spawn() *vu {
	r.vusMu.Lock()
	v := newVU(r, len(r.vus))
	r.vus = append(r.vus, v)
	r.vusMu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		var err error
		if r.idle != nil {
			err = v.serve()
		} else {
			err = v.run()
		}
		if err != nil {
			r.errMu.Lock()
			if r.runErr == nil {
				r.runErr = err
			}
			r.errMu.Unlock()
			r.stop()
		}
	}()
	return v
}

// stop stops issuing: no VU begins another request, the scheduler hands
// out no more iterations. Safe to call more than once, from any goroutine.
func (r *run) stop() {
	if r.stopping.CompareAndSwap(false, true) {
		r.stopped.Store(r.nanos())
		close(r.stopCh)
	}
}

// dispatch hands s to an idle VU, growing the pool up to MaxVUs; false
// means the iteration is dropped. Called by the scheduler only.
func (r *run) dispatch(s slot) bool {
	var v *vu
	select {
	case v = <-r.idle:
	default:
		r.vusMu.Lock()
		n := len(r.vus)
		r.vusMu.Unlock()
		if n >= r.cfg.MaxVUs {
			if r.steps != nil {
				r.steps.dropped[r.steps.of(s.due)].Add(1)
			}
			return false
		}
		v = r.spawn()
	}
	v.work <- s
	return true
}

// settle counts slot s once its VU is done with it: begun when its first
// request went, else dropped — the run stopped between the hand-off and
// that request — so that scheduled = begun + dropped.
func (r *run) settle(s slot, began bool) {
	if began {
		r.started.Add(1)
		return
	}
	r.sched.dropped.Add(1)
	if r.steps != nil {
		r.steps.dropped[r.steps.of(s.due)].Add(1)
	}
}

// endWork tells every VU of an open model that no more slots will come.
func (r *run) endWork() {
	r.vusMu.Lock()
	defer r.vusMu.Unlock()
	for _, v := range r.vus {
		close(v.work)
	}
}

// newScheduler builds the scheduler of an open model.
func (r *run) newScheduler() (*scheduler, int, error) {
	cfg := r.cfg
	n := int64(r.file.Iterations())
	s := &scheduler{clock: cfg.Clock, stop: r.stopCh, dispatch: r.dispatch, lateAfter: cfg.LateAfter}
	_, wall := cfg.Clock.(WallClock)
	s.precise = cfg.PrecisePacing && wall
	limit := func(k int64) bool { return cfg.Iterations == 0 || k < cfg.Iterations }
	if cfg.Model == schedule.Rate {
		s.pacer = r.plan
		s.iteration = func(k int64) (int, bool) {
			if !limit(k) || (cfg.Walk == schedule.Once && k >= n) {
				return 0, false
			}
			return int(k % n), true
		}
		return s, 0, nil
	}
	order, offsets, outOfOrder, err := recordedOrder(r.file, cfg.Speed)
	if err != nil {
		return nil, 0, err
	}
	s.pacer = NewRecordedPacer(offsets, cfg.Walk == schedule.Loop, cfg.Duration)
	s.iteration = func(k int64) (int, bool) {
		if !limit(k) {
			return 0, false
		}
		return order[k%n], true
	}
	return s, outOfOrder, nil
}

// recordedOrder sorts the iterations by the recorded time of their first
// pair and returns their offsets from the earliest, divided by speed, and
// how many iterations the file lists out of time order.
func recordedOrder(f *rrpair.File, speed float64) (order []int, offsets []time.Duration, outOfOrder int, err error) {
	n := f.Iterations()
	ts := make([]int64, n)
	c := f.NewCursor()
	var p rrpair.Pair
	for k := 0; k < n; k++ {
		if err := c.Decode(f.PairOf(k, 0), &p); err != nil {
			return nil, nil, 0, err
		}
		t, ok := p.UnixNano()
		if !ok {
			return nil, nil, 0, fmt.Errorf("--pace recorded: %s:%d: no ts to pace by (want RFC 3339, got %q)", f.Name(), p.Line, p.TS)
		}
		ts[k] = t
		if k > 0 && t < ts[k-1] {
			outOfOrder++
		}
	}
	order = make([]int, n)
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case ts[a] < ts[b]:
			return -1
		case ts[a] > ts[b]:
			return 1
		}
		return 0
	})
	offsets = make([]time.Duration, n)
	first := ts[order[0]]
	if global, ok := f.FirstTS(); ok && f.Shard().Count > 1 {
		first = global // the shards of a run share one timeline
	}
	for i, k := range order {
		offsets[i] = time.Duration(float64(ts[k]-first) / speed)
	}
	return order, offsets, outOfOrder, nil
}

// rampVUs follows the VU stages of the closed model: VU i runs while
// i < the schedule's VUs, checked every 100ms.
func (r *run) rampVUs() {
	sleep := r.cfg.Clock.NewSleeper()
	for {
		elapsed := r.cfg.Clock.Now().Sub(r.base)
		r.active.Store(int64(r.plan.VUs(elapsed)))
		if elapsed >= schedule.StagesDuration(r.cfg.Stages) {
			return
		}
		if !sleep.Sleep(100*time.Millisecond, r.stopCh) {
			return
		}
	}
}

// nanos is the run's clock in Unix nanoseconds, monotonic from base.
func (r *run) nanos() int64 {
	if r.wall {
		// One read of the monotonic clock where time.Now reads the wall
		// clock too: the clock is read several times a request.
		return r.baseUnix + int64(time.Since(r.base))
	}
	return r.baseUnix + int64(r.cfg.Clock.Now().Sub(r.base))
}

// nextIteration hands closed-model VU v its next iteration, or false when
// it is done.
func (r *run) nextIteration(v *vu) (int, bool) {
	if r.stopping.Load() {
		return 0, false
	}
	n := r.file.Iterations()
	var k int
	if r.cfg.Walk == schedule.Once {
		next := r.next.Add(1) - 1
		if next >= int64(n) {
			return 0, false
		}
		k = int(next)
	} else {
		k = (v.start + v.walked) % n
		v.walked++
	}
	if r.cfg.Iterations > 0 && r.started.Add(1) > r.cfg.Iterations {
		return 0, false
	}
	if r.cfg.Iterations == 0 {
		r.started.Add(1)
	}
	return k, true
}

// logLocal says, once, that the generator hit its own limits: the
// requests that failed so are counted as errors "local", not the SUT's.
func (r *run) logLocal() {
	ev := r.cfg.Log.Error()
	if soft, hard, ok := OpenFileLimit(); ok {
		ev = ev.Uint64("nofile_soft", soft).Uint64("nofile_hard", hard)
	}
	ev.Str("fix", localHint()).Msg("the generator ran out of its own resources (file descriptors, local ports or socket buffers): " +
		"those requests are counted as errors \"local\", not the SUT's")
}
