// Package negotiate is the protocol choice of the transport, and the
// transport.Transport a run builds: each VU has one conn.Line (one
// connection at a time, whatever its protocol) with an HTTP/1.1 and an
// HTTP/2 client on it, and each request goes in the protocol its
// connection speaks: HTTP/2 where ALPN chose "h2" or --h2c says so by
// prior knowledge, HTTP/1.1 elsewhere (a TLS connection that negotiated
// HTTP/1.1 goes on with HTTP/1.1). It decides what a TLS handshake offers
// (--http2 auto|on|off, reading the file once), refuses before traffic a
// gRPC call that could not go as HTTP/2, sends again, once and on a new
// connection, a request the SUT declared unprocessed, and shows a dry
// run each request as it would go. When nothing may go as HTTP/2 a
// request goes straight to the HTTP/1.1 client.
package negotiate

import (
	"errors"
	"fmt"
	"sync"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/http1"
	"github.com/replay-dev/replay/pkg/transport/http2"
)

// The values of --http2.
const (
	Auto = "auto" // offer h2 over TLS when the file holds HTTP/2 or gRPC pairs
	On   = "on"   // always offer h2 over TLS
	Off  = "off"  // never: HTTP/1.1 only
)

// Options configure the transport: the connection layer's options, what
// is kept of an answer, and which protocol to speak.
type Options struct {
	Conn   conn.Options
	Answer transport.AnswerOptions
	// HTTP2 is Auto (or ""), On or Off: whether a TLS handshake offers
	// "h2" by ALPN.
	HTTP2 string
	// H2C speaks cleartext HTTP/2 with prior knowledge to http:// targets.
	H2C bool
	// Streams, above 1, has that many VUs share each HTTP/2 connection,
	// each with its one stream open on it (http2.Shared); 0 or 1, each VU
	// has a connection of its own.
	Streams int
}

// Validate checks o without reading any file or changing o. Its errors
// name the flag a user would fix.
func (o *Options) Validate() error {
	errs := []error{o.Conn.Validate(), o.Answer.Validate()}
	switch o.HTTP2 {
	case "", Auto, On, Off:
	default:
		errs = append(errs, fmt.Errorf("--http2: want auto, on or off, got %q", o.HTTP2))
	}
	if o.H2C && o.HTTP2 == Off {
		errs = append(errs, errors.New("--h2c and --http2 off: cleartext HTTP/2 is HTTP/2; drop one"))
	}
	switch {
	case o.Streams < 0:
		errs = append(errs, fmt.Errorf("--streams: want 1 or more VUs to a connection, got %d", o.Streams))
	case o.Streams > 1 && o.HTTP2 == Off:
		errs = append(errs, errors.New("--streams and --http2 off: VUs share HTTP/2 connections only; drop one"))
	case o.Streams > 1 && o.Conn.NoConnectionReuse:
		errs = append(errs, errors.New("--streams and --no-connection-reuse: a shared connection carries the requests of several VUs; drop one"))
	}
	return errors.Join(errs...)
}

// Transport is the transport.Transport that speaks HTTP/2 where it can
// and HTTP/1.1 elsewhere.
type Transport struct {
	d       *conn.Dialer
	a       transport.AnswerOptions // defaults filled
	noReuse bool                    // --no-connection-reuse
	mode    string
	h2c     bool
	// offer says that TLS handshakes offer h2: On, or Auto with HTTP/2 or
	// gRPC pairs in the file. Set by Check, before any client is made.
	offer bool
	// What a connection may speak: offering h2 by ALPN, or not; either
	// way cleartext HTTP/2 with --h2c, and an HTTP/2 connection settled by
	// its client rather than probed.
	offering, plain conn.Protocols

	// streams is --streams (at least 1); groups are the shared
	// connections of its groups of VUs, by vu/streams.
	streams  int
	groupsMu sync.Mutex
	groups   map[int]*http2.Shared
}

var _ transport.Transport = (*Transport)(nil)

// alpnH2 is what a TLS handshake offers when HTTP/2 may be spoken.
var alpnH2 = []string{http2.Proto, "http/1.1"}

// New validates o (Validate), reads its TLS files, fills its defaults and
// builds the transport.
func New(o Options) (*Transport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	d, err := conn.New(o.Conn)
	if err != nil {
		return nil, err
	}
	t := &Transport{d: d, a: o.Answer.WithDefaults(), noReuse: o.Conn.NoConnectionReuse, mode: o.HTTP2, h2c: o.H2C,
		streams: max(o.Streams, 1), groups: make(map[int]*http2.Shared)}
	if t.mode == "" {
		t.mode = Auto
	}
	t.offer = t.mode == On
	t.plain.Settles = http2.Proto
	if t.h2c {
		t.plain.Cleartext = http2.Proto
	}
	t.offering = t.plain
	t.offering.ALPN = alpnH2
	return t, nil
}

