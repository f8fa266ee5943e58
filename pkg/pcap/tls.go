package pcap

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// TLS record content types and handshake message types.
const (
	recChangeCipherSpec = 20
	recAlert            = 21
	recHandshake        = 22
	recApplicationData  = 23

	hsClientHello         = 1
	hsServerHello         = 2
	hsNewSessionTicket    = 4
	hsEncryptedExtensions = 8
	hsFinished            = 20
	hsKeyUpdate           = 24

	extServerName        = 0
	extALPN              = 16
	extEncryptThenMAC    = 22
	extSessionTicket     = 35
	extSupportedVersions = 43

	// maxRecord is the largest record body TLS allows (2^14 plus
	// TLS 1.2's expansion).
	maxRecord = 1<<14 + 2048
	// maxTLSWait bounds the client's records kept while the server's
	// hello has not come, and a handshake message under way.
	maxTLSWait = 1 << 20
	// maxTLSSessions bounds the TLS 1.2 sessions kept for resumption.
	maxTLSSessions = 1 << 16
)

// hrrRandom is the ServerHello random of a HelloRetryRequest (RFC 8446
// §4.1.3).
var hrrRandom, _ = hex.DecodeString("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")

// tlsConn decrypts a TLS connection with the secrets of a key log (the
// client's SSLKEYLOGFILE): it reads the ClientHello (client random, SNI,
// ALPN offered) and the ServerHello (version, cipher suite, server random;
// TLS 1.2's ALPN), takes each direction's records, decrypts them from its
// change of keys (TLS 1.3: the handshake secrets until its Finished, then
// the traffic secrets, KeyUpdate followed; the chosen ALPN from the
// EncryptedExtensions), and passes the application data on to HTTP/1.x or
// HTTP/2 as ALPN says. A connection it cannot decrypt is counted and
// skipped, naming why; none is guessed at.
type tlsConn struct {
	c    *conn
	side [2]tlsSide // the client's, the server's

	clientRandom []byte // from the ClientHello; nil until it came
	sessionID    []byte // the client's
	ticket       []byte // the session ticket the client offered (TLS 1.2 resumption)
	sni          string
	offered      []string // ALPN

	helloDone    bool // the ServerHello came
	serverRandom []byte
	version      uint16
	suite        *tlsSuite
	alpn         string
	master       []byte // TLS 1.2
	serverID     []byte // the session ID the server gave (TLS 1.2)
	resumed      bool   // its master secret is a resumed session's

	started bool // application data went to HTTP
	failed  bool
}

// tlsSide is one direction of a TLS connection.
type tlsSide struct {
	client bool
	buf    []byte // a record under way
	bufTS  int64
	bufAt  place
	hs     []byte   // handshake messages under way
	keys   *tlsKeys // nil: its records are in the clear
	next   *tlsKeys // TLS 1.2: the keys from its change_cipher_spec
	// TLS 1.3: the secret of the keys in use (for KeyUpdate), and the
	// traffic secret that follows its Finished.
	secret, traffic []byte
	finished        bool
	plain           []byte // scratch: a record decrypted
	wait            []tlsRecord
	waited          int
	lost            bool
}

// tlsRecord is a record kept until the server's hello comes.
type tlsRecord struct {
	b  []byte
	ts int64
	at place
}

func newTLS(c *conn) *tlsConn {
	t := &tlsConn{c: c}
	t.side[0].client = true
	return t
}

func (t *tlsConn) tls13() bool { return t.version == 0x0304 }

// dir is the connection's direction of a side.
func (t *tlsConn) dir(s *tlsSide) int {
	if s.client {
		return t.c.client
	}
	return 1 - t.c.client
}

// who names a side in messages.
func who(s *tlsSide) string {
	if s.client {
		return "client's"
	}
	return "server's"
}

