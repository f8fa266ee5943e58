package http1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/valyala/fasthttp"
)

// A body up to this size is copied behind the head and sent in one write;
// a larger one is written after the head from where it lies (the mapped
// file, usually).
const inlineBody = 16 << 10

// Client is one VU's transport.Client. Everything in it is owned by the
// VU's goroutine, except cut, ctx's cancel and active, which Interrupt
// uses from another goroutine.
type Client struct {
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
	// alpn is what the next TLS handshake offers (Connect's); nil offers
	// nothing, as Do does.
	alpn []string

	// The idle probe (probeIdle): its callback, bound once, and what it saw.
	peekFn    func(fd uintptr)
	peekState idleState
	peekBuf   [1]byte
}

var _ transport.Client = (*Client)(nil)

func newClient(t *Transport, now func() int64) *Client {
	c := &Client{t: t, now: now}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.br = bufio.NewReaderSize(&c.cr, t.o.MaxHeaderBytes)
	if t.o.Timings {
		c.cr.now = now
	}
	c.dialer = newTCPDialer(&c.cut, now)
	c.peekFn = c.peek
	return c
}

// countingReader counts the bytes read from the socket and keeps the last
// socket error, which fasthttp reports less precisely. It also watches the
// head of each answer (reset by read): nothing is left buffered from an
// earlier answer (keepOrClose), so an answer begins a read.
type countingReader struct {
	nc  net.Conn
	n   int64
	err error
	// With timings: when the first byte of the answer arrived.
	now   func() int64 // nil without timings
	first int64
	// The first bytes of the answer, for the status code fasthttp hides
	// (it reads "000" as 200).
	head  [16]byte
	headN int
	// headDone: the blank line ending the head has been seen; tail holds
	// the last bytes before, for one split between two reads.
	headDone bool
	tail     [3]byte
	tailN    int
	// keepHead has the whole head kept in kept (answers to HEAD, whose
	// Connection header keepOrClose reads again).
	keepHead bool
	kept     []byte
}

// errBareLF fails an answer whose head ends in a bare LF blank line, which
// fasthttp would wait for forever (it looks for CRLF CRLF).
var errBareLF = errors.New("answer head with bare LF line ends")

// reset prepares for the next answer.
func (c *countingReader) reset(keepHead bool) {
	c.n, c.err, c.first, c.headN = 0, nil, 0, 0
	c.headDone, c.tailN, c.keepHead, c.kept = false, 0, keepHead, c.kept[:0]
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.nc.Read(p)
	c.n += int64(n)
	if err != nil {
		c.err = err
	}
	if n > 0 {
		if c.first == 0 && c.now != nil {
			c.first = c.now()
		}
		if c.headN < len(c.head) {
			c.headN += copy(c.head[c.headN:], p[:n])
		}
		if !c.headDone {
			if c.keepHead {
				c.kept = append(c.kept, p[:n]...)
			}
			if c.scanHead(p[:n]) {
				c.err = errBareLF
				return n, errBareLF
			}
		}
	}
	return n, err
}

var (
	crlfcrlf = []byte("\r\n\r\n")
	lflf     = []byte("\n\n")
)

// scanHead looks in p, the bytes just read of an answer's head, for its
// end, and reports a bare LF blank line before it.
func (c *countingReader) scanHead(p []byte) (bareLF bool) {
	if c.tailN > 0 { // the end split between two reads
		var w [6]byte
		k := copy(w[:], c.tail[:c.tailN])
		k += copy(w[k:], p[:min(3, len(p))])
		if i := bytes.Index(w[:k], crlfcrlf); i >= 0 {
			c.headDone = true
			return bytes.Contains(w[:i], lflf)
		}
		if bytes.Contains(w[:k], lflf) {
			return true
		}
	}
	if i := bytes.Index(p, crlfcrlf); i >= 0 {
		c.headDone = true
		return bytes.Contains(p[:i], lflf)
	}
	if bytes.Contains(p, lflf) {
		return true
	}
	if len(p) >= 3 {
		c.tailN = copy(c.tail[:], p[len(p)-3:])
	} else { // keep the last three bytes of tail and p
		var w [6]byte
		k := copy(w[:], c.tail[:c.tailN])
		k += copy(w[k:], p)
		c.tailN = copy(c.tail[:], w[max(0, k-3):k])
	}
	return false
}