// Check implements transport.Transport. Beyond the connection layer's
// check (conn.Dialer.Check), it reads every pair once: a gRPC pair that
// could not go out as HTTP/2 (--http2 off, or an http:// destination
// without --h2c) refuses the run, naming the flag; and with --http2 auto,
// HTTP/2 or gRPC pairs have TLS handshakes offer h2.
func (t *Transport) Check(f *rrpair.File) error {
	if err := t.d.Check(f); err != nil {
		return err
	}
	if t.streams > 1 {
		if err := t.checkShared(f); err != nil {
			return err
		}
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
		r := t.d.Route(&p.Req)
		switch {
		case t.mode == Off:
			return fmt.Errorf("%s:%d: a gRPC call, which only HTTP/2 carries, and --http2 off: drop --http2 off", f.Name(), p.Line)
		case !r.HTTPS && !t.h2c:
			return fmt.Errorf("%s:%d: a gRPC call to http://%s, which needs cleartext HTTP/2: add --h2c (or give an https --target)", f.Name(), p.Line, r.Addr)
		}
	}
	t.offer = t.mode == On || t.mode == Auto && h2
	return nil
}

// checkShared refuses, before traffic, a file whose requests --streams
// could not share connections for: one that would not go as HTTP/2 (an
// http:// destination without --h2c), or requests to more than one place
// (a shared connection goes to one). A WebSocket session goes as HTTP/1.1
// on its VU's own connection, as without --streams.
func (t *Transport) checkShared(f *rrpair.File) error {
	cur := f.NewCursor()
	var p rrpair.Pair
	var first conn.Route
	firstLine := 0
	for i := range f.Len() {
		if err := cur.Decode(i, &p); err != nil {
			return err
		}
		if p.WebSocketRaw != nil {
			continue
		}
		r := t.d.Route(&p.Req)
		switch {
		case !r.HTTPS && !t.h2c:
			return fmt.Errorf("%s:%d: --streams %d shares HTTP/2 connections, and this request goes to http://%s: add --h2c (the SUT must speak cleartext HTTP/2), or give an https --target", f.Name(), p.Line, t.streams, r.Addr)
		case firstLine == 0:
			first, firstLine = r, p.Line
		case r.Addr != first.Addr || r.HTTPS != first.HTTPS:
			return fmt.Errorf("%s:%d: --streams %d shares a connection to one place, and this request goes to %s where line %d's goes to %s: give one --target", f.Name(), p.Line, t.streams, r.Addr, firstLine, first.Addr)
		}
	}
	return nil
}

// NewClient implements transport.Transport. With --streams N, VU vu
// shares the connection of its group, vu/N.
func (t *Transport) NewClient(vu int, now func() int64) transport.Client {
	l := t.d.NewLine(now)
	c := &client{t: t, now: now, line: l, h1: http1.NewClient(l, t.a)}
	if t.streams > 1 {
		c.member = t.join(vu/t.streams, now)
	}
	return c
}

// join makes a Member of group g's shared connection, a new one when
// the group has none, or one that is over.
func (t *Transport) join(g int, now func() int64) *http2.Member {
	t.groupsMu.Lock()
	defer t.groupsMu.Unlock()
	if s := t.groups[g]; s != nil {
		if m := s.Join(); m != nil {
			return m
		}
	}
	s := http2.NewShared(t.d, t.a, now)
	t.groups[g] = s
	return s.Join()
}

// AppendWire implements transport.Transport: a request that would go as
// HTTP/2 (cleartext with --h2c, over TLS when h2 is offered and the SUT
// takes it, a gRPC call) is shown as its header list, one "name: value"
// line each, a blank line, then the body (http2.AppendRequest); any other
// as HTTP/1.1 writes it (http1.AppendRequest).
func (t *Transport) AppendWire(dst []byte, req *rrpair.Request) (string, []byte) {
	r := t.d.Route(req)
	if t.speaks2(r.HTTPS, rrpair.IsGRPC(req.Headers)) {
		return r.Addr, http2.AppendRequest(dst, req, r.HTTPS, r.Host)
	}
	return r.Addr, http1.AppendRequest(dst, req, r.Host, t.noReuse)
}

// speaks2 says whether a request may go as HTTP/2: cleartext with --h2c,
// over TLS when handshakes offer h2 (always under --streams); a gRPC call
// always tries.
func (t *Transport) speaks2(https, grpc bool) bool {
	if https {
		return t.offer || t.streams > 1 || grpc && t.mode != Off
	}
	return t.h2c
}
