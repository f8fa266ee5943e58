// Package http2 is the HTTP/2 transport, beside transport/http1: each VU's
// client holds one connection (made, kept and cut by an http1.Client,
// which lends it: the dial, TLS, the proxy tunnel and reconnect counting
// are the same whatever the protocol) and speaks on it whichever protocol
// it negotiated: HTTP/2 when ALPN chose "h2" or --h2c says so by prior
// knowledge, HTTP/1.1 otherwise. Over HTTP/2 a client runs one stream at a
// time (a VU is a user), writes the recorded request as a header list
// (wire.go) with golang.org/x/net/http2's framer and HPACK, reads the
// answer with its trailers, and classifies stream resets, GOAWAY and
// flow-control stalls. gRPC pairs (rrpair.IsGRPC) go out byte for byte and
// their answer's grpc-status is read.
package http2

import (
	"errors"
	"fmt"

	"github.com/replay-dev/replay/internal/transport/http1"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
)

// The values of --http2.
const (
	Auto = "auto" // offer h2 over TLS when the file holds HTTP/2 or gRPC pairs
	On   = "on"   // always offer h2 over TLS
	Off  = "off"  // never: HTTP/1.1 only
)

// Options configure the transport: the HTTP/1.1 transport's (where
// requests go, how connections are made), and which protocol to speak.
type Options struct {
	HTTP1 http1.Options
	// HTTP2 is Auto (or ""), On or Off: whether a TLS handshake offers
	// "h2" by ALPN.
	HTTP2 string
	// H2C speaks cleartext HTTP/2 with prior knowledge to http:// targets.
	H2C bool
}

// Validate checks o; its errors name the flag a user would fix.
func (o *Options) Validate() error {
	var errs []error
	if err := o.HTTP1.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch o.HTTP2 {
	case "", Auto, On, Off:
	default:
		errs = append(errs, fmt.Errorf("--http2: want auto, on or off, got %q", o.HTTP2))
	}
	if o.H2C && o.HTTP2 == Off {
		errs = append(errs, errors.New("--h2c and --http2 off: cleartext HTTP/2 is HTTP/2; drop one"))
	}
	return errors.Join(errs...)
}

// Transport is the transport.Transport that speaks HTTP/2 where it can
// and HTTP/1.1 elsewhere.
type Transport struct {
	h1   *http1.Transport
	mode string
	h2c  bool
	// offer says that TLS handshakes offer h2: On, or Auto with HTTP/2 or
	// gRPC pairs in the file. Set by Check, before any client is made.
	offer bool
	// Copied from the HTTP/1.1 options, defaults filled.
	maxBody, maxHeader int
	discard, timings   bool
	noReuse            bool // --no-connection-reuse: a connection per request
}

var _ transport.Transport = (*Transport)(nil)

// New validates o and builds the transport (reading the TLS files).
func New(o Options) (*Transport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	h1, err := http1.New(o.HTTP1)
	if err != nil {
		return nil, err
	}
	t := &Transport{h1: h1, mode: o.HTTP2, h2c: o.H2C, discard: o.HTTP1.DiscardBodies, timings: o.HTTP1.Timings, noReuse: o.HTTP1.NoConnectionReuse}
	if t.mode == "" {
		t.mode = Auto
	}
	t.offer = t.mode == On
	t.maxBody, t.maxHeader = o.HTTP1.MaxBody, o.HTTP1.MaxHeaderBytes
	if t.maxBody == 0 {
		t.maxBody = http1.DefaultMaxBody
	}
	if t.maxHeader == 0 {
		t.maxHeader = http1.DefaultMaxHeaderBytes
	}
	return t, nil
}

// Check implements transport.Transport. Beyond the HTTP/1.1 transport's
// check, it reads every pair once: a gRPC pair that could not go out as
// HTTP/2 (--http2 off, or an http:// destination without --h2c) refuses
// the run, naming the flag; and with --http2 auto, HTTP/2 or gRPC pairs
// have TLS handshakes offer h2.
func (t *Transport) Check(f *rrpair.File) error {
	if err := t.h1.Check(f); err != nil {
		return err
	}
	if t.mode == On && t.h2c {
		return nil // every request may go as HTTP/2: nothing to learn
	}
	cur := f.NewCursor()
	var p rrpair.Pair
	h2 := false
	for i := range f.Len() {
		if err := cur.Decode(i, &p); err != nil {
			return err
		}
		h2 = h2 || p.IsHTTP2()
		if !p.IsGRPC() {
			continue
		}
		h2 = true
		https, addr, _ := t.h1.Destination(&p.Req)
		switch {
		case t.mode == Off:
			return fmt.Errorf("%s:%d: a gRPC call, which only HTTP/2 carries, and --http2 off: drop --http2 off", f.Name(), p.Line)
		case !https && !t.h2c:
			return fmt.Errorf("%s:%d: a gRPC call to http://%s, which needs cleartext HTTP/2: add --h2c (or give an https --target)", f.Name(), p.Line, addr)
		}
	}
	t.offer = t.mode == On || t.mode == Auto && h2
	return nil
}

// NewClient implements transport.Transport.
func (t *Transport) NewClient(vu int, now func() int64) transport.Client {
	return newClient(t, now)
}

// AppendWire implements transport.Transport: a request that would go as
// HTTP/2 (cleartext with --h2c, over TLS when h2 is offered and the SUT
// takes it, a gRPC call) is shown as its header list, one "name: value"
// line each, a blank line, then the body; any other as HTTP/1.1 writes it.
func (t *Transport) AppendWire(dst []byte, req *rrpair.Request) (string, []byte) {
	https, addr, host := t.h1.Destination(req)
	if !t.speaks2(https, rrpair.IsGRPC(req.Headers)) {
		return t.h1.AppendWire(dst, req)
	}
	var fs fieldList
	fs.build(req, https, host)
	for _, f := range fs.fields {
		dst = append(dst, f.name...)
		dst = append(dst, ": "...)
		dst = append(dst, f.value...)
		dst = append(dst, '\n')
	}
	dst = append(dst, '\n')
	return addr, append(dst, req.Body...)
}

// speaks2 says whether a request may go as HTTP/2: cleartext with --h2c,
// over TLS when handshakes offer h2; a gRPC call always tries.
func (t *Transport) speaks2(https, grpc bool) bool {
	if https {
		return t.offer || grpc && t.mode != Off
	}
	return t.h2c
}
