package vu

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/valyala/fasthttp"
)

// A body up to this size is copied behind the head and sent in one write;
// a larger one goes out from where it lies (the mapped file, usually) with
// writev.
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

	res Result // of the request in flight
	hop bool   // the request in flight follows a redirect
	loc []byte // the Location being followed

	// The request in flight, for a failure report.
	headLen int
	lastErr error
	addr    string

	work  chan slot // open models: iterations from the scheduler
	sleep Sleeper   // waits for due times

	cur  *rrpair.Cursor
	pair rrpair.Pair
	resp fasthttp.Response

	c       *conn                // current connection, nil when none
	active  atomic.Pointer[conn] // c, published for interrupt
	hadConn bool                 // a connection was opened before
	br      *bufio.Reader        // reused across connections
	cr      countingReader
	wbuf    []byte
	bufArr  [2][]byte
	bufs    net.Buffers
	dialer  net.Dialer

	// The last recorded host resolved to a dial address (no --target).
	lastHost  []byte
	lastHTTPS bool
	lastAddr  string
	lastName  string
}

// conn is a VU's connection.
type conn struct {
	raw    net.Conn // the TCP connection: deadlines and close
	nc     net.Conn // raw, or TLS over it
	addr   string
	https  bool
	opened int64 // Unix ns on the run's clock
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
	v.start = int(int64(id) * int64(r.file.Iterations()) / int64(r.cfg.VUs))
	v.br = bufio.NewReaderSize(&v.cr, readBuffer)
	if r.cfg.Timings {
		v.cr.now = r.nanos
	}
	// No TCP keep-alive probes: a VU's connection is busy or closed, and
	// the four setsockopt calls per dial cost --no-connection-reuse dearly.
	v.dialer.KeepAlive = -1
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
	v.res = Result{VU: uint32(v.id), Endpoint: v.pair.Endpoint, Downgraded: v.pair.IsHTTP2(), Due: due, Redirect: v.hop}
	res := &v.res
	v.headLen, v.lastErr, v.addr = 0, nil, ""
	defer v.finish()

	req := &v.pair.Req
	if rw := r.pool.Rewriter; rw != nil {
		if err := rw.Rewrite(v.id, req, &v.pair); err != nil {
			res.Err = ErrOther
			res.Sent, res.End = r.nanos(), r.nanos()
			return res.End
		}
	}
	https, addr, name, host := v.destination(req)
	v.addr = addr
	if kind := v.connect(addr, name, https, res); kind != ErrNone {
		res.Err = kind
		res.End = r.nanos()
		res.Sent = res.End
		return res.End
	}
	c := v.c

	v.wbuf = appendHead(v.wbuf[:0], req, host, cfg.NoConnectionReuse)
	v.headLen = len(v.wbuf)
	body := req.Body
	if len(body) <= inlineBody {
		v.wbuf = append(v.wbuf, body...)
		body = nil
	}
	c.raw.SetDeadline(time.Now().Add(cfg.Timeout))
	if r.hard.Load() {
		c.raw.SetDeadline(time.Unix(1, 0))
	}
	res.Sent = r.nanos()
	var n int64
	var err error
	if body == nil {
		var w int
		w, err = c.nc.Write(v.wbuf)
		n = int64(w)
	} else {
		v.bufArr = [2][]byte{v.wbuf, body}
		v.bufs = v.bufArr[:] // WriteTo consumes it
		n, err = v.bufs.WriteTo(c.nc)
	}
	res.BytesOut, res.Written = n, n > 0
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
		o.Observe(v.id, &v.pair, &v.resp)
	}
	return res.End
}

// redirect turns the current request into the next hop of a redirect the
// last answer asked for, and reports whether there is one to follow: 301,
// 302 and 303 turn a request with a body into a GET without one (as
// browsers and k6 do), 307 and 308 keep method and body. A Location with a
// host goes where that recorded host would (--host-map, --target).
func (v *vu) redirect() bool {
	if v.res.Err != ErrNone {
		return false
	}
	switch v.res.Status {
	case 301, 302, 303, 307, 308:
	default:
		return false
	}
	loc := v.resp.Header.Peek("Location")
	if len(loc) == 0 {
		return false
	}
	v.loc = append(v.loc[:0], loc...)
	req := &v.pair.Req
	switch {
	case hasPrefixFold(v.loc, "http://") || hasPrefixFold(v.loc, "https://"):
		u, err := url.Parse(string(v.loc))
		if err != nil || u.Host == "" {
			return false
		}
		req.Scheme, req.Host = []byte(u.Scheme), []byte(u.Host)
		req.URI = []byte(u.RequestURI())
	case v.loc[0] == '/':
		req.URI = v.loc
	default: // relative to the current path
		base, err := url.Parse(string(req.URI))
		ref, err2 := url.Parse(string(v.loc))
		if err != nil || err2 != nil {
			return false
		}
		req.URI = []byte(base.ResolveReference(ref).RequestURI())
	}
	if s := v.res.Status; (s == 303 || s == 301 || s == 302) && string(req.Method) != "HEAD" {
		req.Method, req.Body = []byte("GET"), nil
		hs := req.Headers[:0]
		for _, h := range req.Headers {
			if !equalFold(h.Name, "content-length") && !equalFold(h.Name, "content-type") {
				hs = append(hs, h)
			}
		}
		req.Headers = hs
	}
	v.hop = true
	return true
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && equalFold(b[:len(prefix)], prefix)
}

