package negotiate

import (
	"fmt"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/http1"
	"github.com/replay-dev/replay/pkg/transport/http2"
	"github.com/replay-dev/replay/pkg/transport/ws"
)

// took says which protocol took a request.
type took uint8

const (
	tookNone   took = iota // none: the connection failed first
	tookHTTP1              // HTTP/1.1
	tookHTTP2              // HTTP/2
	tookNoH2               // none: a gRPC call the connection could not carry
	tookShared             // HTTP/2, on the group's shared connection
)

// client is one VU's transport.Client: its Line, and the HTTP/1.1 and
// HTTP/2 clients that speak on it. Everything here is owned by the VU's
// goroutine, except what Interrupt reaches through the Line.
type client struct {
	t    *Transport
	now  func() int64
	line *conn.Line
	h1   *http1.Client
	h2   *http2.Client // made when a request first may go as HTTP/2
	// member is the VU's place on its group's shared HTTP/2 connection
	// (--streams), nil without.
	member *http2.Member

	// The last request, for Failure and Redirect: which protocol took it,
	// its body, and why a gRPC call was refused.
	took    took
	body    []byte
	refusal error
}

var _ transport.Client = (*client)(nil)

// Do implements transport.Client: over HTTP/2 when the connection speaks
// it, else over HTTP/1.1. A request the SUT declared unprocessed is sent
// again, once, on a new connection (res.Retried).
func (c *client) Do(req *rrpair.Request, pair *rrpair.Pair, res *result.Result) result.Answer {
	if c.member == nil && !c.t.offer && !c.t.h2c {
		// Check saw no gRPC call (or refused the file): HTTP/1.1 only.
		c.took = tookHTTP1
		return c.h1.Do(req, pair, res)
	}
	if c.member == nil && c.h2 == nil {
		c.h2 = http2.NewClient(c.line, c.t.a)
	}
	grpc := pair.IsGRPC()
	res.BytesOut, res.BytesIn, res.Written = 0, 0, false // the attempts add theirs
	ans := c.try(req, pair, res, grpc)
	if c.unprocessed() && !c.line.Cut() {
		c.line.Drop(nil)
		again(res)
		ans = c.try(req, pair, res, grpc)
		res.Retried = true
	}
	return ans
}

// unprocessed reports that the SUT declared the last attempt's stream
// unprocessed: it may go again, once, on a new connection.
func (c *client) unprocessed() bool {
	switch c.took {
	case tookHTTP2:
		return c.h2.Unprocessed()
	case tookShared:
		return c.member.Unprocessed()
	}
	return false
}

// again clears what an attempt filled in res, for the retry; the bytes
// and connections of both attempts are kept.
func again(res *result.Result) {
	res.Status, res.Err, res.GRPC, res.GRPCStatus = 0, result.ErrNone, false, 0
	res.ConnectNs, res.TLSNs, res.SendNs, res.WaitNs, res.ReceiveNs = 0, 0, 0, 0, 0
}

// try is one attempt: on the group's shared connection (--streams), or
// connect (or keep the connection) and exchange the request in the
// protocol the connection speaks.
func (c *client) try(req *rrpair.Request, pair *rrpair.Pair, res *result.Result, grpc bool) result.Answer {
	c.took, c.body = tookNone, req.Body
	dst := c.line.Route(req)
	if c.member != nil { // --streams: the group's connection
		c.took = tookShared
		return c.member.Do(&dst, req, pair, res, grpc)
	}
	p := &c.t.plain
	if c.t.offer || grpc && c.t.mode != Off {
		p = &c.t.offering
	}
	cn, kind := c.h2.Connect(&dst, res, p)
	switch {
	case kind != result.ErrNone:
		res.Err = kind
	case cn.Proto == http2.Proto:
		c.took = tookHTTP2
		return c.h2.Do(cn, dst.Host, req, pair, res, grpc)
	case !grpc:
		c.took = tookHTTP1
		return c.h1.Do(req, pair, res)
	default: // a gRPC call cannot be downgraded
		c.took = tookNoH2
		c.refusal = fmt.Errorf("the SUT at %s did not take HTTP/2 (ALPN chose %q): a gRPC call cannot go as HTTP/1.1", cn.Addr, cn.Proto)
		res.Proto, res.Err = result.ProtoHTTP1, result.ErrNoHTTP2
	}
	res.End = c.now()
	res.Sent = res.End
	return nil
}

// Redirect implements transport.Client.
func (c *client) Redirect(req *rrpair.Request) bool {
	switch c.took {
	case tookHTTP1:
		return c.h1.Redirect(req)
	case tookHTTP2:
		return c.h2.Redirect(req)
	case tookShared:
		return c.member.Redirect(req)
	}
	return false
}

// Failure implements transport.Client: over HTTP/2 the head is the header
// list as AppendWire shows it; a request no protocol took has none.
func (c *client) Failure() (addr string, head, body []byte, err error) {
	switch c.took {
	case tookHTTP1:
		return c.h1.Failure()
	case tookHTTP2:
		return c.h2.Failure()
	case tookShared:
		return c.member.Failure()
	}
	addr, err = c.line.Failure()
	if c.took == tookNoH2 {
		err = c.refusal
	}
	return addr, nil, c.body, err
}

// Interrupt implements transport.Client: the Line's, and with --streams
// the shared connection's: the hard stop reaches every VU of the group.
func (c *client) Interrupt() {
	c.line.Interrupt()
	if c.member != nil {
		c.member.Interrupt()
	}
}

// Close implements transport.Client.
func (c *client) Close() {
	c.line.Close()
	if c.member != nil {
		c.member.Close()
	}
}

var _ transport.Sessions = (*client)(nil)

// Session implements transport.Sessions: the upgrade goes over HTTP/1.1
// on a connection of its own (Client.Upgrade), with a fresh key; a 101
// that answers it hands the connection to the session's player (ws.Play),
// and the connection is closed after.
func (c *client) Session(req *rrpair.Request, pair *rrpair.Pair, s *transport.Session, res, out *result.Result) result.Answer {
	c.took, c.body = tookHTTP1, req.Body
	out.WS = result.WSSession
	key := ws.SetKey(req)
	ans := c.h1.Upgrade(req, pair, res)
	if !ws.Opened(res, c.h1.Field, key, out) {
		if res.Status == 101 {
			c.h1.Release(nil) // a 101 that did not answer the key
		}
		return ans
	}
	out.Status = 101 // opened
	nc, br := c.h1.Upgraded()
	o := c.line.Options()
	ws.Play(&ws.Conn{NC: nc, R: br, Get: c.h1.Field, Now: c.now, Cut: c.line.Cut,
		Timeout: o.Timeout, MaxMessage: int64(c.t.a.MaxBody)}, s, res.End, out)
	res.BytesIn = c.h1.BytesIn()
	c.h1.Release(nil)
	return ans
}
