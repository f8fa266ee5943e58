package rrpair

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// A recorder such as Speedscale writes every call it saw into one file:
// the HTTP requests to the service, but also its database queries, its
// own calls to other services, and records of half a call. A line that is
// valid JSON but not a request to replay is skipped and counted by kind;
// it is never a reason to refuse the file. A broken line (bad JSON, bad
// request fields) still is.

// skipKind is why a valid line is not replayed; replayable when it is.
type skipKind uint8

const (
	replayable       skipKind = iota
	skipProtocol              // l7protocol names another protocol (postgres, mysql, redis...)
	skipSignature             // http.res whose request is a signature (signature.go)
	skipResponseOnly          // http.res without an http.req object
	skipDirectionOut          // an OUT pair, and no --keep direction= chose OUT
)

// Skipped counts the lines of a file that are valid but not replayed, by
// kind, as `replay inspect`, the run log and the summary JSON show them:
//
//	{"protocol": {"postgres": 12, "mysql": 2}, "signature": 16, "response_only": 3, "direction_out": 7}
//
// A line counts once, under the first kind that applies in this order:
// protocol (l7protocol other than http, https or grpc, lower-cased),
// signature (an http.res whose request is given only as a Speedscale
// signature: replay mock answers it, a run has no request to send),
// response_only (an http.res but no http.req object, and no signature),
// direction_out (direction OUT, unless a --keep direction= rule chose
// OUT). The counts describe the file (and the run's flags), not a shard:
// every shard of a run counts the same.
type Skipped struct {
	Protocol     map[string]int `json:"protocol,omitempty"`
	Signature    int            `json:"signature,omitempty"`
	ResponseOnly int            `json:"response_only,omitempty"`
	DirectionOut int            `json:"direction_out,omitempty"`
}

// Total is the number of lines skipped.
func (s *Skipped) Total() int {
	if s == nil {
		return 0
	}
	n := s.Signature + s.ResponseOnly + s.DirectionOut
	for _, c := range s.Protocol {
		n += c
	}
	return n
}

// Kinds lists the non-zero counts as "name count" pairs, protocols first
// (most frequent first, then by name): what a log line or a text report
// shows, e.g. ["postgres 12", "response_only 3", "direction_out 7"].
func (s *Skipped) Kinds() []string {
	if s == nil {
		return nil
	}
	protos := make([]string, 0, len(s.Protocol))
	for name := range s.Protocol {
		protos = append(protos, name)
	}
	sort.Slice(protos, func(i, j int) bool {
		a, b := protos[i], protos[j]
		if s.Protocol[a] != s.Protocol[b] {
			return s.Protocol[a] > s.Protocol[b]
		}
		return a < b
	})
	var out []string
	for _, name := range protos {
		out = append(out, fmt.Sprintf("%s %d", name, s.Protocol[name]))
	}
	for _, k := range []struct {
		name string
		n    int
	}{{"signature", s.Signature}, {"response_only", s.ResponseOnly}, {"direction_out", s.DirectionOut}} {
		if k.n > 0 {
			out = append(out, fmt.Sprintf("%s %d", k.name, k.n))
		}
	}
	return out
}

// String is the counts on one line: "12 lines (postgres 12, ...)".
func (s *Skipped) String() string {
	lines := "lines"
	if s.Total() == 1 {
		lines = "line"
	}
	return fmt.Sprintf("%d %s (%s)", s.Total(), lines, strings.Join(s.Kinds(), ", "))
}

// clone returns a copy of s that shares nothing with it.
func (s *Skipped) clone() Skipped {
	c := *s
	if s.Protocol != nil {
		c.Protocol = make(map[string]int, len(s.Protocol))
		for k, v := range s.Protocol {
			c.Protocol[k] = v
		}
	}
	return c
}

// count adds one line of kind (for skipProtocol, of protocol proto).
func (s *Skipped) count(kind skipKind, proto []byte) {
	switch kind {
	case skipProtocol:
		if s.Protocol == nil {
			s.Protocol = map[string]int{}
		}
		s.Protocol[strings.ToLower(string(proto))]++
	case skipSignature:
		s.Signature++
	case skipResponseOnly:
		s.ResponseOnly++
	case skipDirectionOut:
		s.DirectionOut++
	}
}

// add adds the counts of o.
func (s *Skipped) add(o *Skipped) {
	for k, v := range o.Protocol {
		if s.Protocol == nil {
			s.Protocol = map[string]int{}
		}
		s.Protocol[k] += v
	}
	s.Signature += o.Signature
	s.ResponseOnly += o.ResponseOnly
	s.DirectionOut += o.DirectionOut
}

var protoGRPC = []byte("grpc")

// httpProtocol reports whether l7protocol proto is carried in http.req
// and http.res: absent, http, https, or grpc (gRPC runs over HTTP/2; such
// a line is a gRPC pair when its Content-Type says so, DESIGN's one rule).
func httpProtocol(proto []byte) bool {
	return len(proto) == 0 || bytes.EqualFold(proto, schemeHTTP) || bytes.EqualFold(proto, schemeHTTPS) ||
		bytes.EqualFold(proto, protoGRPC)
}

// classify says whether a line that decoded without error is an HTTP
// request to replay, or what kind of line to skip.
func (d *decoder) classify(p *Pair) skipKind {
	switch {
	case !httpProtocol(p.Protocol):
		return skipProtocol
	case d.hasReq:
		return replayable
	case d.hasRes && d.sig.present():
		return skipSignature
	case d.hasRes:
		return skipResponseOnly
	case bytes.EqualFold(p.Protocol, protoGRPC):
		return skipProtocol // a gRPC record with no HTTP fields at all
	}
	return replayable // no request: check says what is missing
}

// otherProtocol reports whether line, whose fields did not decode as
// HTTP, is valid JSON whose l7protocol names another protocol: its fields
// are that protocol's business, so it is skipped rather than refused. It
// sets p.Protocol. Only a line in error pays for this second look.
func (d *decoder) otherProtocol(line []byte, p *Pair) bool {
	s := scanner{b: line}
	if s.peek() != '{' {
		return false
	}
	s.i++
	var proto []byte
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil {
			return false
		}
		if !ok {
			break
		}
		if string(key) == "l7protocol" && s.peek() == '"' {
			proto, err = d.string(&s)
		} else {
			err = s.skip(0)
		}
		if err != nil {
			return false
		}
	}
	if s.end() != nil || httpProtocol(proto) {
		return false
	}
	p.Protocol = proto
	return true
}
