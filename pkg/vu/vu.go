package vu

import (
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport"
)

// vu is one virtual user. Everything in it is owned by its goroutine,
// except client's Interrupt, which the stopper calls to cut an in-flight
// request off.
type vu struct {
	r      *run
	id     int
	start  int // Loop: first iteration
	walked int // Loop: iterations walked so far

	res  result.Result // of the request in flight
	hop  bool          // the request in flight follows a redirect
	hops int           // redirects followed to reach the request in flight
	// began: the iteration under way sent its first request (open
	// models: run.settle counts the slot begun, or dropped).
	began bool
	// handed reports that the request in flight reached the client (a
	// rewrite error fails it before); ans is the client's answer, if any.
	handed bool
	ans    result.Answer

	work  chan slot // open models: iterations from the scheduler
	sleep Sleeper   // waits for due times
	// backoff is how long the VU waits after its last request failed to
	// connect (0 after one that reached the SUT).
	backoff time.Duration

	cur    *rrpair.Cursor
	pair   rrpair.Pair
	client transport.Client
	ws     *wsState // nil when the client plays no WebSocket sessions
}

// newVU makes VU id. Called with r.vusMu held: a VU made after the hard
// stop began is interrupted from the start.
func newVU(r *run, id int) *vu {
	v := &vu{r: r, id: id, cur: r.file.NewCursor(), sleep: r.cfg.Clock.NewSleeper()}
	if r.idle != nil {
		v.work = make(chan slot, 1)
	}
	if r.pool.DecodeResponses {
		v.cur.WithResponses()
	}
	v.start = int(int64(id) * int64(r.file.Iterations()) / int64(r.cfg.VUs))
	v.client = r.pool.Transport.NewClient(id, r.nanos)
	v.initSessions()
	if r.hard.Load() {
		v.client.Interrupt()
	}
	return v
}

// run walks iterations until there are none left or the run stops: the
// closed model.
func (v *vu) run() error {
	defer v.client.Close()
	for {
		if !v.waitActive() {
			return nil
		}
		k, ok := v.r.nextIteration(v)
		if !ok {
			return nil
		}
		if err := v.iteration(k, 0); err != nil {
			return err
		}
	}
}

// waitActive holds a closed-model VU beyond the current VU stage target
// until the target reaches it; false when the run stops.
func (v *vu) waitActive() bool {
	for int64(v.id) >= v.r.active.Load() {
		if v.r.stopping.Load() || !v.sleep.Sleep(10*time.Millisecond, v.r.stopCh) {
			return false
		}
	}
	return !v.r.stopping.Load()
}

// serve runs the iterations the scheduler hands this VU: the open models.
func (v *vu) serve() error {
	defer v.client.Close()
	for s := range v.work {
		v.began = false
		err := v.iteration(s.iter, s.due)
		v.r.settle(s, v.began)
		if err != nil {
			return err
		}
		v.r.idle <- v // never blocks: it holds room for every VU
	}
	return nil
}

// iteration runs iteration k: its requests in order, each after the
// previous answer. firstDue is when its first request is due (0: now).
// Later requests are due at the previous answer, plus the recorded gap
// with Think, or at their recorded time under recorded pacing; a VU waits
// for a due time still ahead, and a request begun more than LateAfter past
// its due time is late. Latency runs from the due time.
func (v *vu) iteration(k int, firstDue int64) error {
	r, cfg := v.r, v.r.cfg
	v.cur.Start(k)
	if rw := r.pool.Rewriter; rw != nil {
		rw.Begin(v.id)
	}
	p := pace{firstDue: firstDue}
	for j := 0; !r.stopping.Load(); j++ {
		more, err := v.cur.Next(&v.pair)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		ts, hasTS := int64(0), false
		if cfg.Model == schedule.Recorded || cfg.Think {
			ts, hasTS = v.pair.UnixNano()
		}
		now := r.nanos()
		due := v.dueAt(&p, j, ts, hasTS, now)
		if due > now && !v.sleep.Sleep(time.Duration(due-now), r.stopCh) {
			return nil
		}
		v.countBegin(j, due)
		end, ok := v.send(due)
		if !ok {
			return nil
		}
		p.prevEnd, p.prevTS = end, ts
		p.prevDur, _ = v.pair.RecordedDuration()
	}
	return nil
}

// pace is what an iteration's due times follow: when its first request
// was due (0: now) and that request's recorded time, and when the previous
// request ended, its recorded time and its recorded duration.
type pace struct {
	firstDue, firstTS, prevEnd, prevTS int64
	prevDur                            time.Duration
}

// dueAt is when request j of the iteration, recorded at ts (hasTS: it has
// a time), is due: the first now or at firstDue; a later one at its
// recorded time under recorded pacing, at the previous end plus the
// recorded gap with Think, at the previous end under an open model, or
// now (the closed model).
func (v *vu) dueAt(p *pace, j int, ts int64, hasTS bool, now int64) int64 {
	cfg := v.r.cfg
	due := now
	switch {
	case j == 0 && p.firstDue != 0:
		due, p.firstTS = p.firstDue, ts
	case j == 0:
		p.firstTS = ts
	case cfg.Model == schedule.Recorded && hasTS:
		due = p.firstDue + int64(float64(ts-p.firstTS)/cfg.Speed)
	case cfg.Think && hasTS && p.prevTS != 0:
		gap := time.Duration(ts-p.prevTS) - p.prevDur
		due = p.prevEnd + int64(float64(max(gap, 0))/cfg.Speed)
	case cfg.Model != schedule.Closed:
		due = p.prevEnd
	}
	return due
}