// data takes the bytes of a side, in order.
func (t *tlsConn) data(client bool, b []byte, ts int64, at place) {
	s := &t.side[1]
	if client {
		s = &t.side[0]
	}
	for len(b) > 0 && !t.failed && !s.lost {
		if len(s.buf) == 0 {
			if len(b) >= 5 { // a whole record in b: read in place
				if n := 5 + int(binary.BigEndian.Uint16(b[3:5])); len(b) >= n {
					t.record(s, b[:n], ts, at)
					b = b[n:]
					continue
				}
			}
			s.bufTS, s.bufAt = ts, at
		}
		need := 5
		if len(s.buf) >= 5 {
			need += int(binary.BigEndian.Uint16(s.buf[3:5]))
		}
		k := min(need-len(s.buf), len(b))
		s.buf = append(s.buf, b[:k]...)
		t.c.hold(k)
		b = b[k:]
		if len(s.buf) >= 5 && len(s.buf) == 5+int(binary.BigEndian.Uint16(s.buf[3:5])) {
			rec := s.buf // read before this side's next bytes come
			s.buf = s.buf[:0]
			t.c.hold(-len(rec))
			t.record(s, rec, s.bufTS, s.bufAt)
		}
	}
}

// record takes one whole record of a side.
func (t *tlsConn) record(s *tlsSide, rec []byte, ts int64, at place) {
	typ, body := rec[0], rec[5:]
	if typ < recChangeCipherSpec || typ > 24 || rec[1] != 3 || len(body) > maxRecord {
		t.fail(at, fmt.Sprintf("its %s bytes are not a TLS record where one was due (% x)", who(s), rec[:5]))
		return
	}
	if t.clientRandom == nil && !(s.client && typ == recHandshake) {
		t.fail(at, "its ClientHello was not captured (the capture joined the connection after it): without its client random no key can be found")
		return
	}
	if s.client && !t.helloDone && t.clientRandom != nil {
		t.waitHello(s, rec, ts, at)
		return
	}
	if s.keys != nil && (typ == recApplicationData || !t.tls13()) {
		ptyp, plain, err := s.keys.open(s.plain[:0], rec[:5], body)
		if err != nil {
			t.fail(at, fmt.Sprintf("a record of its %s cannot be decrypted with the key log's secrets: %v", who(s), err))
			return
		}
		s.plain = plain
		typ, body = ptyp, plain
	}
	t.plainRecord(s, typ, body, ts, at)
}

// waitHello keeps a record the client sent after its hello until the
// server's hello, which says how to read it, comes.
func (t *tlsConn) waitHello(s *tlsSide, rec []byte, ts int64, at place) {
	s.waited += len(rec)
	if s.waited > maxTLSWait {
		t.fail(at, fmt.Sprintf("the client sent over %d bytes before the server's hello came", maxTLSWait))
		return
	}
	s.wait = append(s.wait, tlsRecord{append([]byte(nil), rec...), ts, at})
	t.c.hold(len(rec))
}

// plainRecord takes a record of a side in the clear (decrypted, or sent
// before its keys): a change of keys, handshake messages or application
// data.
func (t *tlsConn) plainRecord(s *tlsSide, typ byte, body []byte, ts int64, at place) {
	switch typ {
	case recChangeCipherSpec:
		// TLS 1.3 sends it only for middleboxes (after a
		// HelloRetryRequest too): nothing changes.
		if !t.tls13() && s.keys == nil {
			if s.next == nil {
				t.fail(at, fmt.Sprintf("its %s change_cipher_spec came before the ServerHello", who(s)))
				return
			}
			s.keys = s.next
		}
	case recHandshake:
		t.handshake(s, body, at)
	case recApplicationData:
		if s.keys == nil {
			t.fail(at, fmt.Sprintf("its %s application data came before its keys", who(s)))
			return
		}
		t.app(s, body, ts, at)
	}
}

