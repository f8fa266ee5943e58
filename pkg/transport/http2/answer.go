package http2

import (
	"bytes"
	"strings"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// answer is the result.Answer view of an HTTP/2 answer a client read: its
// fields point into strings the HPACK decoder made (or its tables hold),
// its body into the client's buffer. The body is decoded at most once.
type answer struct {
	status   int
	headers  []rrpair.Header // the final header block, pseudo-headers left out
	trailers []rrpair.Header
	body     []byte
	maxBody  int
	discard  bool
	decoded  []byte
	done     bool
	cookies  []rrpair.Header
}

var _ result.Answer = (*answer)(nil)

func (a *answer) reset(maxBody int, discard bool) {
	a.status, a.headers, a.trailers, a.body = 0, a.headers[:0], a.trailers[:0], a.body[:0]
	a.maxBody, a.discard, a.decoded, a.done = maxBody, discard, nil, false
}

func (a *answer) Status() int { return a.status }

// Header is the first value of name among the headers, then the trailers
// (where a gRPC answer has grpc-status).
func (a *answer) Header(name string) []byte {
	if v := find(a.headers, name); v != nil {
		return v
	}
	return find(a.trailers, name)
}

// find is the first value of name (any case) in hs.
func find(hs []rrpair.Header, name string) []byte {
	for i := range hs {
		if strings.EqualFold(unsafeString(hs[i].Name), name) {
			if hs[i].Value == nil {
				return []byte{}
			}
			return hs[i].Value
		}
	}
	return nil
}

// Headers are the header fields, without the pseudo-headers (":status").
func (a *answer) Headers() []rrpair.Header { return a.headers }

// Trailers are the trailer fields, in the order received (a gRPC
// answer's grpc-status, grpc-message); nil when there were none.
func (a *answer) Trailers() []rrpair.Header {
	if len(a.trailers) == 0 {
		return nil
	}
	return a.trailers
}

func (a *answer) Cookies() []rrpair.Header {
	a.cookies = a.cookies[:0]
	for _, h := range a.headers {
		if rrpair.EqualFold(h.Name, "set-cookie") {
			name, _, _ := bytes.Cut(h.Value, []byte("="))
			a.cookies = append(a.cookies, rrpair.Header{Name: bytes.TrimSpace(name), Value: h.Value})
		}
	}
	return a.cookies
}

// RawBody is nil when the body was discarded.
func (a *answer) RawBody() []byte {
	if a.discard {
		return nil
	}
	return a.body
}

// Body is nil when the body was discarded.
func (a *answer) Body() []byte {
	if !a.done && !a.discard {
		a.done = true
		a.decoded = a.body
		if enc := find(a.headers, "content-encoding"); len(enc) > 0 {
			if b, err := result.Decode(enc, a.body, a.maxBody); err == nil {
				a.decoded = b
			}
		}
	}
	return a.decoded
}

// digits reads s, 1 to most decimal digits.
func digits(s string, most int) (int, bool) {
	if len(s) == 0 || len(s) > most {
		return 0, false
	}
	n := 0
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}
