package mock

import (
	"github.com/replay-dev/replay/internal/h2answer"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// h2Handler answers the HTTP/2 streams (internal/h2answer's handler): on
// the connection's reading goroutine when the answer is ready at once,
// from a goroutine of its own when it waits (a recorded latency, an
// injected delay) or reaches a real host (--passthrough).
type h2Handler struct{ s *Server }

// Limit is how much of st's body is read (bodyLimit).
func (h h2Handler) Limit(st *h2answer.Stream) int {
	s := h.s
	sc := s.getScratch()
	defer s.putScratch(sc)
	l := s.h2Route(st, sc)
	return s.bodyLimit(&l.v, sc)
}

// Serve answers st.
func (h h2Handler) Serve(st *h2answer.Stream) {
	if h.s.pool != nil { // a miss goes on to the real host: not on the reading goroutine
		h.s.h2late.Add(1)
		go func() {
			defer h.s.h2late.Done()
			h.s.answerH2(st)
		}()
		return
	}
	h.s.answerH2(st)
}

// h2Live is st as a live request, its headers gathered into sc when
// matching, answering or a gRPC call reads them (as HTTP/1.1 gathers
// them).
func (s *Server) h2Live(st *h2answer.Stream, sc *scratch) live {
	l := s.h2Route(st, sc)
	sc.headers = sc.headers[:0]
	grpcType := false
	for _, f := range st.Fields {
		if string(f.Name) == "content-type" && len(f.Value) >= len("application/grpc") {
			grpcType = true
		}
	}
	if s.needHeaders() || grpcType {
		sc.headers, sc.cookie = h2Headers(sc.headers, sc.cookie[:0], st.Fields)
	}
	l.v.headers = sc.headers
	l.grpc = isGRPC(sc.headers)
	return l
}

// h2Route is st as a live request with only its method, host and URI in
// its view: what its body's limit needs (Limit), and where h2Live
// begins.
func (s *Server) h2Route(st *h2answer.Stream, sc *scratch) live {
	cs := st.Value().(*connState)
	l := live{cs: cs, scheme: cs.scheme, version: "2", authority: st.Authority, gone: st}
	if cs.host != nil {
		l.authority = cs.host
	}
	sc.host = normHost(sc.host, l.authority)
	uri := st.Path
	if uri == nil { // CONNECT
		uri = st.Authority
	}
	l.v = view{method: st.Method, host: s.ix.hostOf(sc.host), uri: uri}
	return l
}

// h2Headers appends fields to dst as a request's headers: Host left out
// (the authority is the request's), the cookie fields one Cookie joined
// by "; " in cookie (RFC 9113 8.2.3), as net/http's server gathered them.
func h2Headers(dst []rrpair.Header, cookie []byte, fields []h2answer.Field) ([]rrpair.Header, []byte) {
	cookies := 0
	for _, f := range fields {
		switch string(f.Name) {
		case "host":
			continue
		case "cookie":
			if cookies++; cookies > 1 {
				continue
			}
		}
		dst = append(dst, rrpair.Header{Name: f.Name, Value: f.Value})
	}
	if cookies < 2 {
		return dst, cookie
	}
	at := -1
	for i, f := range fields {
		if string(f.Name) != "cookie" {
			continue
		}
		if at < 0 {
			at = i
		} else {
			cookie = append(cookie, "; "...)
		}
		cookie = append(cookie, f.Value...)
	}
	for i := range dst {
		if string(dst[i].Name) == "cookie" {
			dst[i].Value = cookie
		}
	}
	return dst, cookie
}

// answerH2 matches st and answers it.
func (s *Server) answerH2(st *h2answer.Stream) {
	sc := s.getScratch()
	l := s.h2Live(st, sc)
	var o *outcome
	if st.Over {
		o = s.overLimit(&l, sc, st.Limit) // the stream is reset after the answer, its body unread
	} else {
		l.v.body = st.Body
		o = s.answer(&l, sc)
	}
	if o.reset {
		st.Reset()
		s.putScratch(sc)
		return
	}
	if o.wait > 0 {
		s.h2late.Add(1)
		go func() {
			defer s.h2late.Done()
			s.wait(o.wait)
			s.sendH2(st, o, sc)
			s.putScratch(sc)
		}()
		return
	}
	s.sendH2(st, o, sc)
	s.putScratch(sc)
}

// wsRefusedH2 is the answer to a recorded WebSocket upgrade asked over
// HTTP/2 (RFC 8441's extended CONNECT is not served).
var wsRefusedH2 = []byte("replay mock: a WebSocket session is played over HTTP/1.1 only")

// sendH2 sends the answer o on st: its fields but Content-Length (the
// server frames what it sends), no field added, its body, its trailers.
func (s *Server) sendH2(st *h2answer.Stream, o *outcome, sc *scratch) {
	if o.ws {
		s.ws.refused.Add(1)
		st.Answer(501, nil, wsRefusedH2, nil)
		return
	}
	sc.h2f = sc.h2f[:0]
	for _, h := range o.headers {
		if !rrpair.EqualFold(h.Name, "content-length") {
			sc.h2f = append(sc.h2f, h2answer.Field{Name: h.Name, Value: h.Value})
		}
	}
	sc.h2t = sc.h2t[:0]
	for _, t := range o.trailers {
		sc.h2t = append(sc.h2t, h2answer.Field{Name: t.Name, Value: t.Value})
	}
	st.Answer(o.status, sc.h2f, o.body, sc.h2t)
}