// Do implements transport.Client.
func (c *Client) Do(req *rrpair.Request, pair *rrpair.Pair, res *result.Result) result.Answer {
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
	res.Proto = result.ProtoHTTP1
	if !c.send(res, early, body) {
		return nil
	}
	return c.read(req, res)
}

// send writes the request on the connection, the first early bytes of it
// gone already, and reports whether all of it went.
func (c *Client) send(res *result.Result, early int, body []byte) bool {
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
func (c *Client) read(req *rrpair.Request, res *result.Result) result.Answer {
	o := &c.t.o
	c.resp.Reset()
	c.ans.reset(&c.resp, o.MaxBody, o.DiscardBodies)
	head := string(req.Method) == "HEAD"
	c.resp.SkipBody = head || o.DiscardBodies
	c.cr.reset(head)
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
	status := c.resp.StatusCode()
	if status < 100 || status > 599 || c.cr.zeroStatus() {
		res.Err = result.ErrOther
		c.lastErr = errStatus
		c.closeConn()
		return nil
	}
	c.status = status
	res.Status = uint16(status)
	c.keepOrClose(res, head)
	return &c.ans
}

// errStatus is the failure of an answer whose status line is outside
// 100–599: its framing cannot be trusted, so its connection is closed.
var errStatus = errors.New("status code outside 100-599")

// zeroStatus reports an answer whose status line says "000", which
// fasthttp reads as 200.
func (c *countingReader) zeroStatus() bool {
	b := c.head[:c.headN]
	i := bytes.IndexByte(b, ' ')
	if i < 0 {
		return false
	}
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return bytes.HasPrefix(b[i:], []byte("000"))
}

// keepOrClose keeps the connection after a complete answer, or closes it:
// when asked to (--no-connection-reuse, Connection: close, HTTP/1.0), when
// the answer's body ran to the end of the connection, and when the SUT
// sent more than the answer (res.Unsolicited: bytes no request asked for,
// which would be read as the next request's answer). An answer that has no
// body by definition (to a HEAD, 204, 304, an interim status) needs no
// Content-Length to keep it; 101 switches protocols, so it closes too.
func (c *Client) keepOrClose(res *result.Result, head bool) {
	h := &c.resp.Header
	status := int(res.Status)
	bodyless := head || noBody(status) && status != 101
	closing := h.ConnectionClose()
	if closing && head && h.ContentLength() == -2 {
		// fasthttp closes after any answer without a length, not knowing
		// it answers a HEAD: was it asked to?
		closing = saysClose(c.cr.kept)
	}
	switch {
	case c.t.o.NoConnectionReuse || closing || !h.IsHTTP11() || status == 101,
		h.ContentLength() == -2 && !bodyless:
		c.closeConn()
	case c.br.Buffered() > 0:
		res.Unsolicited = true
		c.lastErr = errUnsolicited
		c.closeConn()
	default:
		c.c.last = res.End
	}
}

// saysClose reports a "Connection: close" in the answer head at the start
// of b.
func saysClose(b []byte) bool {
	for {
		i := bytes.IndexByte(b, '\n')
		if i <= 1 { // the blank line, or no more
			return false
		}
		name, value, ok := bytes.Cut(bytes.TrimRight(b[:i], "\r"), []byte(":"))
		b = b[i+1:]
		if !ok || !rrpair.EqualFold(bytes.TrimSpace(name), "connection") {
			continue
		}
		for tok := range bytes.SplitSeq(value, []byte(",")) {
			if rrpair.EqualFold(bytes.TrimSpace(tok), "close") {
				return true
			}
		}
	}
}

// errUnsolicited says why a connection was closed after an answer: the SUT
// sent bytes no request asked for.
var errUnsolicited = errors.New("unsolicited bytes after a complete answer")

// Failure implements transport.Client.
func (c *Client) Failure() (addr string, head, body []byte, err error) {
	if c.headLen > 0 {
		head = c.wbuf[:c.headLen]
	}
	return c.addr, head, c.body, c.lastErr
}

// Interrupt implements transport.Client: called from the stopper when the
// grace expires, from another goroutine.
func (c *Client) Interrupt() {
	c.cut.Store(true)
	c.cancel()
	c.dialer.interrupt()
	if cn := c.active.Load(); cn != nil {
		cn.raw.SetDeadline(time.Unix(1, 0))
	}
}

// Close implements transport.Client.
func (c *Client) Close() {
	c.closeConn()
	c.cancel()
}
