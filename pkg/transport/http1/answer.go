package http1

import (
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/valyala/fasthttp"
)

// answer is the result.Answer view of a client's fasthttp response. The
// body is decoded at most once per answer.
type answer struct {
	resp      *fasthttp.Response
	maxBody   int
	discarded bool // the body was dropped as it arrived (DiscardBodies)
	decoded   []byte
	done      bool // decoded is set for this answer

	headers, cookies []rrpair.Header // reused from answer to answer
}

var _ result.Answer = (*answer)(nil)

// reset points the view at a new answer.
func (a *answer) reset(resp *fasthttp.Response, maxBody int, discarded bool) {
	a.resp, a.maxBody, a.discarded, a.decoded, a.done = resp, maxBody, discarded, nil, false
}

func (a *answer) Status() int { return a.resp.StatusCode() }

func (a *answer) Header(name string) []byte { return a.resp.Header.Peek(name) }

func (a *answer) Headers() []rrpair.Header {
	a.headers = a.headers[:0]
	for k, v := range a.resp.Header.All() {
		a.headers = append(a.headers, rrpair.Header{Name: k, Value: v})
	}
	return a.headers
}

// Trailers is nil: over HTTP/1.1 replay keeps no trailers apart (gRPC,
// which needs them, runs over HTTP/2).
func (a *answer) Trailers() []rrpair.Header { return nil }

func (a *answer) Cookies() []rrpair.Header {
	a.cookies = a.cookies[:0]
	for k, v := range a.resp.Header.Cookies() {
		a.cookies = append(a.cookies, rrpair.Header{Name: k, Value: v})
	}
	return a.cookies
}

// RawBody is nil when the body was discarded.
func (a *answer) RawBody() []byte {
	if a.discarded {
		return nil
	}
	return a.resp.Body()
}

// Body is nil when the body was discarded.
func (a *answer) Body() []byte {
	if !a.done && !a.discarded {
		a.done = true
		a.decoded = a.resp.Body()
		if enc := a.resp.Header.ContentEncoding(); len(enc) > 0 {
			if b, err := result.Decode(enc, a.decoded, a.maxBody); err == nil {
				a.decoded = b
			}
		}
	}
	return a.decoded
}
