package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/valyala/fasthttp"
)

// A body up to this size is copied behind the head and sent in one write;
// a larger one is written after the head from where it lies (the mapped
// file, usually).
const inlineBody = 16 << 10

// Client is one VU's HTTP/1.1 client on its conn.Line, a
// transport.Client. Everything in it is owned by the VU's goroutine; the
// Line's Interrupt may come from another.
type Client struct {
	line    *conn.Line
	now     func() int64            // the run's clock, Unix ns
	a       transport.AnswerOptions // defaults filled
	noReuse bool                    // --no-connection-reuse: a connection per request
	timings bool
	// upgrading: the request under way is a WebSocket upgrade (Upgrade),
	// sent with "Connection: Upgrade" on a new connection that a 101 keeps
	// for the caller.
	upgrading bool

	// The last request, for Failure and Redirect (the error is the Line's).
	headLen int    // its head is wbuf[:headLen]; 0 if never sent
	exch    bool   // it goes out with its answer's first read (Exchange)
	body    []byte // the body sent
	status  int    // the answer's status; 0 without an answer
	redir   transport.Redirector

	resp fasthttp.Response
	ans  answer // the view of resp lent to the caller

	// The last final head read whole that framed its body by one
	// Content-Length, byte for byte, and its scan (valid when seenOK): an
	// answer that begins with the same bytes has the same head, which
	// c.resp.Header holds parsed already (readSeen). A server's answers to
	// the same request often share their head to the byte (a Date changes
	// once a second); where they do not, remembering costs a copy.
	seen     []byte
	seenHead head
	seenOK   bool

	cn   *conn.Conn    // the connection br reads
	br   *bufio.Reader // reused across connections
	cr   countingReader
	wbuf []byte
	norm []byte // a head given to fasthttp with one Content-Length (head.go)
}

var _ transport.Client = (*Client)(nil)

// NewClient makes a VU's HTTP/1.1 client on l, keeping of each answer
// what a says (its zero limits meaning the defaults). Under
// transport/negotiate, l is shared with the VU's HTTP/2 client: each
// speaks on the connections that negotiated its protocol.
func NewClient(l *conn.Line, a transport.AnswerOptions) *Client {
	o := l.Options()
	c := &Client{line: l, now: l.Clock(), a: a.WithDefaults(), noReuse: o.NoConnectionReuse, timings: o.Timings}
	c.br = bufio.NewReaderSize(&c.cr, c.a.MaxHeaderBytes)
	c.cr.line = l
	if c.timings {
		c.cr.now = c.now
	}
	return c
}

// countingReader counts the bytes read from the socket and keeps the last
// socket error, which fasthttp reports less precisely. A request left to
// it (pending) goes out with its first read, in one conn.Line.Exchange.
type countingReader struct {
	nc  net.Conn
	n   int64
	err error
	// With timings: when the first byte of the answer arrived.
	now   func() int64 // nil without timings
	first int64

	// pending is a request to write before the first read (Exchange);
	// written is how much of it went, wrote when (with timings), werr why
	// the rest did not.
	line    *conn.Line
	pending []byte
	written int
	wrote   int64
	werr    error
}

// reset prepares for the next answer.
func (c *countingReader) reset() { c.n, c.err, c.first = 0, nil, 0 }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.pending != nil {
		return c.exchange(p)
	}
	n, err := c.nc.Read(p)
	return c.count(n, err)
}

// exchange writes the pending request and reads the first bytes of its
// answer into p. A request the socket took only in part is finished with
// a write, and its answer read, the usual way.
func (c *countingReader) exchange(p []byte) (int, error) {
	out := c.pending
	c.pending = nil
	e := c.line.Exchange(out, p)
	c.written, c.wrote = e.Written, e.WroteAt
	switch {
	case e.WriteErr != nil:
		c.werr = e.WriteErr
		return 0, e.WriteErr
	case e.Written < len(out):
		w, err := c.nc.Write(out[e.Written:])
		c.written += w
		if c.now != nil {
			c.wrote = c.now()
		}
		if err != nil {
			c.werr = err
			return 0, err
		}
		return c.Read(p)
	case e.ReadErr != nil:
		return c.count(0, e.ReadErr)
	case e.Read == 0:
		return c.count(0, io.EOF)
	}
	return c.count(e.Read, nil)
}

