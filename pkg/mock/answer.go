package mock

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replay-dev/replay/internal/h2answer"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// scratch is what one request uses while it is answered, pooled: a
// signer, a cursor over the mapping and the pair it decodes into, and
// buffers.
type scratch struct {
	sg      *signer
	cur     *rrpair.Cursor
	pair    rrpair.Pair
	host    []byte // the live request's normalized host
	ep      []byte // an endpoint name
	headers []rrpair.Header
	body    []byte         // the live request's body, as far as it was read
	ans     rrpair.Request // the answer as the transforms see it
	out     outcome
	h2f     []h2answer.Field // an HTTP/2 answer's fields and trailers
	h2t     []h2answer.Field
	cookie  []byte // an HTTP/2 request's cookie fields joined
}

func newScratch(ix *index) *scratch {
	return &scratch{sg: newSigner(ix.seed, ix.match), cur: ix.f.NewCursor().WithResponses()}
}

func (s *Server) getScratch() *scratch { return s.scratch.Get().(*scratch) }

func (s *Server) putScratch(sc *scratch) {
	sc.out = outcome{headers: sc.out.headers[:0], trailers: sc.out.trailers[:0]}
	s.scratch.Put(sc)
}

// outcome is how a request is answered.
type outcome struct {
	status            int
	headers, trailers []rrpair.Header
	body              []byte
	wait              time.Duration // before the answer goes
	reset             bool          // cut the connection instead (a fault)
	ws                bool          // a recorded WebSocket upgrade: the session follows (websocket.go)
}

// live is a request as it arrived, beyond its view.
type live struct {
	v      view
	grpc   bool
	cs     *connState
	scheme string // as the client spoke it (absolute-form: its URL's)
	// authority is the host the client named (with its port): where
	// --passthrough sends it.
	authority []byte
	version   string // "1.1", "2"
	// gone, when not nil, ends once the client can no longer take the
	// answer (an HTTP/2 stream reset, its connection closed): a call
	// passed through is cut then.
	gone interface{ Context() context.Context }
}

// orderBy is how the k-th call of a signature is counted.
type orderBy struct {
	session bool
	kind    string // "", "header", "cookie"
	name    string
}

func newOrder(order, session string) orderBy {
	o := orderBy{session: order == "session"}
	o.kind, o.name, _ = strings.Cut(session, ":")
	return o
}

// sessionCounts are the answer counts of --order session --session
// header:NAME (or cookie:NAME): per session value.
type sessionCounts struct {
	mu sync.Mutex // guards m
	m  map[string]map[uint64]uint32
}

// maxSessions bounds the sessions counted apart; past it, a new session
// shares the counts of the sessions without a value.
const maxSessions = 100_000

func (sc *sessionCounts) next(session string, key uint64) uint32 {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.m == nil {
		sc.m = map[string]map[uint64]uint32{}
	}
	m, ok := sc.m[session]
	if !ok {
		if len(sc.m) >= maxSessions {
			session = ""
		}
		if m, ok = sc.m[session]; !ok {
			m = map[uint64]uint32{}
			sc.m[session] = m
		}
	}
	k := m[key]
	m[key] = k + 1
	return k
}

// sessionOf is the session value of a request's headers (--session).
func (o orderBy) sessionOf(hs []rrpair.Header) string {
	for _, h := range hs {
		switch {
		case o.kind == "header" && strings.EqualFold(string(h.Name), o.name):
			return string(h.Value)
		case o.kind == "cookie" && strings.EqualFold(string(h.Name), "cookie"):
			for _, kv := range strings.Split(string(h.Value), ";") {
				if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == o.name {
					return v
				}
			}
		}
	}
	return ""
}

// call counts a call of the signature at slots [lo, hi) of idx (loose
// says which index) and returns its number, from 0.
func (s *Server) call(idx *sorted, loose bool, lo int, l *live) uint32 {
	if !s.order.session {
		return idx.calls[lo].Add(1) - 1
	}
	key := uint64(lo) << 1
	if loose {
		key |= 1
	}
	if s.order.kind != "" {
		return s.sessions.next(s.order.sessionOf(l.v.headers), key)
	}
	cs := l.cs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.counts == nil {
		cs.counts = map[uint64]uint32{}
	}
	k := cs.counts[key]
	cs.counts[key] = k + 1
	return k
}

// answer finds how to answer l: a recorded answer (exact signature, then
// loose), a passed-through one, or a miss. It fills sc.out.
func (s *Server) answer(l *live, sc *scratch) *outcome {
	ix := s.ix
	sig := sc.sg.sum(&l.v, ix.exactM)
	idx, loose := &ix.exact, false
	lo, hi := idx.find(sig)
	if lo == hi && ix.looseM != nil {
		idx, loose = &ix.loose, true
		lo, hi = idx.find(sc.sg.sum(&l.v, ix.looseM))
	}
	if lo == hi {
		if s.pool != nil && !isUpgradeRequest(l.v.headers) { // a session is not relayed: an upgrade unmatched is a miss
			return s.passthrough(l, sc)
		}
		return s.miss(l, sc, sig)
	}
	k := s.call(idx, loose, lo, l)
	n := uint32(hi - lo)
	at := k
	if at >= n {
		if s.o.Cycle {
			at %= n
		} else {
			at = n - 1
		}
	}
	pi := int(idx.pair[lo+int(at)])
	ix.served[pi].Add(1)
	s.st.hits.Add(1)
	if err := sc.cur.Decode(pi, &sc.pair); err != nil {
		return s.broken(sc, err)
	}
	s.st.epHits[sc.pair.Endpoint].Add(1)
	if loose {
		s.st.loose.Add(1)
	}
	o := &sc.out
	// Faults are drawn by the signature's first recorded pair (its place
	// in the file, the same every start) and the call's number.
	if s.fault(o, uint64(idx.pair[lo])<<1|b2u(loose), k, l.grpc) {
		return o
	}
	s.recorded(l, sc)
	if d, err := sc.pair.RecordedDuration(); err == nil {
		o.wait += time.Duration(float64(d) * s.latency)
	}
	return o
}

