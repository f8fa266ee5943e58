package mock

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/replay-dev/replay/pkg/reach"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/valyala/fasthttp"
)

// handleH1 answers an HTTP/1.x request (fasthttp's handler): a CONNECT
// becomes a tunnel; anything else is matched and answered.
func (s *Server) handleH1(ctx *fasthttp.RequestCtx) {
	sconn, ok := ctx.Conn().(*servedConn)
	if !ok {
		ctx.SetStatusCode(500)
		return
	}
	cs := sconn.cs
	if ctx.IsConnect() {
		target := string(ctx.Request.Header.RequestURI())
		if _, _, err := net.SplitHostPort(target); err != nil {
			ctx.SetStatusCode(400)
			ctx.SetBodyString("replay mock: CONNECT wants host:port, got " + target)
			return
		}
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(func(hijacked net.Conn) {
			// fasthttp takes the connection back when this returns; the
			// HTTP/2 server may still be writing its GOAWAY then.
			c := holdConn(hijacked)
			defer c.release()
			if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
				return
			}
			s.st.tunnels.Add(1)
			s.tunnel(c, target, cs)
		})
		return
	}
	sc := s.getScratch()
	defer s.putScratch(sc)
	l := live{cs: cs, scheme: cs.scheme, version: "1.1"}
	uri := ctx.Request.Header.RequestURI()
	if scheme, authority, origin, ok := reach.AbsoluteForm(string(uri)); ok {
		l.scheme, l.authority, uri = scheme, []byte(authority), []byte(origin)
	} else if cs.host != nil {
		l.authority = cs.host
	} else {
		l.authority = ctx.Request.Header.Host()
	}
	sc.host = normHost(sc.host, l.authority)
	l.v = view{method: ctx.Method(), host: s.ix.hostOf(sc.host), uri: uri}
	sc.headers = sc.headers[:0]
	if s.needHeaders() || len(ctx.Request.Header.ContentType()) >= len("application/grpc") {
		for k, v := range ctx.Request.Header.AllInOrder() {
			sc.headers = append(sc.headers, rrpair.Header{Name: k, Value: v})
		}
	}
	l.v.headers = sc.headers
	l.grpc = isGRPC(sc.headers)
	var o *outcome
	limit := s.bodyLimit(&l.v, sc)
	body, err := s.readH1Body(ctx, limit, sc)
	switch {
	case errors.Is(err, errBodyOverLimit):
		ctx.SetConnectionClose() // the rest of the body is not read
		sconn.linger.Store(true)
		o = s.overLimit(&l, sc, limit)
	case err != nil:
		ctx.SetConnectionClose()
		return
	default:
		l.v.body = body
		o = s.answer(&l, sc)
	}
	if o.reset {
		reset(cs.raw)
		return
	}
	s.wait(o.wait)
	if o.ws {
		s.upgrade(ctx, sc, cs)
		return
	}
	sconn.heads.queue(o.status, o.headers, o.body, ctx.IsHead()) // sent as recorded in the place of fasthttp's head (rawhead.go)
	ctx.Response.SetStatusCode(o.status)
	ctx.Response.SkipBody = true
}

// readH1Body reads the body of ctx's request (streamed: fasthttp has
// read at most its first 8 KiB) up to limit, into sc's buffer; the body
// gets --idle-timeout to arrive, the head's deadline lifted.
func (s *Server) readH1Body(ctx *fasthttp.RequestCtx, limit int, sc *scratch) ([]byte, error) {
	n := int64(ctx.Request.Header.ContentLength()) // -1 chunked, -2 none
	if n == -2 {
		n = 0
	}
	if n != 0 && n <= int64(limit) {
		ctx.Conn().SetReadDeadline(time.Now().Add(s.o.IdleTimeout))
	}
	var err error
	sc.body, err = readBody(ctx.RequestBodyStream(), n, limit, sc.body)
	return sc.body, err
}

// needHeaders reports whether matching, answering or passing on a request
// reads its headers (otherwise they are not gathered).
func (s *Server) needHeaders() bool {
	return len(s.ix.match) > 0 || s.chain != nil || s.pool != nil || s.order.kind != ""
}

// wait sleeps d, the recorded duration and any delay injected, or
// until Close's grace is over.
func (s *Server) wait(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.cut:
	}
}

// reset cuts c with a TCP RST (a fault injected on purpose).
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
