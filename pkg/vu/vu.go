package vu

import (
	"bufio"
	"net"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/valyala/fasthttp"
)

// A body up to this size is copied behind the head and sent in one write;
// a larger one is written after the head from where it lies (the mapped
// file, usually).
const inlineBody = 16 << 10

// readBuffer is the size of a VU's read buffer; response headers must fit.
const readBuffer = 16 << 10

// vu is one virtual user. Everything in it is owned by its goroutine, except
// active, which the stopper reads to cut an in-flight request off.
type vu struct {
	r      *run
	id     int
	start  int // Loop: first iteration
	walked int // Loop: iterations walked so far

	res result.Result // of the request in flight
	hop bool          // the request in flight follows a redirect
	loc []byte        // the Location being followed

	// The request in flight, for a failure report.
	headLen int
	lastErr error
	addr    string

	work  chan slot // open models: iterations from the scheduler
	sleep Sleeper   // waits for due times

	cur  *rrpair.Cursor
	pair rrpair.Pair
	resp fasthttp.Response
	ans  answer // the view of resp lent to observers

	c       *conn                // current connection, nil when none
	active  atomic.Pointer[conn] // c, published for interrupt
	hadConn bool                 // a connection was opened before
	br      *bufio.Reader        // reused across connections
	cr      countingReader
	wbuf    []byte
	dialer  *tcpDialer

	// The last recorded host resolved to a dial address (no --target).
	lastHost  []byte
	lastHTTPS bool
	lastAddr  string
	lastName  string
}

// countingReader counts the bytes read from the socket and keeps the last
// socket error, which fasthttp reports less precisely.
type countingReader struct {
	nc  net.Conn
	n   int64
	err error
	// With timings: when the first byte of the answer arrived.
	now   func() int64 // nil without timings
	first int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.nc.Read(p)
	c.n += int64(n)
	if err != nil {
		c.err = err
	}
	if n > 0 && c.first == 0 && c.now != nil {
		c.first = c.now()
	}
	return n, err
}

func newVU(r *run, id int) *vu {
	v := &vu{r: r, id: id, cur: r.file.NewCursor(), sleep: r.cfg.Clock.NewSleeper()}
	if r.idle != nil {
		v.work = make(chan slot, 1)
	}
	if r.pool.DecodeResponses {
		v.cur.WithResponses()
	}
	v.start = int(int64(id) * int64(r.file.Iterations()) / int64(r.cfg.VUs))
	v.br = bufio.NewReaderSize(&v.cr, readBuffer)
	if r.cfg.Timings {
		v.cr.now = r.nanos
	}
	v.dialer = newTCPDialer(&r.hard, r.nanos)
	return v
}

