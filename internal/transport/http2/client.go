package http2

import (
	"bufio"
	"fmt"
	"net"
	"time"

	"github.com/replay-dev/replay/internal/transport/http1"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The client's side of an HTTP/2 connection: what its SETTINGS say and
// the connection window it opens (the README's "HTTP/2 and gRPC").
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

// alpnH2 is what a TLS handshake offers when HTTP/2 may be spoken.
var alpnH2 = []string{"h2", "http/1.1"}

// client is one VU's transport.Client. Its connection is its http1
// client's, lent (http1.Client.Connect); everything here is owned by the
// VU's goroutine, except what Interrupt reaches through h1.
type client struct {
	t   *Transport
	now func() int64
	h1  *http1.Client

	// The last request, for Failure and Redirect.
	was2     bool // it went (or was to go) as HTTP/2
	answered bool
	addr     string
	body     []byte
	lastErr  error
	headOut  bool // its header list was written
	wire     []byte

	// wfailed: the last write failed (the SUT closed the connection).
	wfailed bool

	// unprocessed: the SUT declared the last attempt's stream unprocessed
	// (GOAWAY below it, REFUSED_STREAM): it may be sent again, once.
	unprocessed bool

	fl  fieldList
	ans answer
	cs  connState
	st  stream

	cr   countingReader
	br   *bufio.Reader
	out  outBuf // frames to write
	hb   outBuf // the request's header block
	fr   *http2.Framer
	enc  *hpack.Encoder
	dec  *hpack.Decoder
	strs map[string]string // interned header strings for enc
	kept int               // their bytes

	// The header block being decoded: capture says it belongs to the
	// stream; trailers that it follows the final headers; oversize that
	// it passed the --max-header-bytes.
	capture, trailers, oversize bool
	blockBytes                  int
}

var _ transport.Client = (*client)(nil)

func newClient(t *Transport, now func() int64) *client {
	c := &client{t: t, now: now, h1: t.h1.NewHTTP1(now), strs: make(map[string]string)}
	c.br = bufio.NewReaderSize(&c.cr, 32<<10)
	return c
}

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

// Do implements transport.Client: over HTTP/2 when the connection speaks
// it, else through the HTTP/1.1 client. A request the SUT declared
// unprocessed is sent again, once, on a new connection (res.Retried).
func (c *client) Do(req *rrpair.Request, pair *rrpair.Pair, res *result.Result) result.Answer {
	c.was2, c.answered, c.lastErr, c.unprocessed, c.headOut = false, false, nil, false, false
	c.body = req.Body
	if !c.t.offer && !c.t.h2c {
		// Check saw no gRPC call (or refused the file): HTTP/1.1 only.
		return c.h1.Do(req, pair, res)
	}
	grpc := pair.IsGRPC()
	res.BytesOut, res.BytesIn, res.Written = 0, 0, false // the attempts add theirs
	ans := c.try(req, pair, res, grpc)
	if c.unprocessed && !c.h1.Cut() {
		c.h1.Drop(nil)
		again(res)
		c.unprocessed, c.headOut = false, false
		ans = c.try(req, pair, res, grpc)
		res.Retried = true
		c.unprocessed = false
	}
	return ans
}

// again clears what an attempt filled in res, for the retry; the bytes
// and connections of both attempts are kept.
func again(res *result.Result) {
	res.Status, res.Err, res.GRPC, res.GRPCStatus = 0, result.ErrNone, false, 0
	res.ConnectNs, res.TLSNs, res.SendNs, res.WaitNs, res.ReceiveNs = 0, 0, 0, 0, 0
}

// try is one attempt: connect (or keep the connection), and exchange the
// request over the protocol the connection speaks.
func (c *client) try(req *rrpair.Request, pair *rrpair.Pair, res *result.Result, grpc bool) result.Answer {
	var alpn []string
	if c.t.offer || grpc && c.t.mode != Off {
		alpn = alpnH2
	}
	var lent http1.Lent
	for range 2 {
		var kind result.ErrorKind
		lent, kind = c.h1.Connect(req, res, alpn, c.t.h2c)
		c.addr = lent.Addr
		if kind != result.ErrNone {
			res.Err = kind
			res.End = c.now()
			res.Sent = res.End
			return nil
		}
		if lent.Proto == "h2" && lent.NC == c.cs.nc && c.now()-c.cs.last >= int64(idleProbe) {
			c.settle(lent)
		}
		if lent.Proto == "h2" && lent.NC == c.cs.nc && (c.cs.goaway || c.cs.nextID > maxStreamID) {
			c.h1.Drop(nil) // no new stream may open on it: another connection
			continue
		}
		break
	}
	if lent.Proto != "h2" {
		if !grpc {
			return c.h1.Do(req, pair, res)
		}
		// A gRPC call cannot be downgraded.
		c.was2, c.addr = true, lent.Addr
		c.fl.build(req, lent.HTTPS, lent.Host)
		res.Proto, res.Err = result.ProtoHTTP1, result.ErrNoHTTP2
		res.End = c.now()
		res.Sent = res.End
		c.lastErr = fmt.Errorf("the SUT at %s did not take HTTP/2 (ALPN chose %q): a gRPC call cannot go as HTTP/1.1", lent.Addr, lent.Proto)
		return nil
	}
	c.was2 = true
	if lent.NC != c.cs.nc {
		c.open(lent)
	}
	return c.exchange(req, pair, res, lent, grpc)
}

// Redirect implements transport.Client.
func (c *client) Redirect(req *rrpair.Request) bool {
	if !c.was2 {
		return c.h1.Redirect(req)
	}
	if !c.answered {
		return false
	}
	return c.h1.RedirectTo(req, c.ans.status, c.ans.Header("location"))
}

// Failure implements transport.Client: over HTTP/2 the head is the header
// list as AppendWire shows it.
func (c *client) Failure() (addr string, head, body []byte, err error) {
	if !c.was2 {
		return c.h1.Failure()
	}
	if c.headOut {
		c.wire = c.wire[:0]
		for _, f := range c.fl.fields {
			c.wire = append(c.wire, f.name...)
			c.wire = append(c.wire, ": "...)
			c.wire = append(c.wire, f.value...)
			c.wire = append(c.wire, '\n')
		}
		head = c.wire
	}
	return c.addr, head, c.body, c.lastErr
}

// Interrupt implements transport.Client: the connection is the http1
// client's, which cuts it.
func (c *client) Interrupt() { c.h1.Interrupt() }

// Close implements transport.Client.
func (c *client) Close() { c.h1.Close() }