// handshake takes handshake bytes of a side (in the clear or decrypted)
// and reads the messages they complete.
func (t *tlsConn) handshake(s *tlsSide, b []byte, at place) {
	if len(s.hs)+len(b) > maxTLSWait {
		t.fail(at, fmt.Sprintf("a handshake message of its %s over %d bytes", who(s), maxTLSWait))
		return
	}
	s.hs = append(s.hs, b...)
	t.c.hold(len(b))
	for len(s.hs) >= 4 && !t.failed {
		n := 4 + (int(s.hs[1])<<16 | int(s.hs[2])<<8 | int(s.hs[3]))
		if len(s.hs) < n {
			return
		}
		msg := s.hs[:n]
		s.hs = s.hs[n:]
		t.c.hold(-n)
		t.message(s, msg[0], msg[4:], at)
	}
	if len(s.hs) == 0 {
		s.hs = nil
	}
}

// message reads a handshake message of a side.
func (t *tlsConn) message(s *tlsSide, typ byte, m []byte, at place) {
	switch typ {
	case hsClientHello, hsServerHello, hsNewSessionTicket:
		t.helloMessage(s, typ, m, at)
	default:
		if t.tls13() {
			t.message13(s, typ, m, at)
		}
	}
}

// helloMessage reads the hellos, and TLS 1.2's NewSessionTicket.
func (t *tlsConn) helloMessage(s *tlsSide, typ byte, m []byte, at place) {
	switch {
	case typ == hsClientHello && s.client && t.clientRandom == nil:
		if !t.clientHello(m) {
			t.fail(at, "its ClientHello cannot be read")
		}
	case typ == hsServerHello && !s.client && !t.helloDone:
		t.serverHello(m, at)
	case typ == hsNewSessionTicket && !s.client && !t.tls13():
		t.ticket12(m)
	}
}

// ticket12 remembers the master secret for the session a TLS 1.2
// NewSessionTicket names: sent before the server's Finished, the session
// resumes with it.
func (t *tlsConn) ticket12(m []byte) {
	if r := (reader12{m}); r.skip(4) {
		if tk, ok := r.vec(2); ok && len(tk) > 0 && t.master != nil {
			t.remember("ticket:" + string(tk))
		}
	}
}

// message13 reads TLS 1.3's messages after the hellos: the server's
// EncryptedExtensions, a side's Finished and KeyUpdate.
func (t *tlsConn) message13(s *tlsSide, typ byte, m []byte, at place) {
	switch {
	case typ == hsEncryptedExtensions && !s.client:
		r := reader12{m}
		if exts, ok := r.vec(2); ok {
			t.alpn = alpnOf(extension(exts, extALPN), t.alpn)
		}
	case typ == hsFinished && !s.finished:
		// The traffic secret protects what follows its Finished.
		s.finished = true
		t.rekey(s, s.traffic, at)
	case typ == hsKeyUpdate && s.finished:
		next, err := expandLabel(t.suite.hash, s.secret, "traffic upd", len(s.secret))
		if err != nil {
			t.fail(at, err.Error())
			return
		}
		t.rekey(s, next, at)
	}
}

// rekey protects a side's records from the next one with a TLS 1.3
// traffic secret.
func (t *tlsConn) rekey(s *tlsSide, secret []byte, at place) {
	k, err := newKeys13(t.suite, secret)
	if err != nil {
		t.fail(at, err.Error())
		return
	}
	s.keys, s.secret = k, secret
}

// clientHello reads a ClientHello: its random, session ID, the SNI, the
// ALPN offered, a session ticket.
func (t *tlsConn) clientHello(m []byte) bool {
	r := reader12{m}
	if !r.skip(2) {
		return false
	}
	random, ok1 := r.bytes(32)
	sid, ok2 := r.vec(1)
	_, ok3 := r.vec(2) // cipher suites
	_, ok4 := r.vec(1) // compression methods
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return false
	}
	t.clientRandom, t.sessionID = bytes.Clone(random), bytes.Clone(sid)
	exts, _ := r.vec(2)
	if sn := (reader12{extension(exts, extServerName)}); len(sn.b) > 0 {
		if list, ok := sn.vec(2); ok {
			l := reader12{list}
			for len(l.b) >= 3 {
				typ, _ := l.bytes(1)
				name, ok := l.vec(2)
				if !ok {
					break
				}
				if typ[0] == 0 {
					t.sni = string(name)
					break
				}
			}
		}
	}
	if a := (reader12{extension(exts, extALPN)}); len(a.b) > 0 {
		if list, ok := a.vec(2); ok {
			l := reader12{list}
			for len(l.b) > 0 {
				p, ok := l.vec(1)
				if !ok {
					break
				}
				t.offered = append(t.offered, string(p))
			}
		}
	}
	t.ticket = bytes.Clone(extension(exts, extSessionTicket))
	return true
}

