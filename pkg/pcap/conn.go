package pcap

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
)

// proto is what a side of a connection speaks, as far as the importer
// knows.
type proto int

const (
	protoUnknown proto = iota // not yet seen
	protoH1                   // HTTP/1.x
	protoH2                   // HTTP/2, cleartext
	protoNone                 // nothing more to read: TLS, not HTTP, upgraded, or not the service's
	protoTLS                  // TLS, decrypted with the key log (the plaintext's protocol follows)
	protoWS                   // a WebSocket session after its upgrade (Options.WebSockets)
)

// probeMax bounds the first bytes of a side kept while its protocol is
// unknown.
const probeMax = 16 << 10

// conn is one TCP connection: its two directions, which side is the
// client, and what they speak.
type conn struct {
	a    *assembler
	key  connKey
	id   int
	half [2]half
	// client is the direction (0: from key.a, 1: from key.b) the client
	// sends in; -1 while unknown.
	client int
	// syn says the handshake was captured: each direction starts at its
	// first byte, so its first bytes tell the protocol; else the capture
	// joined the connection mid-stream and only a segment that begins a
	// message does (midStream: so too after a loss in the first bytes).
	syn, midStream bool
	proto          [2]proto // by direction
	direction      string   // "IN" or "OUT"
	session        string
	first          place // the packet of the first byte of data
	seen           bool  // data was seen
	last           int64 // capture time of the last packet
	closed         bool
	held           int64 // bytes held: segments out of order, messages under way
	probe          [2][]byte
	probeTS        [2]int64
	probeAt        [2]place
	h1             *h1conn
	h2             *h2conn
	ws             *wsconn
	// tl decrypts the connection when it is TLS and a key log was given:
	// its bytes go to it, and its plaintext to h1 or h2.
	tl *tlsConn
}

func newConn(a *assembler, key connKey, id int, at place) *conn {
	c := &conn{a: a, key: key, id: id, client: -1, first: at, session: "c-" + strconv.Itoa(id), midStream: true}
	for d := range c.half {
		c.half[d] = half{c: c, dir: d}
	}
	return c
}

// addr is the address direction dir sends from.
func (c *conn) addr(dir int) netip.AddrPort {
	if dir == 0 {
		return c.key.a
	}
	return c.key.b
}

// server is the server's address: the end the client does not send from
// (while the client is unknown, the end with the lower port).
func (c *conn) server() netip.AddrPort {
	switch {
	case c.client >= 0:
		return c.addr(1 - c.client)
	case c.key.a.Port() <= c.key.b.Port():
		return c.key.a
	}
	return c.key.b
}

// hold counts n more bytes held (less, when n is negative).
func (c *conn) hold(n int) {
	c.held += int64(n)
	c.a.buffered += int64(n)
}

// segment takes a segment of direction dir.
func (c *conn) segment(dir int, s *segment) {
	h := &c.half[dir]
	if s.flags&synFlag != 0 {
		if !c.seen {
			c.syn, c.midStream = true, false
			if s.flags&ackFlag == 0 {
				c.setClient(dir)
			} else {
				c.setClient(1 - dir)
			}
		}
		if !h.started {
			h.isn = s.seq
			h.begin(s.seq + 1)
		}
		s.seq++ // data sent with the SYN follows it
	}
	if s.flags&ackFlag != 0 {
		c.half[1-dir].acked(s.ack)
	}
	if len(s.payload)+s.cut > 0 || s.flags&finFlag != 0 {
		if !h.started {
			h.begin(s.seq)
		}
		h.add(s)
	}
	if s.flags&rstFlag != 0 {
		c.finish(endReset)
		return
	}
	if c.half[0].ended && c.half[1].ended || h.ended && !c.half[1-dir].started {
		c.finish(endFIN)
	}
}

// setClient says which direction the client sends in, and so whether the
// connection is the service's (--service), and which way.
func (c *conn) setClient(dir int) {
	if c.client >= 0 {
		return
	}
	c.client = dir
	c.direction = "IN"
	svcs := c.a.opt.Services
	if len(svcs) == 0 {
		return
	}
	server, client := c.addr(1-dir), c.addr(dir).Addr()
	for _, s := range svcs {
		if s == server {
			return
		}
	}
	for _, s := range svcs {
		if s.Addr() == client {
			c.direction = "OUT"
			return
		}
	}
	c.a.out.st.Elsewhere++
	c.proto = [2]proto{protoNone, protoNone}
}

