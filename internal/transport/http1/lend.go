package http1

import (
	"net"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// This file lends a Client's connection to another protocol's framing
// (HTTP/2, in transport/http2): the Client keeps owning the connection
// (dial, TLS and its ALPN, the proxy tunnel, reconnect counting,
// --max-conn-duration, Interrupt and Close), and the other protocol reads
// and writes on it. A VU thus has one connection whatever its protocol,
// and a TLS connection that negotiated HTTP/1.1 goes on with Do.

// Lent is the connection Connect made or kept.
type Lent struct {
	// Raw is the TCP connection (deadlines), NC the connection to read and
	// write: Raw, or TLS over it.
	Raw, NC net.Conn
	// Proto is the protocol the connection speaks: "h2" (negotiated by
	// ALPN, or cleartext by prior knowledge), else HTTP/1.1.
	Proto string
	// New reports a connection made by this call.
	New bool
	// Addr is where it goes (host:port); HTTPS says over TLS; Host is the
	// request's Host header value (":authority" in HTTP/2).
	Addr  string
	HTTPS bool
	Host  []byte
}

// Connect makes sure c holds a connection to where req goes, as Do would,
// and lends it: over TLS the handshake offers alpn (ALPN protocols, such
// as "h2", "http/1.1"); over cleartext, h2c says the connection speaks
// HTTP/2 by prior knowledge. A connection kept from an earlier request is
// reused while it goes to the same place with the same protocol. res gets
// Connected, Reconnect and the connect timings; the returned kind is
// result.ErrNone unless the dial or the handshake failed (the error then
// in Failure).
func (c *Client) Connect(req *rrpair.Request, res *result.Result, alpn []string, h2c bool) (Lent, result.ErrorKind) {
	c.headLen, c.lastErr, c.status, c.body = 0, nil, 0, req.Body
	https, addr, name, host := c.t.destination(req, &c.last)
	c.addr = addr
	want := ""
	if h2c && !https {
		want = "h2"
	}
	if c.c != nil && !https && c.c.proto != want {
		c.closeConn() // cleartext HTTP/2 and HTTP/1.1 do not share a connection
	}
	c.alpn = alpn
	had := c.c
	_, kind := c.connect(addr, name, https, res, nil)
	c.alpn = nil
	if kind != result.ErrNone {
		return Lent{}, kind
	}
	cn := c.c
	if cn != had && !https {
		cn.proto = want
	}
	return Lent{Raw: cn.raw, NC: cn.nc, Proto: cn.proto, New: cn != had, Addr: addr, HTTPS: https, Host: host}, result.ErrNone
}

// Drop closes the connection Connect lent (after a connection error, a
// GOAWAY), so that the next Connect makes a new one; err, when not nil,
// is what Failure reports.
func (c *Client) Drop(err error) {
	if err != nil {
		c.lastErr = err
	}
	c.closeConn()
}

// Idle records that the lent connection finished an answer at end (the
// run's clock), for --max-conn-duration's and the idle probe's clocks.
func (c *Client) Idle(end int64) {
	if c.c != nil {
		c.c.last = end
	}
}

// Cut reports that Interrupt was called: every failure is a cancellation.
func (c *Client) Cut() bool { return c.cut.Load() }

// Arm sets the deadline of the lent connection for a request begun now
// (--timeout), or after Interrupt one long past, which cuts any wait at
// once. Interrupt is checked after the deadline is set, so that one in
// between is never overwritten.
func (c *Client) Arm() {
	cn := c.c
	if cn == nil {
		return
	}
	cn.raw.SetDeadline(time.Now().Add(c.t.o.Timeout))
	if c.cut.Load() {
		cn.raw.SetDeadline(time.Unix(1, 0))
	}
}

// Kind names why err, a read or a write on a lent connection, failed, as
// Do would (a cancellation after Interrupt).
func (c *Client) Kind(err error) result.ErrorKind { return c.classify(err, err) }

// NewHTTP1 makes the concrete client NewClient would, for a transport
// that lends its connections (transport/http2).
func (t *Transport) NewHTTP1(now func() int64) *Client { return newClient(t, now) }

// Destination says where req goes without a client: over TLS or not, the
// dial address and the Host header value (for a dry run).
func (t *Transport) Destination(req *rrpair.Request) (https bool, addr string, host []byte) {
	https, addr, _, host = t.destination(req, &recorded{})
	return https, addr, host
}

// Waiting reports whether the lent connection has something to read (what
// the SUT sent while it sat idle, or its close), by a non-blocking peek
// that consumes nothing; true where the platform cannot tell.
func (c *Client) Waiting() bool {
	cn := c.c
	if cn == nil {
		return false
	}
	if cn.rc == nil {
		return true
	}
	c.peekState = idleUnknown
	if cn.rc.Control(c.peekFn) != nil {
		return true
	}
	return c.peekState != idleAlive
}