// serverHello reads the ServerHello, finds the connection's secrets and
// reads the client's records that waited for it.
func (t *tlsConn) serverHello(m []byte, at place) {
	r := reader12{m}
	version, ok1 := r.bytes(2)
	random, ok2 := r.bytes(32)
	sid, ok3 := r.vec(1)
	suite, ok4 := r.bytes(2)
	if !ok1 || !ok2 || !ok3 || !ok4 || !r.skip(1) {
		t.fail(at, "its ServerHello cannot be read")
		return
	}
	exts, _ := r.vec(2)
	t.version = binary.BigEndian.Uint16(version)
	if v := extension(exts, extSupportedVersions); len(v) == 2 {
		t.version = binary.BigEndian.Uint16(v)
	}
	if bytes.Equal(random, hrrRandom) {
		return // a HelloRetryRequest: the client says hello again, with the same random
	}
	if !t.takeSuite(binary.BigEndian.Uint16(suite), exts, at) {
		return
	}
	t.helloDone, t.serverRandom = true, bytes.Clone(random)
	if !t.tls13() {
		t.alpn = alpnOf(extension(exts, extALPN), "")
		t.serverID = bytes.Clone(sid)
	}
	if !t.keysFor(at) {
		return
	}
	t.readWaiting()
}

// takeSuite takes the ServerHello's cipher suite id, if it is one
// decrypted for the connection's version and extensions; it fails the
// connection otherwise.
func (t *tlsConn) takeSuite(id uint16, exts []byte, at place) bool {
	t.suite = tlsSuites[id]
	switch {
	case t.version < 0x0303 || t.version > 0x0304:
		t.fail(at, fmt.Sprintf("its version is 0x%04x: only TLS 1.2 and 1.3 are decrypted", t.version))
		return false
	case t.suite == nil:
		t.fail(at, fmt.Sprintf("its cipher suite 0x%04x is not one decrypted (TLS 1.3's three; TLS 1.2's AES-GCM, ChaCha20-Poly1305 and AES-CBC)", id))
		return false
	case t.suite.tls13 != t.tls13():
		t.fail(at, fmt.Sprintf("its cipher suite %s is not one of its version", t.suite.name))
		return false
	case !t.tls13() && t.suite.cipher == cipherCBC && extension(exts, extEncryptThenMAC) != nil:
		t.fail(at, fmt.Sprintf("its cipher suite %s with encrypt_then_mac is not decrypted", t.suite.name))
		return false
	}
	return true
}

// readWaiting reads the client's records that waited for the server's
// hello.
func (t *tlsConn) readWaiting() {
	cs := &t.side[0]
	waiting := cs.wait
	cs.wait, cs.waited = nil, 0
	for _, w := range waiting {
		t.c.hold(-len(w.b))
		if !t.failed {
			t.record(cs, w.b, w.ts, w.at)
		}
	}
}