// data takes bytes of direction dir in order; fresh says they begin a
// segment.
func (c *conn) data(dir int, b []byte, fresh bool, ts int64, at place) {
	if !c.seen {
		c.seen, c.first = true, at
		c.a.out.st.Connections++
	}
	if c.tl != nil {
		c.tl.data(dir == c.client, b, ts, at)
		return
	}
	c.plain(dir, b, fresh, ts, at)
}

// plain takes bytes of direction dir in order, as the application sent
// them (decrypted, on a TLS connection).
func (c *conn) plain(dir int, b []byte, fresh bool, ts int64, at place) {
	switch c.proto[dir] {
	case protoH1:
		c.h1.data(dir == c.client, b, fresh, ts, at)
	case protoH2:
		c.h2.data(dir == c.client, b, ts, at)
	case protoWS:
		c.ws.data(dir == c.client, b, ts)
	case protoUnknown:
		c.detect(dir, b, fresh, ts, at)
	}
}

// gap takes n bytes of direction dir that the capture lost.
func (c *conn) gap(dir, n int, kind string, ts int64, at place) {
	if c.tl != nil {
		c.tl.gap(dir == c.client, n, kind, at)
		return
	}
	if c.proto[dir] == protoUnknown {
		c.gapStart(dir, n, kind, at)
		return
	}
	c.gapPlain(dir, n, kind, at)
}

// gapPlain takes n bytes of direction dir's plaintext that the capture
// lost (on a TLS connection: the records they were in).
func (c *conn) gapPlain(dir, n int, kind string, at place) {
	switch c.proto[dir] {
	case protoH1:
		c.h1.gap(dir == c.client, n, kind, at)
	case protoH2:
		c.h2.gap(dir == c.client, n, kind, at)
	case protoWS:
		c.ws.gap(dir == c.client, n, kind, at)
	}
}

// gapStart takes n bytes lost at the start of direction dir, whose
// protocol is not known yet.
func (c *conn) gapStart(dir, n int, kind string, at place) {
	// The start is lost: what follows is read as if the capture had
	// joined the connection there.
	c.hold(-len(c.probe[dir]))
	c.probe[dir] = nil
	if !c.midStream {
		c.midStream = true
		c.a.out.skip(at, kind, fmt.Sprintf("the first bytes of a connection to %s: %s; read on from the next segment that begins a message", c.server(), lostBytes(n, kind, at)), true)
	}
}

// end takes the end of direction dir.
func (c *conn) end(dir int, why endKind, ts int64) {
	if c.proto[dir] == protoUnknown && len(c.probe[dir]) > 0 {
		c.decide(dir, true)
	}
	switch c.proto[dir] {
	case protoH1:
		c.h1.end(dir == c.client, why, ts)
	case protoH2:
		c.h2.end(dir == c.client, why)
	}
}

// finish ends both directions and writes what the connection still owes:
// the requests still waiting for an answer.
func (c *conn) finish(why endKind) {
	if c.closed {
		return
	}
	for d := range c.half {
		c.half[d].end(why)
	}
	if c.tl != nil {
		c.tl.finish()
	}
	if c.h1 != nil {
		c.h1.close()
	}
	if c.h2 != nil {
		c.h2.close()
	}
	if c.ws != nil {
		c.ws.close()
	}
	c.closed = true
}

// shed gives up what the connection holds to keep within --max-buffer.
func (c *conn) shed() {
	for d := range c.half {
		c.half[d].flushHoles("buffer")
	}
	if c.tl != nil {
		c.tl.shed()
	}
	if c.h1 != nil {
		c.h1.shed()
	}
	if c.h2 != nil {
		c.h2.shed()
	}
	if c.ws != nil {
		c.ws.shed()
	}
	for d := range c.probe {
		c.hold(-len(c.probe[d]))
		c.probe[d] = nil
	}
}

