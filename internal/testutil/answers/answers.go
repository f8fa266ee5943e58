// Package answers builds result.Answers from plain values, for tests of
// the observers (comparison, correlation) without a transport, the way
// net/http/httptest serves handlers without a network.
package answers

import (
	"bytes"
	"strings"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Answer is a result.Answer held in plain fields.
type Answer struct {
	Code   int
	Fields []rrpair.Header // in order, repeats allowed
	Raw    []byte          // the body as received
	// Trailer are the trailer fields (an HTTP/2 answer's), in order.
	Trailer []rrpair.Header

	cookies []rrpair.Header
}

var _ result.Answer = (*Answer)(nil)

// New is an answer with status, body and headers given as name, value,
// name, value...
func New(status int, body string, headers ...string) *Answer {
	a := &Answer{Code: status, Raw: []byte(body)}
	for i := 0; i+1 < len(headers); i += 2 {
		a.Fields = append(a.Fields, rrpair.Header{Name: []byte(headers[i]), Value: []byte(headers[i+1])})
	}
	return a
}

// Status implements result.Answer.
func (a *Answer) Status() int { return a.Code }

// Header implements result.Answer.
func (a *Answer) Header(name string) []byte {
	for _, f := range a.Fields {
		if equalFold(f.Name, name) {
			return f.Value
		}
	}
	return nil
}

// Headers implements result.Answer.
func (a *Answer) Headers() []rrpair.Header { return a.Fields }

// Trailers implements result.Answer.
func (a *Answer) Trailers() []rrpair.Header { return a.Trailer }

// WithTrailers adds trailer fields given as name, value, name, value... and
// returns a.
func (a *Answer) WithTrailers(fields ...string) *Answer {
	for i := 0; i+1 < len(fields); i += 2 {
		a.Trailer = append(a.Trailer, rrpair.Header{Name: []byte(fields[i]), Value: []byte(fields[i+1])})
	}
	return a
}

// Cookies implements result.Answer.
func (a *Answer) Cookies() []rrpair.Header {
	a.cookies = a.cookies[:0]
	for _, f := range a.Fields {
		if equalFold(f.Name, "Set-Cookie") {
			name, _, _ := bytes.Cut(f.Value, []byte("="))
			a.cookies = append(a.cookies, rrpair.Header{Name: bytes.TrimSpace(name), Value: f.Value})
		}
	}
	return a.cookies
}

// Body implements result.Answer: Raw decoded by its Content-Encoding.
func (a *Answer) Body() []byte {
	if enc := a.Header("Content-Encoding"); len(enc) > 0 {
		if b, err := result.Decode(enc, a.Raw, 0); err == nil {
			return b
		}
	}
	return a.Raw
}

// RawBody implements result.Answer.
func (a *Answer) RawBody() []byte { return a.Raw }

func equalFold(b []byte, s string) bool { return len(b) == len(s) && strings.EqualFold(string(b), s) }