// countBegin counts request j of the iteration, due at due, as it begins:
// late when begun more than LateAfter past due, and the iteration as begun
// with its first request, in the step it was due in.
func (v *vu) countBegin(j int, due int64) {
	r := v.r
	if begin := r.nanos(); begin-due > int64(r.cfg.LateAfter) {
		r.late.Add(1)
		if r.steps != nil {
			r.steps.late[r.steps.of(due)].Add(1)
		}
	}
	if j == 0 {
		v.began = true
		if r.steps != nil {
			r.steps.began[r.steps.of(due)].Add(1)
		}
	}
}

// send sends the request due at due, follows its redirects, and backs off
// after a failed connect; end is when the last answer came (or the
// back-off ended), ok false when the run stopped during the back-off.
func (v *vu) send(due int64) (end int64, ok bool) {
	r := v.r
	end = v.do(due)
	for v.hops < r.cfg.FollowRedirects && v.redirect() {
		v.hops++
		end = v.do(end)
	}
	v.hop, v.hops = false, 0
	if v.backOff() {
		if !v.sleep.Sleep(v.backoff, r.stopCh) {
			return end, false
		}
		end = r.nanos() // the back-off is the generator's, not the SUT's
	}
	return end, true
}

// Connect back-off bounds: after a failed connect a VU waits minBackoff,
// doubled at each further failure up to maxBackoff, before its next
// request; a request that reaches the SUT resets it.
const (
	minBackoff = time.Millisecond
	maxBackoff = 100 * time.Millisecond
)

// backOff updates the VU's back-off from the result of its last request
// and reports whether it must wait (v.backoff) before the next: after a
// connect failure (or the generator's own limits), so that a refused port
// is not retried hundreds of thousands of times a second. Under an
// arrival rate the scheduler keeps its clock meanwhile: iterations due
// while the VU waits go to other VUs, or are dropped, and are counted.
func (v *vu) backOff() bool {
	switch v.res.Err {
	case result.ErrConnect, result.ErrLocal:
		v.backoff = min(max(2*v.backoff, minBackoff), maxBackoff)
		v.r.backoffs.Add(1)
		return true
	case result.ErrCancelled:
		return false
	}
	v.backoff = 0
	return false
}

// do sends the current pair's request, due at due, records the result and
// returns when it ended.
func (v *vu) do(due int64) int64 {
	r := v.r
	v.res = result.Result{VU: uint32(v.id), Endpoint: v.pair.Endpoint, Due: due, Redirect: v.hop}
	v.handed, v.ans = false, nil
	r.inFlight.Add(1)
	defer v.finish()

	req := &v.pair.Req
	if rw := r.pool.Rewriter; rw != nil && !v.hop {
		if err := rw.Rewrite(v.id, req, &v.pair); err != nil {
			v.res.Err = result.ErrOther
			v.res.Sent, v.res.End = r.nanos(), r.nanos()
			return v.res.End
		}
	}
	v.handed = true
	var played bool
	if v.ans, played = v.session(req); !played {
		v.ans = v.client.Do(req, &v.pair, &v.res)
	}
	if v.ans != nil {
		for _, o := range r.pool.Observers {
			o.Observe(v.id, &v.pair, v.ans)
		}
		if v.hops == r.cfg.FollowRedirects && v.hops > 0 {
			v.redirectLimit()
		}
	}
	if played && v.ws.out.End > v.res.End {
		return v.ws.out.End // the next request follows the session's end
	}
	return v.res.End
}

// redirectLimit marks the result of the last hop --follow-redirects
// allows when its answer asks for one more (a loop, usually): the chain is
// cut there. The request is turned into that hop to tell, but not sent:
// the iteration's next pair replaces it.
func (v *vu) redirectLimit() {
	if !v.client.Redirect(&v.pair.Req) {
		return
	}
	v.res.RedirectLimit = true
	if v.r.redirectLimitLogged.CompareAndSwap(false, true) {
		v.r.cfg.Log.Warn().Int("vu", v.id).Int("follow_redirects", v.hops).
			Bytes("next", v.pair.Req.URI).
			Msg("a redirect chain reached --follow-redirects and was cut (counted in redirect_limit; logged once)")
	}
}

// redirect turns the current request into the next hop of a redirect its
// answer asked for (the client's rules), and reports whether there is one.
func (v *vu) redirect() bool {
	if v.res.Err != result.ErrNone || !v.handed || !v.client.Redirect(&v.pair.Req) {
		return false
	}
	v.hop = true
	return true
}

// finish records the result of do, and reports it if it failed.
func (v *vu) finish() {
	v.r.inFlight.Add(-1)
	v.r.pool.Sink.Record(v.res)
	if v.res.Err == result.ErrLocal && v.r.localSeen.CompareAndSwap(false, true) {
		v.r.logLocal()
	}
	if v.r.pool.Failures != nil && !v.res.Succeeded() {
		v.failed(&v.res)
	}
}

// failed hands a failed request to the pool's result.FailureSink: off the
// hot path, only for failures.
func (v *vu) failed(res *result.Result) {
	f := result.Failure{VU: v.id, Pair: &v.pair, Result: res, Body: v.pair.Req.Body}
	if v.handed {
		f.Addr, f.Head, f.Body, f.Err = v.client.Failure()
	}
	if res.Err == result.ErrNone {
		f.Answer = v.ans
	}
	v.r.pool.Failures.Failed(&f)
}
