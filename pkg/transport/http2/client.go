package http2

import (
	"bufio"
	"net"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The client's side of an HTTP/2 connection: what its SETTINGS say and
// the connection window it opens (docs/http2-grpc.md).
const (
	// ourStreamWindow is SETTINGS_INITIAL_WINDOW_SIZE: how much of an
	// answer's body the SUT may send before a WINDOW_UPDATE.
	ourStreamWindow = 4 << 20
	// ourConnWindow is the connection's receive window, raised from
	// 65535 by a WINDOW_UPDATE right after the preface.
	ourConnWindow = 16 << 20
	// ourTableSize is the HPACK table for the answers' headers (the
	// protocol's default, not sent).
	ourTableSize = 4096
	// ourMaxFrame is SETTINGS_MAX_FRAME_SIZE, the protocol's default, not
	// sent: the largest frame the SUT may send.
	ourMaxFrame = 16384
	// maxStreamID is the last stream a connection can open.
	maxStreamID = 1<<31 - 1
	// flushAt bounds what is buffered before a write, for large bodies.
	flushAt = 64 << 10
	// internBudget bounds the bytes of the header strings a client keeps
	// for its HPACK encoder's table, internMax each one.
	internBudget = 256 << 10
	internMax    = 1024
	// idleProbe: a connection that sat this long since its last answer
	// is settled (settle) before a stream opens on it, as HTTP/1.1 does.
	idleProbe = time.Millisecond
)

// Client is one VU's HTTP/2 client on its conn.Line: the Line owns the
// connection (dial, TLS and its ALPN, the proxy tunnel, reconnect
// counting, --max-conn-duration, Interrupt and Close), the client speaks
// HTTP/2 on it. Everything here is owned by the VU's goroutine.
type Client struct {
	line    *conn.Line
	now     func() int64
	a       transport.AnswerOptions // defaults filled
	noReuse bool                    // --no-connection-reuse: a connection per request
	timings bool

	last last // the last request, for Failure and Redirect

	// wfailed: the last write failed (the SUT closed the connection).
	wfailed bool

	// unprocessed: the SUT declared the last stream unprocessed (GOAWAY
	// below it, REFUSED_STREAM): it may be sent again, once.
	unprocessed bool

	fl fieldList
	cs connState
	// st and ans are the stream the connection is acting on and its
	// answer: own's, the one stream open, unless the connection is
	// shared (shared.go), where they are the stream of the frame read.
	st  *stream
	ans *answer
	own slot
	// mux is the shared connection's state, nil on a VU's own.
	mux *mux

	cr   countingReader
	br   *bufio.Reader
	out  outBuf // frames to write
	hb   outBuf // the request's header block
	fr   *http2.Framer
	enc  *hpack.Encoder
	dec  *hpack.Decoder
	strs map[string]string // interned header strings for enc
	kept int               // their bytes
	// blocks are the header blocks enc wrote that may go again as they
	// are (blocks.go).
	blocks blockCache
	// heads is the last answer's head as dec decoded it, for an answer
	// that brings the same block (heads.go).
	heads headCache

	// The header block being decoded: capture says it belongs to the
	// stream; trailers that it follows the final headers; oversize that
	// it passed the --max-header-bytes; bad is the first thing wrong with
	// it (malformed.go); regular and statusSeen that a regular field and
	// :status came; conts counts its CONTINUATION frames, and blk holds
	// it whole when it came in more than one frame.
	capture, trailers, oversize bool
	// blockOpen: the framer read a header block's first frames, not its
	// last (the next must be its CONTINUATION).
	blockOpen           bool
	regular, statusSeen bool
	bad                 *protoError
	blockBytes, conts   int
	blk                 []byte
}

// NewClient makes a VU's HTTP/2 client on l, keeping of each answer what
// a says (its zero limits meaning the defaults). Under
// transport/negotiate, l is shared with the VU's HTTP/1.1 client.
func NewClient(l *conn.Line, a transport.AnswerOptions) *Client {
	o := l.Options()
	c := &Client{line: l, now: l.Clock(), a: a.WithDefaults(), noReuse: o.NoConnectionReuse, timings: o.Timings, strs: make(map[string]string)}
	c.br = bufio.NewReaderSize(&c.cr, 32<<10)
	c.useOwn()
	return c
}

// useOwn makes the client act on its own stream.
func (c *Client) useOwn() { c.st, c.ans = &c.own.st, &c.own.ans }

// outBuf is an io.Writer that appends: the framer and the HPACK encoder
// write into it, and it goes out in one write.
type outBuf struct{ b []byte }

func (o *outBuf) Write(p []byte) (int, error) {
	o.b = append(o.b, p...)
	return len(p), nil
}

// countingReader counts the bytes read from the connection.
type countingReader struct {
	nc  net.Conn
	n   int64
	now func() int64
	at  int64 // when the last read returned bytes (with timings)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.nc.Read(p)
	c.n += int64(n)
	if n > 0 && c.now != nil {
		c.at = c.now()
	}
	return n, err
}

// Connect makes sure the Line holds a connection to dst that speaks one
// of p (conn.Line.Connect), and, when it speaks HTTP/2, one on which a new
// stream may open: a connection the client speaks on that sat idle is
// settled first (settle), and one the SUT said GOAWAY on, or out of
// stream IDs, is dropped for a new one. The kind is result.ErrNone unless
// the dial or the handshake failed.
func (c *Client) Connect(dst *conn.Route, res *result.Result, p *conn.Protocols) (*conn.Conn, result.ErrorKind) {
	var cn *conn.Conn
	for range 2 {
		var kind result.ErrorKind
		cn, _, kind = c.line.Connect(dst, res, p, nil)
		if kind != result.ErrNone {
			return nil, kind
		}
		if cn.Proto != Proto || cn != c.cs.cn {
			break
		}
		if c.now()-c.cs.last >= int64(idleProbe) {
			c.settle(cn)
		}
		if !c.cs.goaway && c.cs.nextID <= maxStreamID {
			break
		}
		c.line.Drop(nil) // no new stream may open on it: another connection
	}
	return cn, result.ErrNone
}

// Do sends req (the request of pair, rewritten; grpc says it is a gRPC
// call) on a new stream of cn, a connection Connect returned that speaks
// HTTP/2, with host as its :authority, and reads its answer, filling res
// as transport.Client's Do says. A stream the SUT declared unprocessed
// fails as result.ErrGoAway or result.ErrStreamReset, and Unprocessed
// then says so.
func (c *Client) Do(cn *conn.Conn, host []byte, req *rrpair.Request, pair *rrpair.Pair, res *result.Result, grpc bool) result.Answer {
	c.last.begin(req.Body)
	c.last.addr, c.unprocessed = cn.Addr, false
	if cn != c.cs.cn {
		c.open(cn)
	}
	return c.exchange(cn, host, req, pair, res, grpc)
}

// Unprocessed reports that the SUT declared the stream of the last Do
// unprocessed (GOAWAY below it, REFUSED_STREAM): the request may be sent
// again, once, on a new connection.
func (c *Client) Unprocessed() bool { return c.unprocessed }

// Redirect is transport.Client's, for a request the last Do sent: the
// redirect rule (transport.Redirector) on its answer.
func (c *Client) Redirect(req *rrpair.Request) bool { return c.last.redirect(req, c.ans) }

// Failure is transport.Client's, for a request the last Do sent: the head
// is the header list as AppendRequest shows it.
func (c *Client) Failure() (addr string, head, body []byte, err error) {
	return c.last.failure(&c.fl)
}

// last is what Redirect and Failure need of a client's last request, on
// a VU's own connection (Client) or a shared one (Member).
type last struct {
	answered bool
	addr     string
	body     []byte
	err      error
	headOut  bool // its header list (fl) was written
	wire     []byte
	redir    transport.Redirector
}

// begin readies l for a request whose body is body.
func (l *last) begin(body []byte) {
	l.answered, l.err, l.headOut, l.body = false, nil, false, body
}

// redirect is Redirect on a, the answer of the last request.
func (l *last) redirect(req *rrpair.Request, a *answer) bool {
	return l.answered && l.redir.Follow(req, a.status, a.Header("location"))
}

// failure is Failure, fl being the last request's header list.
func (l *last) failure(fl *fieldList) (addr string, head, body []byte, err error) {
	if l.headOut {
		l.wire = fl.appendTo(l.wire[:0])
		head = l.wire
	}
	return l.addr, head, l.body, l.err
}