// run walks iterations until there are none left or the run stops: the
// closed model.
func (v *vu) run() error {
	defer v.closeConn()
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
	defer v.closeConn()
	for s := range v.work {
		if err := v.iteration(s.iter, s.due); err != nil {
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
	var prevEnd, prevTS, firstTS int64
	var prevDur time.Duration
	for j := 0; !r.stopping.Load(); j++ {
		more, err := v.cur.Next(&v.pair)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		ts, hasTS := int64(0), false
		if cfg.Model == Recorded || cfg.Think {
			ts, hasTS = v.pair.UnixNano()
		}
		now := r.nanos()
		due := now
		switch {
		case j == 0 && firstDue != 0:
			due, firstTS = firstDue, ts
		case j == 0:
			firstTS = ts
		case cfg.Model == Recorded && hasTS:
			due = firstDue + int64(float64(ts-firstTS)/cfg.Speed)
		case cfg.Think && hasTS && prevTS != 0:
			gap := time.Duration(ts-prevTS) - prevDur
			due = prevEnd + int64(float64(max(gap, 0))/cfg.Speed)
		case cfg.Model != Closed:
			due = prevEnd
		}
		if due > now && !v.sleep.Sleep(time.Duration(due-now), r.stopCh) {
			return nil
		}
		if begin := r.nanos(); begin-due > int64(cfg.LateAfter) {
			r.late.Add(1)
		}
		prevEnd = v.do(due)
		for hop := 0; hop < cfg.FollowRedirects && v.redirect(); hop++ {
			prevEnd = v.do(prevEnd)
		}
		v.hop = false
		prevTS = ts
		prevDur, _ = v.pair.RecordedDuration()
	}
	return nil
}

// do sends the current pair's request, due at due, records the result and
// returns when it ended.
func (v *vu) do(due int64) int64 {
	r, cfg := v.r, v.r.cfg
	v.res = result.Result{VU: uint32(v.id), Endpoint: v.pair.Endpoint, Downgraded: v.pair.IsHTTP2(), Due: due, Redirect: v.hop}
	res := &v.res
	v.headLen, v.lastErr, v.addr = 0, nil, ""
	r.inFlight.Add(1)
	defer v.finish()

	req := &v.pair.Req
	if rw := r.pool.Rewriter; rw != nil && !v.hop {
		if err := rw.Rewrite(v.id, req, &v.pair); err != nil {
			res.Err = result.ErrOther
			res.Sent, res.End = r.nanos(), r.nanos()
			return res.End
		}
	}
	https, addr, name, host := v.destination(req)
	v.addr = addr
	v.wbuf = appendHead(v.wbuf[:0], req, host, cfg.NoConnectionReuse)
	v.headLen = len(v.wbuf)
	body := req.Body
	if len(body) <= inlineBody {
		v.wbuf = append(v.wbuf, body...)
		body = nil
	}
	early, kind := v.connect(addr, name, https, res, v.wbuf)
	if kind != result.ErrNone {
		v.headLen = 0 // nothing was sent
		res.Err = kind
		res.End = r.nanos()
		res.Sent = res.End
		return res.End
	}
	c := v.c

	c.raw.SetDeadline(time.Now().Add(cfg.Timeout))
	if r.hard.Load() {
		c.raw.SetDeadline(time.Unix(1, 0))
	}
	if early == 0 {
		res.Sent = r.nanos()
	}
	n := early
	var err error
	if n < len(v.wbuf) {
		var w int
		w, err = c.nc.Write(v.wbuf[n:])
		n += w
	}
	if err == nil && body != nil {
		var w int
		w, err = c.nc.Write(body)
		n += w
	}
	res.BytesOut, res.Written = int64(n), n > 0
	if cfg.Timings {
		res.SendNs = r.nanos() - res.Sent
	}
	if err != nil {
		res.Err = v.classify(err, err)
		res.End = r.nanos()
		v.lastErr = err
		v.closeConn()
		return res.End
	}

	v.resp.Reset()
	v.ans.reset(&v.resp, cfg.MaxBody)
	v.resp.SkipBody = string(req.Method) == "HEAD"
	v.cr.n, v.cr.err, v.cr.first = 0, nil, 0
	err = v.resp.ReadLimitBody(v.br, cfg.MaxBody)
	res.End = r.nanos()
	res.BytesIn = v.cr.n
	if first := v.cr.first; first != 0 {
		res.WaitNs = first - (res.Sent + res.SendNs)
		res.ReceiveNs = res.End - first
	}
	if err != nil {
		res.Err = v.classify(v.cr.err, err)
		v.lastErr = err
		v.closeConn()
		return res.End
	}
	res.Status = uint16(v.resp.StatusCode())
	h := &v.resp.Header
	if cfg.NoConnectionReuse || h.ConnectionClose() || !h.IsHTTP11() || h.ContentLength() == -2 {
		v.closeConn()
	}
	for _, o := range r.pool.Observers {
		o.Observe(v.id, &v.pair, &v.ans)
	}
	return res.End
}

// finish records the result of do, and reports it if it failed.
func (v *vu) finish() {
	v.r.inFlight.Add(-1)
	v.r.pool.Sink.Record(v.res)
	if v.r.pool.Failures != nil && (v.res.Err != result.ErrNone || v.res.Status >= 400) {
		v.failed(&v.res)
	}
}

// failed hands a failed request to the pool's result.FailureSink: off the hot path,
// only for failures.
func (v *vu) failed(res *result.Result) {
	f := result.Failure{VU: v.id, Pair: &v.pair, Addr: v.addr, Result: res, Err: v.lastErr}
	if v.headLen > 0 {
		f.Head = v.wbuf[:v.headLen]
	}
	f.Body = v.pair.Req.Body
	if res.Err == result.ErrNone {
		f.Answer = &v.ans
	}
	v.r.pool.Failures.Failed(&f)
}
