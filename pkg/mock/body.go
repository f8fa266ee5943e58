package mock

import (
	"errors"
	"io"
	"strconv"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// A request body is read only as far as matching needs: no recorded
// request of its host and path (its route: rotating path segments as
// one) holds a body longer than the largest recorded there, so a live body
// longer than twice that, plus bodySlack (the same JSON written with more
// white space, a rotating value written longer), matches nothing. Past
// that limit the request is answered 413 without reading the rest (its
// connection closed after the answer, HTTP/1.1; the stream reset,
// HTTP/2), and counted (Report.BodiesOverLimit): nothing is cut and
// matched. With --passthrough a miss needs its whole body to send on:
// up to MaxPassthroughBody.

// bodySlack is what a live body may hold beyond twice the largest
// recorded body of its method, host and path.
const bodySlack = 64 << 10

// MaxPassthroughBody is the largest request body --passthrough reads to
// send on to the real host; a longer one is answered 413.
const MaxPassthroughBody = 64 << 20

// bodyLimit is how many bytes of v's body (host and uri set) are read:
// past it, nothing recorded can match.
func (s *Server) bodyLimit(v *view, sc *scratch) int {
	if s.pool != nil {
		return MaxPassthroughBody
	}
	longest := 0
	if lo, hi := s.ix.route.find(sc.sg.route(v)); lo < hi {
		longest = int(s.ix.bodyMax[lo])
	}
	return 2*longest + bodySlack
}

// errBodyOverLimit is a body longer than its limit.
var errBodyOverLimit = errors.New("request body over its limit")

// readBody reads r into buf (reused) up to limit bytes. length is the
// length the request announced (-1 unknown): an announced length past
// the limit is refused before a byte is read. errBodyOverLimit when the
// body is longer than limit (then what is left is not read).
func readBody(r io.Reader, length int64, limit int, buf []byte) ([]byte, error) {
	buf = buf[:0]
	if length > int64(limit) {
		return buf, errBodyOverLimit
	}
	if r == nil || length == 0 {
		return buf, nil
	}
	for {
		if len(buf) == cap(buf) {
			grow := max(4<<10, min(cap(buf), limit+1-cap(buf)))
			buf = append(buf, make([]byte, grow)...)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return buf[:0], errBodyOverLimit
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// overLimit answers a request whose body is longer than limit: 413 (a
// gRPC call: RESOURCE_EXHAUSTED), naming the limit; counted as a miss and
// as a body over its limit.
func (s *Server) overLimit(l *live, sc *scratch, limit int) *outcome {
	s.st.misses.Add(1)
	s.st.overLimit.Add(1)
	req := describe(&l.v)
	why := "twice the largest recorded for " + string(l.v.host) + " and its path, plus 64 KiB"
	if s.pool != nil {
		why = "the largest --passthrough sends on"
	}
	msg := "replay mock: request body over " + strconv.Itoa(limit) + " bytes (" + why + "): no recorded request matches it; the rest is not read"
	if n, ok := s.missLog.allow(s.o.Now()); ok {
		ev := s.o.Log.Warn().Str("request", req).Int("limit_bytes", limit)
		if n > 0 {
			ev = ev.Int64("misses_not_logged", n)
		}
		ev.Msg("miss: request body over its limit")
	}
	o := &sc.out
	if l.grpc {
		grpcError(o, 8, msg) // RESOURCE_EXHAUSTED
		return o
	}
	o.status = 413
	o.headers = append(o.headers[:0], rrpair.Header{Name: []byte("Content-Type"), Value: []byte("application/json")})
	body := append(rrpair.AppendJSONString([]byte(`{"error":`), msg), `,"request":`...)
	o.body = append(rrpair.AppendJSONString(body, req), '}')
	return o
}
