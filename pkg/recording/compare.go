package recording

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Comparer compares each live response with the recorded one (--compare):
// the status always (and a gRPC call's grpc-status), with body the body too — as JSON when both sides are
// JSON, with the ignored paths removed first (timestamps, IDs), else byte
// for byte — and the headers named (--compare-header). It is a result.Observer; counting is atomic and a mismatch
// takes a lock only to keep its example.
//
// With Learned, the recorded body and headers are first mapped as the
// run changed the recording: the values a correlation learned and the
// fresh values made in the session replaced, so that a correlated replay
// that did what it should matches.
type Comparer struct {
	endpoints []string
	body      bool
	ignore    [][]string
	headers   []string // compared by name, when recorded
	// Learned, when set, maps the recorded answer before it is compared
	// (transform.Chain, the run's). It is observed before the Comparer, so
	// that the answer that taught a value is compared with it mapped.
	Learned Learned

	compared, matched, unrecorded atomic.Int64
	grpc                          atomic.Int64 // gRPC answers compared
	// WebSocket server messages compared and matched (ObserveMessage).
	msgCompared, msgMatched atomic.Int64
	perEndpoint             []endpointMatch

	mu         sync.Mutex // guards mismatches
	mismatches map[string]*report.Mismatch
}

type endpointMatch struct{ compared, matched atomic.Int64 }

// Learned maps recorded bytes as a run's session changed the recording
// (transform.Chain.MapLearned): ok is false when nothing applied. The
// bytes it returns are VU vu's, valid until its next call on vu.
type Learned interface {
	MapLearned(vu int, recorded []byte) (mapped []byte, ok bool)
}

var _ result.Observer = (*Comparer)(nil)

// NewComparer compares responses; body adds bodies, ignoring the JSON paths
// in ignore ("id", "data.created_at", "items.*.ts": * matches any key or
// element); headers are response headers to compare by name (when the
// recording has them).
func NewComparer(endpoints []string, body bool, ignore, headers []string) *Comparer {
	c := &Comparer{endpoints: endpoints, body: body, headers: headers, mismatches: map[string]*report.Mismatch{},
		perEndpoint: make([]endpointMatch, len(endpoints))}
	for _, p := range ignore {
		c.ignore = append(c.ignore, strings.Split(p, "."))
	}
	return c
}

// Observe implements result.Observer.
func (c *Comparer) Observe(vu int, p *rrpair.Pair, a result.Answer) {
	if p.Res.Status == 0 {
		c.unrecorded.Add(1) // nothing recorded to compare with
		return
	}
	c.compared.Add(1)
	var ep *endpointMatch
	if int(p.Endpoint) < len(c.perEndpoint) {
		ep = &c.perEndpoint[p.Endpoint]
		ep.compared.Add(1)
	}
	got := a.Status()
	isGRPC := p.IsGRPC()
	if isGRPC {
		c.grpc.Add(1)
	}
	switch {
	case got != p.Res.Status:
		c.mismatch(p, "status", fmt.Sprint(p.Res.Status), fmt.Sprint(got))
		return
	case isGRPC && !c.sameGRPCStatus(p, a):
		return
	case c.body:
		if rec := c.mapped(vu, result.RecordedBody(&p.Res)); !c.sameBody(rec, a.Body()) {
			c.mismatch(p, "body", clipBody(rec), clipBody(a.Body()))
			return
		}
	}
	for _, name := range c.headers {
		recorded, ok := recordedHeader(p, name)
		if !ok {
			continue
		}
		if rec := c.mapped(vu, recorded); !bytes.Equal(a.Header(name), rec) {
			c.mismatch(p, "header "+name, string(rec), string(a.Header(name)))
			return
		}
	}
	c.matched.Add(1)
	if ep != nil {
		ep.matched.Add(1)
	}
}

