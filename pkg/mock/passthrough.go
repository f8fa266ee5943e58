package mock

import (
	"context"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport/negotiate"
)

// passthrough sends a miss to its real host (--passthrough) and answers
// with what it answered, recorded with --record-misses (direction OUT).
// A host that cannot be reached is a 502 naming it, counted.
func (s *Server) passthrough(l *live, sc *scratch) *outcome {
	n := s.st.passed.Add(1) - 1
	scheme := l.scheme
	if s.ix.httpsHost[string(l.v.host)] {
		scheme = "https"
	}
	authority := l.authority
	if len(authority) == 0 {
		authority = l.v.host
	}
	headers := make([]rrpair.Header, 0, len(l.v.headers))
	for _, h := range l.v.headers { // the proxy's own headers stop here
		if !rrpair.EqualFold(h.Name, "proxy-authorization") && !rrpair.IsConnectionHeader(h.Name) {
			headers = append(headers, h)
		}
	}
	req := rrpair.Request{Method: l.v.method, URI: l.v.uri, Host: authority, Scheme: []byte(scheme), Headers: headers, Body: l.v.body}
	var seq int64
	if s.misses != nil {
		seq = s.misses.Begin()
	}
	start := s.o.Now()
	pair := rrpair.Pair{Req: req, Version: []byte(l.version)}
	ctx := context.Background()
	if l.gone != nil {
		ctx = l.gone.Context()
	}
	reply, err := s.pool.DoContext(ctx, &req, &pair)
	o := &sc.out
	if err != nil {
		s.st.passErrors.Add(1)
		if s.misses != nil {
			s.misses.Done(seq, nil)
		}
		s.o.Log.Warn().Err(err).Str("request", describe(&l.v)).Msg("passthrough: the real host did not answer")
		o.status = 502
		o.headers = append(o.headers[:0], rrpair.Header{Name: []byte("Content-Type"), Value: []byte("application/json")})
		o.body = jsonObject("error", "replay mock --passthrough: "+string(authority)+": "+err.Error())
		return o
	}
	end := s.o.Now()
	o.status, o.body = reply.Status, reply.Body
	o.headers = appendSendable(o.headers[:0], toHeaders(reply.Headers))
	o.trailers = appendSendable(o.trailers[:0], toHeaders(reply.Trailers))
	if s.misses != nil {
		s.recordMiss(seq, l, &req, reply, start, end)
	}
	s.fault(o, 1<<63, uint32(n), l.grpc) // drawn by the passthrough's number
	return o
}

// recordMiss writes a passed-through exchange as an RRPair line.
func (s *Server) recordMiss(seq int64, l *live, req *rrpair.Request, r *negotiate.Reply, start, end time.Time) {
	rec := &rrpair.Record{TS: start, Duration: max(end.Sub(start), time.Microsecond), Protocol: string(req.Scheme), Direction: "OUT",
		Version: l.version, Method: string(req.Method), URI: string(req.URI), Host: string(req.Host), Body: req.Body,
		Status: r.Status, ResHeaders: r.Headers, ResTrailers: r.Trailers, ResBody: r.Body}
	for _, h := range req.Headers {
		rec.Headers = append(rec.Headers, rrpair.Field{Name: string(h.Name), Value: string(h.Value)})
	}
	line, err := rrpair.AppendChecked(nil, rec)
	if err != nil {
		s.misses.Done(seq, nil)
		return
	}
	s.misses.Done(seq, line)
}

// toHeaders is fields as headers.
func toHeaders(fs []rrpair.Field) []rrpair.Header {
	out := make([]rrpair.Header, len(fs))
	for i, f := range fs {
		out[i] = rrpair.Header{Name: []byte(f.Name), Value: []byte(f.Value)}
	}
	return out
}
