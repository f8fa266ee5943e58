// Package http1 is HTTP/1.1 on a conn.Line: each VU's client writes the
// recorded request as docs/design.md's "Headers on the wire" says (wire.go),
// scans each answer's head for what a browser or curl would refuse, what
// fasthttp would misread or wait on (a bare LF, a "000" status, a 101
// nobody asked for) and the leniencies kept (head.go), reads the answer
// with fasthttp's parser (the only client-side fasthttp of the project),
// discards bodies nobody reads,
// keeps or closes the connection after each answer (and closes it on
// bytes no request asked for), lends the answer as a result.Answer and
// names what went wrong on top of the connection layer's kinds. The
// connection itself (where a request goes, dial, TLS, proxy, reconnects,
// idle probe, the hard stop) is the Line's. It is also a whole
// transport.Transport on its own (New); transport/negotiate puts it beside
// transport/http2.
package http1

import (
	"errors"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

// Options configure HTTP/1.1 as a whole transport: the connection layer's
// options, and what is kept of an answer.
type Options struct {
	Conn   conn.Options
	Answer transport.AnswerOptions
}

// Validate checks o without reading any file or changing o. Its errors
// name the flag a user would fix.
func (o *Options) Validate() error {
	return errors.Join(o.Conn.Validate(), o.Answer.Validate())
}

// Transport is HTTP/1.1 as a transport.Transport: each VU's client on a
// Line of its own Dialer, read-only and shared.
type Transport struct {
	d *conn.Dialer
	a transport.AnswerOptions
}

var _ transport.Transport = (*Transport)(nil)

// New validates o (Validate), reads its TLS files, fills its defaults and
// returns the transport.
func New(o Options) (*Transport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	d, err := conn.New(o.Conn)
	if err != nil {
		return nil, err
	}
	return &Transport{d: d, a: o.Answer.WithDefaults()}, nil
}

// Check implements transport.Transport: every recorded host of f has
// somewhere to go (conn.Dialer.Check).
func (t *Transport) Check(f *rrpair.File) error { return t.d.Check(f) }

// NewClient implements transport.Transport.
func (t *Transport) NewClient(vu int, now func() int64) transport.Client {
	return NewClient(t.d.NewLine(now), t.a)
}

// AppendWire implements transport.Transport (AppendRequest).
func (t *Transport) AppendWire(dst []byte, req *rrpair.Request) (string, []byte) {
	r := t.d.Route(req)
	return r.Addr, AppendRequest(dst, req, r.Host, t.d.Options().NoConnectionReuse)
}

// AppendRequest appends req to dst as a client writes it going to host:
// its head (appendHead), then its body; connClose adds "Connection:
// close" (--no-connection-reuse).
func AppendRequest(dst []byte, req *rrpair.Request, host []byte, connClose bool) []byte {
	return append(appendHead(dst, req, host, connClose), req.Body...)
}
