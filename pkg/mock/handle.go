package mock

import (
	"io"
	"net"
	"net/http"
	"time"

	"github.com/replay-dev/replay/internal/h2serve"
	"github.com/replay-dev/replay/pkg/capture"
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
	if scheme, authority, origin, ok := capture.AbsoluteForm(string(uri)); ok {
		l.scheme, l.authority, uri = scheme, []byte(authority), []byte(origin)
	} else if cs.host != nil {
		l.authority = cs.host
	} else {
		l.authority = ctx.Request.Header.Host()
	}
	sc.host = normHost(sc.host, l.authority)
	l.v = view{method: ctx.Method(), host: s.ix.hostOf(sc.host), uri: uri, body: ctx.PostBody()}
	sc.headers = sc.headers[:0]
	if s.needHeaders() || len(ctx.Request.Header.ContentType()) >= len("application/grpc") {
		for k, v := range ctx.Request.Header.AllInOrder() {
			sc.headers = append(sc.headers, rrpair.Header{Name: k, Value: v})
		}
	}
	l.v.headers = sc.headers
	l.grpc = isGRPC(sc.headers)
	o := s.answer(&l, sc)
	if o.reset {
		reset(cs.raw)
		return
	}
	wait(o.wait)
	ctx.Response.SetStatusCode(o.status)
	for _, h := range o.headers {
		ctx.Response.Header.AddBytesKV(h.Name, h.Value)
	}
	ctx.Response.SetBody(o.body)
}

// needHeaders reports whether matching, answering or passing on a request
// reads its headers (otherwise they are not gathered).
func (s *Server) needHeaders() bool {
	return len(s.ix.match) > 0 || s.chain != nil || s.pool != nil || s.order.kind != ""
}

// handleH2 answers an HTTP/2 stream.
func (s *Server) handleH2(w http.ResponseWriter, r *http.Request) {
	cs, _ := h2serve.Value(r).(*connState)
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	sc := s.getScratch()
	defer s.putScratch(sc)
	l := live{cs: cs, scheme: cs.scheme, version: "2", authority: []byte(r.Host)}
	if cs.host != nil {
		l.authority = cs.host
	}
	sc.host = normHost(sc.host, l.authority)
	sc.headers = sc.headers[:0]
	for name, vs := range r.Header {
		for _, v := range vs {
			sc.headers = append(sc.headers, rrpair.Header{Name: []byte(name), Value: []byte(v)})
		}
	}
	l.v = view{method: []byte(r.Method), host: s.ix.hostOf(sc.host), uri: []byte(r.RequestURI), headers: sc.headers, body: body}
	l.grpc = isGRPC(sc.headers)
	o := s.answer(&l, sc)
	if o.reset {
		panic(http.ErrAbortHandler) // RST_STREAM
	}
	wait(o.wait)
	wh := w.Header()
	for _, h := range o.headers {
		wh.Add(string(h.Name), string(h.Value))
	}
	for _, name := range []string{"Content-Type", "Date"} {
		if _, ok := wh[name]; !ok {
			wh[name] = nil // sniffed or added by nobody: the answer is as recorded
		}
	}
	w.WriteHeader(o.status)
	if r.Method != http.MethodHead {
		w.Write(o.body)
	}
	for _, t := range o.trailers {
		wh.Add(http.TrailerPrefix+string(t.Name), string(t.Value))
	}
}

// wait sleeps d, the recorded duration and any delay injected.
func wait(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// reset cuts c with a TCP RST (a fault injected on purpose).
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