// finish records the result of do, and reports it if it failed.
func (v *vu) finish() {
	v.r.pool.Sink.Record(v.res)
	if v.r.pool.Failures != nil && (v.res.Err != ErrNone || v.res.Status >= 400) {
		v.failed(&v.res)
	}
}

// failed hands a failed request to the pool's FailureSink: off the hot path,
// only for failures.
func (v *vu) failed(res *Result) {
	f := Failure{VU: v.id, Pair: &v.pair, Addr: v.addr, Result: res, Err: v.lastErr}
	if v.headLen > 0 {
		f.Head = v.wbuf[:v.headLen]
	}
	f.Body = v.pair.Req.Body
	if res.Err == ErrNone {
		f.Response = &v.resp
	}
	v.r.pool.Failures.Failed(&f)
}

// destination says where req goes: over TLS or not, the dial address, the
// host name for SNI, and the Host header value.
func (v *vu) destination(req *rrpair.Request) (https bool, addr, name string, host []byte) {
	cfg := v.r.cfg
	t := cfg.target
	if mapped, ok := cfg.hostMap[string(req.Host)]; ok {
		t = mapped
	}
	if t != nil {
		host = t.host
		if cfg.KeepHost {
			host = recordedHost(req, t.host)
		}
		return t.https, t.addr, t.name, host
	}
	https = bytes.Equal(req.Scheme, []byte("https"))
	if v.lastAddr == "" || https != v.lastHTTPS || !bytes.Equal(req.Host, v.lastHost) {
		v.lastHost = append(v.lastHost[:0], req.Host...)
		v.lastHTTPS = https
		v.lastAddr, v.lastName = dialAddr(string(req.Host), https)
	}
	return https, v.lastAddr, v.lastName, recordedHost(req, req.Host)
}

// recordedHost is the recorded Host header value, else fallback.
func recordedHost(req *rrpair.Request, fallback []byte) []byte {
	for i := range req.Headers {
		if equalFold(req.Headers[i].Name, "host") {
			return req.Headers[i].Value
		}
	}
	if len(req.Host) > 0 {
		return req.Host
	}
	return fallback
}

// connect makes sure the VU holds a connection to addr, dialing one if
// needed. It returns the error kind of a failed dial.
func (v *vu) connect(addr, name string, https bool, res *Result) ErrorKind {
	cfg := v.r.cfg
	if v.c != nil && (v.c.addr != addr || v.c.https != https ||
		cfg.MaxConnDuration > 0 && v.r.nanos()-v.c.opened >= int64(cfg.MaxConnDuration)) {
		v.closeConn()
	}
	if v.c != nil {
		return ErrNone
	}
	res.Connected = true
	res.Reconnect = v.hadConn && !cfg.NoConnectionReuse
	v.hadConn = true

	ctx, cancel := context.WithTimeout(v.r.hardCtx, cfg.Timeout)
	defer cancel()
	var t0 int64
	if cfg.Timings {
		t0 = v.r.nanos()
	}
	raw, err := v.dial(ctx, addr)
	if cfg.Timings {
		res.ConnectNs = v.r.nanos() - t0
	}
	if err != nil {
		if v.r.hard.Load() {
			return ErrCancelled
		}
		return ErrConnect
	}
	c := &conn{raw: raw, nc: raw, addr: addr, https: https, opened: v.r.nanos()}
	if https {
		tc := cfg.tls.Clone()
		if tc.ServerName == "" { // --server-name overrides the host dialed
			tc.ServerName = name
		}
		tlsConn := tls.Client(raw, tc)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			raw.Close()
			if v.r.hard.Load() {
				return ErrCancelled
			}
			if ctx.Err() != nil {
				return ErrTimeout
			}
			return ErrTLS
		}
		c.nc = tlsConn
		if cfg.Timings {
			res.TLSNs = v.r.nanos() - t0 - res.ConnectNs
		}
	}
	v.c = c
	v.active.Store(c)
	v.cr.nc = c.nc
	v.br.Reset(&v.cr)
	if v.r.hard.Load() { // the stopper may have missed this connection
		c.raw.SetDeadline(time.Unix(1, 0))
	}
	return ErrNone
}

// dial opens a TCP connection to addr, through the --proxy's CONNECT
// tunnel when there is one (the request then goes through it unchanged,
// origin-form, as it would directly).
func (v *vu) dial(ctx context.Context, addr string) (net.Conn, error) {
	p := v.r.cfg.proxy
	if p == nil {
		return v.dialer.DialContext(ctx, "tcp", addr)
	}
	c, err := v.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		c.SetDeadline(deadline)
	}
	req := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n" + p.auth + "\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	// Read the answer byte by byte up to its blank line, so that nothing
	// of the tunnelled stream is consumed here.
	var head []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if _, err := c.Read(one); err != nil {
			c.Close()
			return nil, err
		}
		if head = append(head, one[0]); len(head) > 16<<10 {
			c.Close()
			return nil, errors.New("proxy: CONNECT answer too long")
		}
	}
	if f := bytes.Fields(head); len(f) < 2 || f[1][0] != '2' {
		c.Close()
		return nil, fmt.Errorf("proxy: CONNECT %s: %s", addr, bytes.SplitN(head, []byte("\r\n"), 2)[0])
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

func (v *vu) closeConn() {
	if v.c == nil {
		return
	}
	v.active.Store(nil)
	v.c.nc.Close()
	v.c = nil
}

// interrupt cuts off the VU's in-flight request: called by the stopper
// when the grace expires, from another goroutine.
func (v *vu) interrupt() {
	if c := v.active.Load(); c != nil {
		c.raw.SetDeadline(time.Unix(1, 0))
	}
}