// recorded fills sc.out with the recorded answer of sc.pair, rewritten by
// the transforms: status, headers (those of the connection and the length
// left to the server, which frames what it sends), trailers, body.
func (s *Server) recorded(l *live, sc *scratch) {
	p, o := &sc.pair, &sc.out
	o.status = p.Res.Status
	o.ws = o.status == 101
	o.headers = appendSendable(o.headers[:0], p.Res.Headers)
	sc.ep = s.ix.respell(o.headers, sc.ep)
	o.trailers = appendSendable(o.trailers[:0], p.Res.Trailers)
	o.body = p.Res.Body
	if enc := headerValue(o.headers, "content-encoding"); needsEncoding(p, enc, o.body) {
		if b, ok := s.encoded.body(p, enc, o.body); ok {
			o.body = b
		} else {
			s.st.rewriteFailed.Add(1) // a coding replay cannot write: sent as recorded
		}
	}
	if s.chain != nil {
		s.transform(l, sc)
	}
}

// appendSendable appends the fields of hs a server may send: not a
// pseudo-header (":status"), nor one of the connection's (Connection,
// Transfer-Encoding...). Content-Length stays, for its place: HTTP/1.1
// writes the length sent there, HTTP/2 leaves it to its server.
func appendSendable(dst, hs []rrpair.Header) []rrpair.Header {
	for _, h := range hs {
		if len(h.Name) > 0 && h.Name[0] == ':' || rrpair.IsConnectionHeader(h.Name) {
			continue
		}
		dst = append(dst, h)
	}
	return dst
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// fault injects a fault drawn for the k-th call of the signature known as
// sig into o; true when the fault is the answer (an error status, a
// reset).
func (s *Server) fault(o *outcome, sig uint64, k uint32, grpc bool) bool {
	f := &s.faults
	if !f.any() {
		return false
	}
	seed := s.o.Seed
	if f.resetRate > 0 && draw(seed, sig, k, faultReset) < f.resetRate {
		s.st.faults[faultReset].Add(1)
		o.reset = true
		return true
	}
	if f.delayRate > 0 && draw(seed, sig, k, faultDelay) < f.delayRate {
		s.st.faults[faultDelay].Add(1)
		o.wait += f.delay
	}
	if f.errRate > 0 && draw(seed, sig, k, faultError) < f.errRate {
		s.st.faults[faultError].Add(1)
		msg := "replay mock: injected fault (--error-rate " + s.o.Faults.ErrorRate + ")"
		if grpc {
			grpcError(o, int(result.GRPCStatusFromHTTP(f.errStatus)), msg)
			return true
		}
		o.status = f.errStatus
		o.headers = append(o.headers[:0], rrpair.Header{Name: []byte("Content-Type"), Value: []byte("application/json")})
		o.body = jsonObject("error", msg)
		return true
	}
	return false
}

// grpcError makes o a gRPC Trailers-Only answer: HTTP 200, the status and
// message in the headers, no body.
func grpcError(o *outcome, code int, msg string) {
	o.status, o.body, o.trailers = 200, nil, o.trailers[:0]
	o.headers = append(o.headers[:0],
		rrpair.Header{Name: []byte("content-type"), Value: []byte("application/grpc")},
		rrpair.Header{Name: []byte("grpc-status"), Value: []byte(strconv.Itoa(code))},
		rrpair.Header{Name: []byte("grpc-message"), Value: grpcMessage(msg)})
}

// grpcMessage percent-encodes msg as grpc-message wants it.
func grpcMessage(msg string) []byte {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

// jsonObject is {"key":"value"}.
func jsonObject(key, value string) []byte {
	b := append(rrpair.AppendJSONString([]byte("{"), key), ':')
	return append(rrpair.AppendJSONString(b, value), '}')
}

// broken answers a pair the file no longer holds as it did at start (it
// changed under the mapping): 500, counted.
func (s *Server) broken(sc *scratch, err error) *outcome {
	s.st.broken.Add(1)
	o := &sc.out
	o.status = 500
	o.headers = append(o.headers[:0], rrpair.Header{Name: []byte("Content-Type"), Value: []byte("application/json")})
	o.body = jsonObject("error", "replay mock: the recorded answer cannot be read: "+err.Error())
	return o
}

// isGRPC reports a gRPC call by its headers (rrpair's one rule).
func isGRPC(hs []rrpair.Header) bool { return rrpair.IsGRPC(hs) }