// detect reads the first bytes of a connection to tell its protocol.
// With the handshake captured they are the start of the stream, kept
// until they say enough; else only a segment that begins with a message
// (a request or status line, the HTTP/2 preface, a TLS record) is known
// for what it is, and the bytes before it are passed over.
func (c *conn) detect(dir int, b []byte, fresh bool, ts int64, at place) {
	if c.syn && !c.midStream && c.client >= 0 {
		if len(c.probe[dir]) == 0 {
			c.probeTS[dir], c.probeAt[dir] = ts, at
		}
		n := min(len(b), probeMax-len(c.probe[dir]))
		c.probe[dir] = append(c.probe[dir], b[:n]...)
		c.hold(n)
		c.decide(dir, len(c.probe[dir]) >= probeMax)
		return
	}
	if !fresh {
		return
	}
	switch v, client := sniffSegment(b); v {
	case sawH1, sawH2:
		if client {
			c.setClient(dir)
		} else {
			c.setClient(1 - dir)
		}
		if c.proto[dir] == protoNone {
			return
		}
		c.start(v, false)
		c.data(dir, b, fresh, ts, at)
	case sawTLS:
		if client {
			c.setClient(dir)
		}
		c.tls(at)
		if c.tl != nil {
			c.data(dir, b, fresh, ts, at)
		}
	case sawH2Frames:
		c.proto = [2]proto{protoNone, protoNone}
		c.a.out.skip(at, "h2-joined", fmt.Sprintf("HTTP/2 frames on a connection to %s the capture joined mid-connection: its header blocks cannot be decoded without the HPACK state from its start", c.server()), true)
	}
}

// decide tells the protocol from the first bytes of direction dir, when
// they say enough or final says there will be no more.
func (c *conn) decide(dir int, final bool) {
	p := c.probe[dir]
	v := sniffStart(p, dir == c.client)
	if v == sawMore && final {
		v = sawOther
	}
	switch v {
	case sawMore:
		return
	case sawTLS:
		c.tls(c.probeAt[dir])
	case sawOther:
		c.proto = [2]proto{protoNone, protoNone}
		who := "client's"
		if dir != c.client {
			who = "server's (the client sent nothing)"
		}
		c.a.out.skip(c.probeAt[dir], "not-http", fmt.Sprintf("a connection to %s whose %s first bytes are % x (%q)", c.server(), who, p[:min(len(p), 8)], printable(p[:min(len(p), 8)])), false)
	default:
		c.start(v, true)
	}
	// What was kept goes to the protocol now known (the other direction's
	// too, if it spoke first).
	for _, d := range []int{dir, 1 - dir} {
		kept, ts, at := c.probe[d], c.probeTS[d], c.probeAt[d]
		c.hold(-len(kept))
		c.probe[d] = nil
		if len(kept) > 0 && c.proto[d] != protoUnknown {
			c.data(d, kept, true, ts, at)
		}
	}
}

// start sets both directions to the protocol v found; fromStart says the
// streams start at their first byte (else messages are found at segment
// starts).
func (c *conn) start(v saw, fromStart bool) {
	switch v {
	case sawH1:
		c.proto = [2]proto{protoH1, protoH1}
		c.h1 = newH1(c, fromStart)
	case sawH2:
		c.proto = [2]proto{protoH2, protoH2}
		c.h2 = newH2(c)
	}
}

// tls decrypts a TLS connection with the key log (--keylog), or, without
// one, counts and skips it.
func (c *conn) tls(at place) {
	if c.a.opt.KeyLog != nil && c.proto[0] != protoNone {
		c.proto = [2]proto{protoTLS, protoTLS}
		c.tl = newTLS(c)
		if c.client < 0 {
			c.tl.fail(at, "the capture joined it after its handshake: without its ClientHello (the client random) no key can be found")
		}
		return
	}
	c.proto = [2]proto{protoNone, protoNone}
	server := c.server()
	c.a.out.st.TLSPorts[server.Port()]++
	c.a.out.skip(at, "tls", fmt.Sprintf("a TLS connection to %s: give --keylog FILE (the client's SSLKEYLOGFILE) to decrypt it", server), true)
}

// saw is what the first bytes of a side are.
type saw int

const (
	sawMore     saw = iota // not enough bytes to tell
	sawH1                  // an HTTP/1.x request or status line
	sawH2                  // the HTTP/2 client preface
	sawH2Frames            // HTTP/2 frames, mid-connection
	sawTLS                 // a TLS record
	sawOther               // anything else
)