// keysFor finds the connection's secrets in the key log (TLS 1.2: or
// those of the session it resumes) and makes its keys; false, counted,
// when there are none.
func (t *tlsConn) keysFor(at place) bool {
	sec := t.c.a.opt.KeyLog.lookup(t.clientRandom)
	cs, ss := &t.side[0], &t.side[1]
	if t.tls13() {
		var missing []string
		for _, x := range []struct {
			b    []byte
			name string
		}{{sec.get(0), "CLIENT_HANDSHAKE_TRAFFIC_SECRET"}, {sec.get(1), "SERVER_HANDSHAKE_TRAFFIC_SECRET"}, {sec.get(2), "CLIENT_TRAFFIC_SECRET_0"}, {sec.get(3), "SERVER_TRAFFIC_SECRET_0"}} {
			if x.b == nil {
				missing = append(missing, x.name)
			}
		}
		if len(missing) > 0 {
			t.noKey(at, strings.Join(missing, ", "))
			return false
		}
		cs.traffic, ss.traffic = sec.clientTraffic, sec.serverApp
		t.rekey(cs, sec.clientHS, at)
		t.rekey(ss, sec.serverHS, at)
		return !t.failed
	}
	t.master = sec.get(4)
	if t.master == nil && len(t.serverID) > 0 && bytes.Equal(t.serverID, t.sessionID) {
		t.master, t.resumed = t.c.a.tlsSessions["id:"+string(t.serverID)], true
	}
	if t.master == nil && len(t.ticket) > 0 {
		t.master, t.resumed = t.c.a.tlsSessions["ticket:"+string(t.ticket)], true
	}
	if t.master == nil {
		t.noKey(at, "CLIENT_RANDOM")
		return false
	}
	if len(t.serverID) > 0 {
		t.remember("id:" + string(t.serverID))
	}
	client, server, err := keyBlock12(t.suite, t.master, t.clientRandom, t.serverRandom)
	if err != nil {
		t.fail(at, err.Error())
		return false
	}
	cs.next, ss.next = client, server
	return true
}

// remember keeps the master secret of a TLS 1.2 session, for the
// connections that resume it (by session ID or ticket).
func (t *tlsConn) remember(key string) {
	a := t.c.a
	if a.tlsSessions == nil || len(a.tlsSessions) >= maxTLSSessions {
		// Bounded: past it, the sessions kept so far are forgotten (a
		// connection resuming one of them is then counted, without key).
		a.tlsSessions = map[string][]byte{}
	}
	a.tlsSessions[key] = t.master
}

// noKey counts a connection whose secrets the key log lacks.
func (t *tlsConn) noKey(at place, labels string) {
	t.fail(at, fmt.Sprintf("no key in the key log (%s for client random %x)", labels, t.clientRandom))
}

// app passes a side's application data on to HTTP, as ALPN says.
func (t *tlsConn) app(s *tlsSide, b []byte, ts int64, at place) {
	if len(b) == 0 {
		return
	}
	c := t.c
	if !t.started {
		t.started = true
		c.a.out.st.TLS++
		switch {
		case t.alpn == "h2" || t.alpn == "" && s.client && bytes.HasPrefix(b, []byte(preface)):
			c.start(sawH2, true)
		case t.alpn == "" || t.alpn == "http/1.1" || t.alpn == "http/1.0":
			c.start(sawH1, true)
		default:
			c.proto = [2]proto{protoNone, protoNone}
			c.a.out.skip(at, "not-http", fmt.Sprintf("a TLS connection to %s%s whose ALPN is %q", c.server(), t.sniNote(), t.alpn), false)
		}
	}
	c.plain(t.dir(s), b, true, ts, at)
}

// gap takes bytes of a side the capture lost: its records cannot be
// framed from there.
func (t *tlsConn) gap(client bool, n int, kind string, at place) {
	s := &t.side[1]
	if client {
		s = &t.side[0]
	}
	if t.failed || s.lost {
		return
	}
	if !t.started {
		t.fail(at, fmt.Sprintf("its %s handshake is cut: %s", who(s), lostBytes(n, kind, at)))
		return
	}
	s.lost = true
	t.c.hold(-len(s.buf) - len(s.hs))
	s.buf, s.hs = nil, nil
	t.c.gapPlain(t.dir(s), n, kind, at)
	t.c.a.out.skip(at, kind, fmt.Sprintf("the %s records of a TLS connection to %s%s: %s; the rest of them cannot be decrypted", who(s), t.c.server(), t.sniNote(), lostBytes(n, kind, at)), true)
}