// sameGRPCStatus compares the gRPC status of a gRPC call's answer with the
// recorded one (result.GRPCStatusOf: trailers, else the headers of a
// Trailers-Only answer, else mapped from the HTTP status), keeping a
// mismatch of kind "grpc-status" by code name when they differ. The
// recorded trailers are there when the run decodes responses, as it does
// with --compare.
func (c *Comparer) sameGRPCStatus(p *rrpair.Pair, a result.Answer) bool {
	rec := result.GRPCStatusOf(p.Res.Status, p.Res.Headers, p.Res.Trailers)
	got := result.AnswerGRPCStatus(a)
	if rec == got {
		return true
	}
	c.mismatch(p, "grpc-status", result.GRPCCodeName(rec), result.GRPCCodeName(got))
	return false
}

// mapped is recorded as the run changed the recording on VU vu
// (Learned), or as it is.
func (c *Comparer) mapped(vu int, recorded []byte) []byte {
	if c.Learned != nil {
		if m, ok := c.Learned.MapLearned(vu, recorded); ok {
			return m
		}
	}
	return recorded
}

// recordedHeader is the first recorded value of the response header name.
func recordedHeader(p *rrpair.Pair, name string) ([]byte, bool) {
	for _, h := range p.Res.Headers {
		if strings.EqualFold(string(h.Name), name) {
			return h.Value, true
		}
	}
	return nil, false
}

// sameBody compares two bodies: as JSON values with the ignored paths
// removed when both parse, else as bytes.
func (c *Comparer) sameBody(recorded, replayed []byte) bool {
	if bytes.Equal(recorded, replayed) {
		return true
	}
	var a, b any
	if json.Unmarshal(recorded, &a) != nil || json.Unmarshal(replayed, &b) != nil {
		return false
	}
	for _, path := range c.ignore {
		a, b = without(a, path), without(b, path)
	}
	return reflect.DeepEqual(a, b)
}

// without removes path from a decoded JSON value.
func without(v any, path []string) any {
	if len(path) == 0 {
		return nil
	}
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if path[0] != "*" && path[0] != k {
				continue
			}
			if len(path) == 1 {
				delete(t, k)
			} else {
				t[k] = without(child, path[1:])
			}
		}
	case []any:
		if path[0] == "*" {
			for i, child := range t {
				if len(path) > 1 {
					t[i] = without(child, path[1:])
				}
			}
		}
	}
	return v
}

func (c *Comparer) mismatch(p *rrpair.Pair, kind, recorded, replayed string) {
	name := rrpair.OtherEndpoint
	if int(p.Endpoint) < len(c.endpoints) {
		name = c.endpoints[p.Endpoint]
	}
	key := name + "\x00" + kind + "\x00" + recorded + "\x00" + replayed
	if kind == "body" || kind == "message" {
		key = name + "\x00" + kind // one example per endpoint
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.mismatches[key]
	if m == nil {
		m = &report.Mismatch{Endpoint: name, Kind: kind, Recorded: recorded, Replayed: replayed, Line: p.Line}
		c.mismatches[key] = m
	}
	m.Count++
}

func clipBody(b []byte) string {
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// Result returns the comparison so far.
func (c *Comparer) Result() *report.Compare {
	out := &report.Compare{Compared: c.compared.Load(), Matched: c.matched.Load(), NotRecorded: c.unrecorded.Load(), Body: c.body,
		GRPCCompared: c.grpc.Load(), MessagesCompared: c.msgCompared.Load(), MessagesMatched: c.msgMatched.Load(),
		Endpoints: []report.EndpointMatch{}, Mismatches: []report.Mismatch{}}
	for i := range c.perEndpoint {
		e := &c.perEndpoint[i]
		if n := e.compared.Load(); n > 0 {
			out.Endpoints = append(out.Endpoints, report.EndpointMatch{Name: c.endpoints[i], Compared: n, Matched: e.matched.Load()})
		}
	}
	c.mu.Lock()
	for _, m := range c.mismatches {
		out.Mismatches = append(out.Mismatches, *m)
	}
	c.mu.Unlock()
	out.Finish()
	return out
}