// count accounts for a read of n bytes that returned err.
func (c *countingReader) count(n int, err error) (int, error) {
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
func (c *Client) Do(req *rrpair.Request, pair *rrpair.Pair, res *result.Result) result.Answer {
	res.Downgraded = pair.IsHTTP2()
	c.headLen, c.status, c.body = 0, 0, req.Body
	dst := c.line.Route(req)
	c.wbuf = appendHead(c.wbuf[:0], req, dst.Host, c.noReuse && !c.upgrading)
	if c.upgrading { // the connection header the recorded one stood for
		c.wbuf = append(c.wbuf[:len(c.wbuf)-2], "Connection: Upgrade\r\n\r\n"...)
	}
	c.headLen = len(c.wbuf)
	body := req.Body
	if len(body) <= inlineBody {
		c.wbuf = append(c.wbuf, body...)
		body = nil
	}
	first := c.wbuf // a new connection may carry a whole request as it opens
	if body != nil {
		first = nil
	}
	cn, early, kind := c.line.Connect(&dst, res, &plain, first)
	if kind != result.ErrNone {
		c.headLen = 0 // nothing was sent
		res.Err = kind
		res.End = c.now()
		res.Sent = res.End
		return nil
	}
	if cn != c.cn { // a new connection: nothing of the last one is left to read
		c.cn, c.cr.nc = cn, cn.NC
		c.br.Reset(&c.cr)
	}
	res.Proto = result.ProtoHTTP1
	if early == 0 && body == nil && c.br.Buffered() == 0 && c.line.CanExchange() {
		// The request goes out with the answer's first read (Exchange):
		// the read buffer is empty (a kept connection has nothing left in
		// it), so the answer is read, and the request written, first.
		c.line.Arm()
		res.Sent = c.now()
		c.cr.pending, c.cr.written, c.cr.werr = c.wbuf, 0, nil
		c.exch = true
	} else if !c.send(res, early, body) {
		return nil
	}
	return c.read(req, res)
}

// plain is what HTTP/1.1 asks of a connection: no ALPN offered, no
// protocol spoken by prior knowledge.
var plain conn.Protocols

// send writes the request on the connection, the first early bytes of it
// gone already, and reports whether all of it went.
func (c *Client) send(res *result.Result, early int, body []byte) bool {
	c.line.Arm()
	if early == 0 {
		res.Sent = c.now()
	}
	n := early
	var err error
	if n < len(c.wbuf) {
		var w int
		w, err = c.cn.NC.Write(c.wbuf[n:])
		n += w
	}
	if err == nil && body != nil {
		var w int
		w, err = c.cn.NC.Write(body)
		n += w
	}
	res.BytesOut, res.Written = int64(n), n > 0
	if c.timings {
		res.SendNs = c.now() - res.Sent
	}
	if err != nil {
		res.Err = c.classify(err, err)
		res.End = c.now()
		c.line.Drop(err)
		return false
	}
	return true
}

// read reads the answer to req and returns its view, or nil: its head is
// scanned first (head.go), then read with fasthttp.
func (c *Client) read(req *rrpair.Request, res *result.Result) result.Answer {
	a := &c.a
	isHead := string(req.Method) == "HEAD"
	c.cr.reset()
	h, err := c.readHead(req)
	if err == nil {
		c.ans.reset(&c.resp, a.MaxBody, a.DiscardBodies)
		if h.seen {
			err = c.readSeen(&h, isHead)
		} else {
			err = c.readNew(&h, isHead)
		}
	}
	if c.exch && !c.exchanged(res) {
		return nil
	}
	res.End = c.now()
	res.BytesIn = c.cr.n
	if first := c.cr.first; first != 0 {
		res.WaitNs = first - (res.Sent + res.SendNs)
		res.ReceiveNs = res.End - first
	}
	if err != nil {
		res.Err = c.classify(c.cr.err, err)
		c.line.Drop(err)
		return nil
	}
	c.status = h.status
	res.Status = uint16(h.status)
	c.keepOrClose(res, &h, isHead)
	return &c.ans
}

// exchanged accounts for the write of a request that went out with its
// answer's first read, as send does, and reports whether all of it went;
// if not, the request failed as a write would have.
func (c *Client) exchanged(res *result.Result) bool {
	c.exch = false
	cr := &c.cr
	cr.pending = nil
	res.BytesOut, res.Written = int64(cr.written), cr.written > 0
	if c.timings && cr.wrote != 0 {
		res.SendNs = cr.wrote - res.Sent
	}
	if cr.werr == nil {
		return true
	}
	res.Err = c.classify(cr.werr, cr.werr)
	res.End = c.now()
	c.line.Drop(cr.werr)
	return false
}

// readNew reads an answer whose head h is not the one remembered: fasthttp
// parses it (readAnswer). A final head that frames its body by one
// Content-Length is remembered then, byte for byte, with its scan.
func (c *Client) readNew(h *head, isHead bool) error {
	c.seenOK = false // c.resp changes
	c.resp.Reset()
	c.resp.SkipBody = isHead || c.a.DiscardBodies
	keep := !h.interim && !h.chunked && !h.sameLengths && h.length >= 0 && h.status != 101
	if keep {
		b, _ := c.br.Peek(h.size)
		c.seen = append(c.seen[:0], b...)
	}
	if err := c.readAnswer(h, isHead); err != nil {
		return err
	}
	if keep {
		c.seenHead, c.seenOK = *h, true
		c.seenHead.seen = true
	}
	return nil
}

// readSeen reads an answer whose head h is the one remembered: its bytes
// are those fasthttp parsed into c.resp.Header last, which holds that
// parse still; only the body is read, as readAnswer would read it (by
// its Content-Length: a remembered head has one).
func (c *Client) readSeen(h *head, isHead bool) error {
	c.br.Discard(h.size)
	bodyless := isHead || noBody(h.status)
	if c.a.DiscardBodies {
		if bodyless {
			return nil
		}
		if _, err := c.br.Discard(int(h.length)); err != nil {
			return unexpectedEOF(err)
		}
		return nil
	}
	c.resp.ResetBody()
	c.resp.SkipBody = isHead
	if bodyless {
		return nil
	}
	return c.resp.ReadBody(c.br, c.a.MaxBody)
}

// readAnswer reads the answer whose head h the read buffer holds:
// fasthttp reads it, or, for a head with one Content-Length given more
// than once (which fasthttp refuses), a copy of it with the length once,
// and the client reads its body.
func (c *Client) readAnswer(h *head, isHead bool) error {
	a := &c.a
	if !h.sameLengths {
		if a.DiscardBodies {
			return c.readDiscarding(isHead)
		}
		return c.resp.ReadLimitBody(c.br, a.MaxBody)
	}
	b, _ := c.br.Peek(h.size)
	c.norm = sameLengthHead(c.norm[:0], b, h.length)
	if err := c.resp.Header.Read(bufio.NewReader(bytes.NewReader(c.norm))); err != nil {
		return err
	}
	c.br.Discard(h.size)
	switch {
	case isHead || noBody(h.status):
		return nil
	case a.DiscardBodies:
		return c.discardBody()
	}
	return c.resp.ReadBody(c.br, a.MaxBody)
}

// keepOrClose keeps the connection after a complete answer, or closes it:
// when asked to (--no-connection-reuse, Connection: close, HTTP/1.0), when
// the answer's body ran to the end of the connection, when its head was
// one the client takes but does not trust the connection after (head.go),
// and when the SUT sent more than the answer (res.Unsolicited: bytes no
// request asked for, which would be read as the next request's answer).
// An answer that has no body by definition (to a HEAD, 204, 304, an
// interim status) needs no Content-Length to keep it; 101 switches
// protocols, so it closes too.
func (c *Client) keepOrClose(res *result.Result, h *head, isHead bool) {
	rh := &c.resp.Header
	status := int(res.Status)
	bodyless := isHead || noBody(status) && status != 101
	switch {
	case status == 101 && c.upgrading: // the caller's now (Upgraded)
	case c.noReuse || h.closes || !rh.IsHTTP11() || status == 101,
		h.length < 0 && !h.chunked && !bodyless: // read to the close
		c.line.Drop(nil)
	case c.br.Buffered() > 0:
		res.Unsolicited = true
		c.line.Drop(errUnsolicited)
	default:
		c.line.Idle(res.End)
	}
}

// Upgrade sends req, a WebSocket upgrade request, on a new connection and
// reads its answer, as Do does, but with "Connection: Upgrade" in the
// place of the recorded connection fields, and a 101 leaves the connection
// open: Upgraded hands it over, and Release closes it when the session
// ends. Any other answer closes it as Do would.
func (c *Client) Upgrade(req *rrpair.Request, pair *rrpair.Pair, res *result.Result) result.Answer {
	c.line.Drop(nil) // a session has a connection of its own
	c.upgrading = true
	defer func() { c.upgrading = false }()
	return c.Do(req, pair, res)
}

// Upgraded is the connection a 101 answered Upgrade on: its socket, and
// the reader that holds what the server sent after the 101's head (its
// first frames, maybe), counted in the connection's bytes (BytesIn).
func (c *Client) Upgraded() (nc net.Conn, r *bufio.Reader) {
	c.cn.Detach() // the session's reader reads it
	return c.cn.NC, c.br
}

// Field is the value of the last answer's field name ("" when absent).
func (c *Client) Field(name string) string { return string(c.resp.Header.Peek(name)) }

// BytesIn is how many bytes the connection has read so far.
func (c *Client) BytesIn() int64 { return c.cr.n }

// Release closes the connection Upgraded handed over.
func (c *Client) Release(err error) { c.line.Drop(err) }

// errUnsolicited says why a connection was closed after an answer: the SUT
// sent bytes no request asked for.
var errUnsolicited = errors.New("unsolicited bytes after a complete answer")

// Redirect implements transport.Client: the redirect rule
// (transport.Redirector) on the last answer's status and Location.
func (c *Client) Redirect(req *rrpair.Request) bool {
	if c.status == 0 { // no answer
		return false
	}
	return c.redir.Follow(req, c.status, c.resp.Header.Peek("Location"))
}

// Failure implements transport.Client.
func (c *Client) Failure() (addr string, head, body []byte, err error) {
	if c.headLen > 0 {
		head = c.wbuf[:c.headLen]
	}
	addr, err = c.line.Failure()
	return addr, head, c.body, err
}

// Interrupt implements transport.Client: the Line's, called from the
// stopper when the grace expires, from another goroutine.
func (c *Client) Interrupt() { c.line.Interrupt() }

// Close implements transport.Client: it closes the Line.
func (c *Client) Close() { c.line.Close() }