// preface is the HTTP/2 client connection preface (RFC 9113 §3.4).
const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// sniffStart says what the first bytes p of a stream (from the client or
// not) are. A server's first bytes decide only when they are an HTTP/1.x
// answer (a capture of the answers alone) or TLS: an HTTP/2 server may
// speak first (its SETTINGS, before the client's preface), so the client's
// bytes decide.
func sniffStart(p []byte, client bool) saw {
	switch {
	case len(p) == 0:
		return sawMore
	case isTLSRecord(p):
		return sawTLS
	case !client:
		if bytes.HasPrefix(p, []byte("HTTP/1.")) {
			return sawH1
		}
		return sawMore
	case len(p) < len(preface) && bytes.HasPrefix([]byte(preface), p):
		return sawMore
	case bytes.HasPrefix(p, []byte(preface)):
		return sawH2
	}
	p = bytes.TrimLeft(p, "\r\n")
	line, _, found := bytes.Cut(p, []byte("\n"))
	switch {
	case found && requestLine(line):
		return sawH1
	case !found && requestLinePrefix(line):
		return sawMore
	}
	return sawOther
}

// requestLinePrefix says whether b may be the start of a request line:
// a method, a space, a target, a space, the start of "HTTP/1.x".
func requestLinePrefix(b []byte) bool {
	method, rest, ok := bytes.Cut(b, []byte(" "))
	if !tokenPrefix(method) || !ok {
		return tokenPrefix(method) && len(method) > 0
	}
	target, version, ok := bytes.Cut(rest, []byte(" "))
	if bytes.ContainsAny(target, "\r\x00") || len(target) > maxHead {
		return false
	}
	v := "HTTP/1.x"
	return !ok || len(version) <= len(v) && bytes.HasPrefix([]byte(v[:7]), version[:min(len(version), 7)])
}

// sniffSegment says what a segment of a connection joined mid-stream
// begins with, and whether its sender is the client.
func sniffSegment(b []byte) (v saw, client bool) {
	switch {
	case bytes.HasPrefix(b, []byte(preface)):
		return sawH2, true
	case bytes.HasPrefix(b, []byte("HTTP/1.")) && statusLine(b):
		return sawH1, false
	case isTLSRecord(b):
		return sawTLS, b[0] == 0x16 && len(b) > 5 && b[5] == 1 // a ClientHello
	case h2Frames(b):
		return sawH2Frames, false
	}
	if line, _, ok := bytes.Cut(b, []byte("\n")); ok && requestLine(line) {
		return sawH1, true
	}
	return sawMore, false
}

// isTLSRecord says whether b begins a TLS record: a content type
// (change_cipher_spec, alert, handshake, application_data) and version 3.x.
func isTLSRecord(b []byte) bool {
	return len(b) >= 3 && b[0] >= 0x14 && b[0] <= 0x17 && b[1] == 3 && b[2] <= 4
}

// requestLine says whether line (its line end trimmed or not) is an
// HTTP/1.x request line: METHOD SP TARGET SP HTTP/1.x.
func requestLine(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte("\r"))
	method, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(method) == 0 || !tokenPrefix(method) {
		return false
	}
	target, version, ok := bytes.Cut(rest, []byte(" "))
	return ok && len(target) > 0 && len(version) == len("HTTP/1.1") && bytes.HasPrefix(version, []byte("HTTP/1.")) && version[7] >= '0' && version[7] <= '9'
}

// statusLine says whether b begins with an HTTP/1.x status line
// ("HTTP/1.1 200 ...").
func statusLine(b []byte) bool {
	return len(b) >= 12 && b[8] == ' ' && isDigit(b[9]) && isDigit(b[10]) && isDigit(b[11]) && (len(b) == 12 || b[12] == ' ' || b[12] == '\r' || b[12] == '\n')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// tokenPrefix says whether b is made of token characters (a method, so
// far) and not longer than a method is.
func tokenPrefix(b []byte) bool {
	if len(b) > 32 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}

// h2Frames says whether b is one or more whole HTTP/2 frames, each with
// a known type whose stream is one it may be on: a segment of an HTTP/2
// connection the capture joined mid-way.
func h2Frames(b []byte) bool {
	n := 0
	for len(b) > 0 {
		if len(b) < 9 {
			return false
		}
		length := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		typ, stream := b[3], uint32(b[5]&0x7f)<<24|uint32(b[6])<<16|uint32(b[7])<<8|uint32(b[8])
		if b[5]&0x80 != 0 || typ > 9 || length > 1<<14 || len(b) < 9+length {
			return false
		}
		switch typ {
		case 4, 6, 7: // SETTINGS, PING, GOAWAY
			if stream != 0 {
				return false
			}
		case 0, 1, 2, 3, 5, 9:
			if stream == 0 {
				return false
			}
		}
		b = b[9+length:]
		n++
	}
	return n > 0
}