// finish says, once the connection ended, why a connection whose
// handshake began was not decrypted.
func (t *tlsConn) finish() {
	if t.failed || t.started || t.clientRandom == nil {
		return
	}
	at := t.c.first
	switch {
	case !t.helloDone && len(t.side[0].wait) > 0:
		t.fail(t.side[0].wait[0].at, "the server's hello was not captured")
	case !t.helloDone:
		t.c.a.out.st.TLSPorts[t.c.server().Port()]++
		t.c.a.out.skip(at, "tls", fmt.Sprintf("a TLS connection to %s%s: its handshake did not end in the capture", t.c.server(), t.sniNote()), false)
	}
}

// shed gives up the records under way to keep within --max-buffer.
func (t *tlsConn) shed() {
	if len(t.side[0].wait) > 0 {
		t.fail(t.side[0].wait[0].at, fmt.Sprintf("its records waiting for the server's hello were given up to keep within --max-buffer (%d bytes)", t.c.a.opt.MaxBuffer))
		return
	}
	for i := range t.side {
		s := &t.side[i]
		if len(s.buf) > 0 && !t.failed {
			t.gap(s.client, len(s.buf), "buffer", s.bufAt)
		}
	}
}

// fail gives the connection up: counted and skipped, naming why.
func (t *tlsConn) fail(at place, why string) {
	if t.failed {
		return
	}
	t.failed = true
	c := t.c
	for i := range t.side {
		s := &t.side[i]
		n := len(s.buf) + len(s.hs)
		for _, w := range s.wait {
			n += len(w.b)
		}
		c.hold(-n)
		s.buf, s.hs, s.wait, s.keys, s.next = nil, nil, nil, nil, nil
	}
	c.proto = [2]proto{protoNone, protoNone}
	c.a.out.st.TLSPorts[c.server().Port()]++
	c.a.out.skip(at, "tls", fmt.Sprintf("a TLS connection to %s%s: %s", c.server(), t.sniNote(), why), true)
}

// sniNote is " (SNI api.example)", or "" without one.
func (t *tlsConn) sniNote() string {
	if t.sni == "" {
		return ""
	}
	return " (SNI " + t.sni + ")"
}

// get is one of the secrets: 0..3 TLS 1.3's client and server handshake,
// client and server traffic secrets; 4 TLS 1.2's master secret.
func (s *secrets) get(i int) []byte {
	if s == nil {
		return nil
	}
	return [][]byte{s.clientHS, s.serverHS, s.clientTraffic, s.serverApp, s.master}[i]
}

// alpnOf reads the protocol an ALPN extension (its body) chose, or def.
func alpnOf(ext []byte, def string) string {
	r := reader12{ext}
	list, ok := r.vec(2)
	if !ok {
		return def
	}
	l := reader12{list}
	if p, ok := l.vec(1); ok {
		return string(p)
	}
	return def
}

// extension is the body of the extension typ in a list of extensions, or
// nil.
func extension(exts []byte, typ uint16) []byte {
	r := reader12{exts}
	for len(r.b) >= 4 {
		t, _ := r.bytes(2)
		body, ok := r.vec(2)
		if !ok {
			return nil
		}
		if binary.BigEndian.Uint16(t) == typ {
			if body == nil {
				return []byte{}
			}
			return body
		}
	}
	return nil
}

// reader12 reads the fields of a handshake message.
type reader12 struct{ b []byte }

func (r *reader12) bytes(n int) ([]byte, bool) {
	if len(r.b) < n {
		return nil, false
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out, true
}

func (r *reader12) skip(n int) bool {
	_, ok := r.bytes(n)
	return ok
}

// vec reads a vector whose length takes n bytes (1, 2 or 3).
func (r *reader12) vec(n int) ([]byte, bool) {
	l, ok := r.bytes(n)
	if !ok {
		return nil, false
	}
	size := 0
	for _, c := range l {
		size = size<<8 | int(c)
	}
	return r.bytes(size)
}
