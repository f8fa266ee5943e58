package transform

import (
	"bytes"
	"fmt"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Stamper keeps the score of stamped requests (e2e.Tracker): the chain
// tells it each request it stamps and each one the API accepted, with the
// send time its ID carries (Unix µs).
type Stamper interface {
	Nonce() uint32
	Stamped(vu int)
	Accepted(vu int, seq uint64, sent int64)
}

// StampOptions turn on correlation IDs: each request carries a unique ID
// (e2e.ID: run, shard, VU, sequence, send time) that the SUT passes
// along to where sinks see it. Only then: a plain replay stays faithful.
type StampOptions struct {
	Header string // set this header to the ID ("ce-id": CloudEvents binary mode); "" for none
	JSON   string // set this top-level field of a JSON object body ("id": a structured CloudEvent); "" for none
	Shard  int
	// Only limits stamping to these endpoints (as reports name them):
	// those whose requests become events. Empty: every request.
	Only []string
	To   Stamper
}

// stamp is the last step of a chain with StampOptions.
type stamp struct {
	header []byte
	field  []byte // the JSON key, quoted
	shard  int
	to     Stamper
	nonce  uint32
	only   endpointSet // nil: all
}

// checkStamp checks the stamping options, without a Stamper.
func checkStamp(o *StampOptions, endpoints []string) error {
	if o.Header == "" && o.JSON == "" {
		return fmt.Errorf("correlation IDs: give a header, a JSON field, or both")
	}
	if o.Header != "" && !rrpair.ValidHeaderName(o.Header) {
		return fmt.Errorf("correlation IDs: %q is not a header name", o.Header)
	}
	if _, err := newEndpointSet(o.Only, endpoints); err != nil {
		return fmt.Errorf("correlation IDs: %w", err)
	}
	return nil
}

func newStamp(o *StampOptions, endpoints []string) (*stamp, error) {
	if err := checkStamp(o, endpoints); err != nil {
		return nil, err
	}
	s := &stamp{shard: o.Shard, to: o.To, nonce: o.To.Nonce()}
	if o.Header != "" {
		s.header = []byte(o.Header)
	}
	if o.JSON != "" {
		s.field = rrpair.AppendJSONString(nil, o.JSON)
	}
	var err error
	if s.only, err = newEndpointSet(o.Only, endpoints); err != nil {
		return nil, fmt.Errorf("correlation IDs: %w", err)
	}
	return s, nil
}

func (s *stamp) name() string        { return "correlation id" }
func (s *stamp) needsRecorded() bool { return false }

// vuStamp is a VU's stamping state.
type vuStamp struct {
	seq     uint64 // the next sequence number
	sent    int64  // the send time the last ID carries, Unix µs
	pending bool   // the last request was stamped with seq-1
}

func (s *stamp) apply(c *call) {
	st := &c.st.stamp
	if !s.only.has(c.pair.Endpoint) {
		st.pending = false
		return
	}
	seq := st.seq
	st.seq++
	st.sent = c.now / 1000
	buf := c.buf(0)
	*buf = e2e.AppendID((*buf)[:0], e2e.ID{Nonce: s.nonce, Shard: s.shard, VU: c.st.vu, Seq: seq, Sent: st.sent})
	id := *buf
	stamped := false
	if s.header != nil {
		c.req.Headers = setHeader(c.req.Headers, s.header, id)
		stamped = true
	}
	if s.field != nil && c.bodyAllowed() {
		if body, ok := setTopLevelString(&c.st.walker, &c.st.topKey, c.buf(1), c.req.Body, s.field, id); ok {
			c.req.Body = body
			stamped = true
		}
	}
	st.pending = stamped
	if !stamped {
		// No header asked for, and the body is not a JSON object (or a
		// gRPC body, skipped and counted as such).
		c.failed = !c.skipped
		return
	}
	s.to.Stamped(c.st.vu)
	c.changed = true
}

// observe tells the tracker that the API accepted the stamped request: an
// answer below 400, or to a gRPC call, grpc-status OK.
func (s *stamp) observe(st *vuState, _ int, p *rrpair.Pair, a result.Answer) {
	if st.stamp.pending && accepted(p, a) {
		s.to.Accepted(st.vu, st.stamp.seq-1, st.stamp.sent)
	}
	st.stamp.pending = false
}

func accepted(p *rrpair.Pair, a result.Answer) bool {
	if p.IsGRPC() {
		return result.AnswerGRPCStatus(a) == result.GRPCOK
	}
	return a.Status() < 400
}

// setTopLevelString writes body with the top-level key (quoted) set to the
// string value into *dst: its value replaced where the key stands, or the
// pair added first. ok is false when body is not a JSON object.
func setTopLevelString(w *jsonWalker, f *topKey, dst *[]byte, body, key, value []byte) ([]byte, bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	*f = topKey{key: key[1 : len(key)-1], start: -1}
	if !w.walk(body, f) {
		return nil, false
	}
	out := (*dst)[:0]
	if f.start >= 0 {
		out = append(out, body[:f.start]...)
		out = append(append(append(out, '"'), value...), '"')
		out = append(out, body[f.end:]...)
	} else {
		out = append(out, body[:i+1]...)
		out = append(append(append(append(out, key...), ':', '"'), value...), '"')
		if j := skipSpace(body, i+1); j < len(body) && body[j] != '}' {
			out = append(out, ',')
		}
		out = append(out, body[i+1:]...)
	}
	*dst = out
	return out, true
}

// topKey finds the span of a top-level key's scalar value.
type topKey struct {
	key        []byte
	start, end int
}

func (f *topKey) visit(w *jsonWalker, start, end int) bool {
	if f.start < 0 && w.depth == 1 && w.keys[0] != nil && bytes.Equal(w.keys[0], f.key) {
		f.start, f.end = start, end
	}
	return true
}
