package vu

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/valyala/fasthttp"
)

// Rewriter changes an outgoing request in place before it is sent (the
// transform chain). It is called from every VU concurrently, with that VU's
// own request; vu is the VU's number.
type Rewriter interface {
	Rewrite(vu int, req *rrpair.Request, pair *rrpair.Pair) error
}

// Observer sees each live response (correlation learns from it, comparison
// checks it). It is called from every VU concurrently and must not keep
// resp or pair past the call.
type Observer interface {
	Observe(vu int, pair *rrpair.Pair, resp *fasthttp.Response)
}

// Pool runs virtual users over a file. Set the fields, then call Run once.
type Pool struct {
	File      *rrpair.File
	Config    Config // validated by Run
	Rewriter  Rewriter
	Observers []Observer
	Sink      Sink
}

// Stats describes a finished run. Per-request numbers are in the Sink.
type Stats struct {
	Started    time.Time // when the first VU was started
	Stopped    time.Time // when issuing stopped (limit, file done, or stop)
	Ended      time.Time // when the last VU finished
	VUs        int       // VUs that ran
	Iterations int64     // iterations begun
	// Interrupted reports that ctx was cancelled (a signal) before the run
	// ended by itself.
	Interrupted bool
}

// run is the state the VUs of one Run share.
type run struct {
	cfg  *Config
	file *rrpair.File
	pool *Pool

	base     time.Time // clock origin: nanos() = base + monotonic offset
	baseUnix int64

	stopping atomic.Bool // no new requests
	hard     atomic.Bool // the grace expired: cut in-flight requests off
	hardCtx  context.Context
	next     atomic.Int64 // Once: next iteration to hand out
	started  atomic.Int64 // iterations begun
	vus      []*vu
}

// Run runs the VUs until the file is done (Once), the duration or iteration
// limit is reached, or ctx is cancelled; then it stops issuing, lets
// in-flight requests finish within Config.Grace, cuts off the rest, and
// returns after every VU has exited.
func (p *Pool) Run(ctx context.Context) (Stats, error) {
	if err := p.Config.Validate(); err != nil {
		return Stats{}, err
	}
	cfg := &p.Config
	hardCtx, hardStop := context.WithCancel(context.Background())
	defer hardStop()
	r := &run{cfg: cfg, file: p.File, pool: p, hardCtx: hardCtx}
	r.base = cfg.Now()
	r.baseUnix = r.base.UnixNano()

	stats := Stats{Started: r.base}
	var stoppedAt atomic.Int64
	stop := func() {
		if r.stopping.CompareAndSwap(false, true) {
			stoppedAt.Store(r.nanos())
		}
	}

	r.vus = make([]*vu, cfg.VUs)
	for i := range r.vus {
		r.vus[i] = newVU(r, i)
	}

	// The watcher turns ctx, the duration and the end of the VUs into the
	// stop, then the grace into the hard stop.
	done := make(chan struct{})
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		var deadline <-chan time.Time
		if cfg.Duration > 0 {
			t := time.NewTimer(cfg.Duration)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-done:
			stop()
			return
		case <-ctx.Done():
		case <-deadline:
		}
		stop()
		grace := time.NewTimer(cfg.Grace)
		defer grace.Stop()
		select {
		case <-done:
		case <-grace.C:
			r.hard.Store(true)
			hardStop()
			for _, v := range r.vus {
				v.interrupt()
			}
		}
	}()

	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for _, v := range r.vus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := v.run(); err != nil {
				errOnce.Do(func() { firstErr = err })
				stop()
			}
		}()
	}
	wg.Wait()
	close(done)
	<-watcherDone

	stats.Stopped = time.Unix(0, stoppedAt.Load())
	stats.Ended = time.Unix(0, r.nanos())
	stats.VUs = cfg.VUs
	stats.Iterations = r.started.Load()
	if cfg.Iterations > 0 {
		stats.Iterations = min(stats.Iterations, cfg.Iterations)
	}
	stats.Interrupted = ctx.Err() != nil
	return stats, firstErr
}

// nanos is the run's clock in Unix nanoseconds, monotonic from base.
func (r *run) nanos() int64 {
	return r.baseUnix + int64(r.cfg.Now().Sub(r.base))
}

// nextIteration hands VU v its next iteration, or false when it is done.
func (r *run) nextIteration(v *vu) (int, bool) {
	if r.stopping.Load() {
		return 0, false
	}
	n := r.file.Iterations()
	var k int
	if r.cfg.Walk == Once {
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
