package http1

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/internal/transport"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/valyala/fasthttp"
)

// A body up to this size is copied behind the head and sent in one write;
// a larger one is written after the head from where it lies (the mapped
// file, usually).
const inlineBody = 16 << 10

// client is one VU's transport.Client. Everything in it is owned by the
// VU's goroutine, except cut, ctx's cancel and active, which Interrupt
// uses from another goroutine.
type client struct {
	t   *Transport
	now func() int64 // the run's clock, Unix ns

	// cut is set by Interrupt: every later request is cancelled. ctx is
	// cancelled with it, to cut a resolution or a TLS handshake off; it
	// lives as long as the client, not one call.
	cut    atomic.Bool
	ctx    context.Context
	cancel context.CancelFunc

	// The last request, for Failure and Redirect.
	headLen int    // its head is wbuf[:headLen]; 0 if never sent
	body    []byte // the body sent
	lastErr error
	addr    string
	status  int    // the answer's status; 0 without an answer
	loc     []byte // the Location being followed

	resp fasthttp.Response
	ans  answer // the view of resp lent to the caller

	c       *conn                // current connection, nil when none
	active  atomic.Pointer[conn] // c, published for Interrupt
	hadConn bool                 // a connection was opened before
	br      *bufio.Reader        // reused across connections
	cr      countingReader
	wbuf    []byte
	dialer  *tcpDialer
	last    recorded
}

var _ transport.Client = (*client)(nil)

func newClient(t *Transport, now func() int64) *client {
	c := &client{t: t, now: now}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.br = bufio.NewReaderSize(&c.cr, t.o.MaxHeaderBytes)
	if t.o.Timings {
		c.cr.now = now
	}
	c.dialer = newTCPDialer(&c.cut, now)
	return c
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

// Do implements transport.Client.
func (c *client) Do(req *rrpair.Request, pair *rrpair.Pair, res *result.Result) result.Answer {
	o := &c.t.o
	res.Downgraded = pair.IsHTTP2()
	c.headLen, c.lastErr, c.status, c.body = 0, nil, 0, req.Body
	https, addr, name, host := c.t.destination(req, &c.last)
	c.addr = addr
	c.wbuf = appendHead(c.wbuf[:0], req, host, o.NoConnectionReuse)
	c.headLen = len(c.wbuf)
	body := req.Body
	if len(body) <= inlineBody {
		c.wbuf = append(c.wbuf, body...)
		body = nil
	}
	early, kind := c.connect(addr, name, https, res, c.wbuf)
	if kind != result.ErrNone {
		c.headLen = 0 // nothing was sent
		res.Err = kind
		res.End = c.now()
		res.Sent = res.End
		return nil
	}
	if !c.send(res, early, body) {
		return nil
	}
	return c.read(req, res)
}

// send writes the request on the connection, the first early bytes of it
// gone already, and reports whether all of it went.
func (c *client) send(res *result.Result, early int, body []byte) bool {
	cn := c.c
	cn.raw.SetDeadline(time.Now().Add(c.t.o.Timeout))
	if c.cut.Load() {
		cn.raw.SetDeadline(time.Unix(1, 0))
	}
	if early == 0 {
		res.Sent = c.now()
	}
	n := early
	var err error
	if n < len(c.wbuf) {
		var w int
		w, err = cn.nc.Write(c.wbuf[n:])
		n += w
	}
	if err == nil && body != nil {
		var w int
		w, err = cn.nc.Write(body)
		n += w
	}
	res.BytesOut, res.Written = int64(n), n > 0
	if c.t.o.Timings {
		res.SendNs = c.now() - res.Sent
	}
	if err != nil {
		res.Err = c.classify(err, err)
		res.End = c.now()
		c.lastErr = err
		c.closeConn()
		return false
	}
	return true
}

// read reads the answer to req and returns its view, or nil.
func (c *client) read(req *rrpair.Request, res *result.Result) result.Answer {
	o := &c.t.o
	c.resp.Reset()
	c.ans.reset(&c.resp, o.MaxBody, o.DiscardBodies)
	head := string(req.Method) == "HEAD"
	c.resp.SkipBody = head || o.DiscardBodies
	c.cr.n, c.cr.err, c.cr.first = 0, nil, 0
	var err error
	if o.DiscardBodies {
		err = c.readDiscarding(head)
	} else {
		err = c.resp.ReadLimitBody(c.br, o.MaxBody)
	}
	res.End = c.now()
	res.BytesIn = c.cr.n
	if first := c.cr.first; first != 0 {
		res.WaitNs = first - (res.Sent + res.SendNs)
		res.ReceiveNs = res.End - first
	}
	if err != nil {
		res.Err = c.classify(c.cr.err, err)
		c.lastErr = err
		c.closeConn()
		return nil
	}
	c.status = c.resp.StatusCode()
	res.Status = uint16(c.status)
	h := &c.resp.Header
	if o.NoConnectionReuse || h.ConnectionClose() || !h.IsHTTP11() || h.ContentLength() == -2 {
		c.closeConn()
	}
	return &c.ans
}

// Failure implements transport.Client.
func (c *client) Failure() (addr string, head, body []byte, err error) {
	if c.headLen > 0 {
		head = c.wbuf[:c.headLen]
	}
	return c.addr, head, c.body, c.lastErr
}

// Interrupt implements transport.Client: called from the stopper when the
// grace expires, from another goroutine.
func (c *client) Interrupt() {
	c.cut.Store(true)
	c.cancel()
	c.dialer.interrupt()
	if cn := c.active.Load(); cn != nil {
		cn.raw.SetDeadline(time.Unix(1, 0))
	}
}

// Close implements transport.Client.
func (c *client) Close() {
	c.closeConn()
	c.cancel()
}
