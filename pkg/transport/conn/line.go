package conn

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Conn is a connection a Line made, as a protocol sees it. The Line keeps
// owning it (it closes, counts and cuts it); the protocol reads and writes
// on NC and sets deadlines on Raw, and reads the other fields only. It is
// the Line's connection until the Line drops it (Drop, Close, or a Connect
// that needs another): a Conn other than the one a protocol last spoke on
// is a new connection.
type Conn struct {
	// Raw is the TCP connection (deadlines), NC the connection to read and
	// write: Raw, or TLS over it.
	Raw, NC net.Conn
	// Proto is the protocol the connection speaks: the one ALPN
	// negotiated, or a cleartext connection's by prior knowledge
	// (Protocols.Cleartext); "" when neither says.
	Proto string
	// Addr is where it goes (host:port); HTTPS says over TLS.
	Addr  string
	HTTPS bool

	opened int64 // Unix ns on the run's clock
	last   int64 // when its last answer ended (Idle; the run's clock)
	// detached: a goroutine other than the VU's may read it (Detach):
	// closed when dropped, never recycled.
	detached bool
	// rc is the TCP connection's raw descriptor, for probeIdle where the
	// platform has a probe; nil otherwise.
	rc syscall.RawConn
}

// Protocols is what a Connect may speak.
type Protocols struct {
	// ALPN are the protocols a TLS handshake offers (such as "h2",
	// "http/1.1"); nil offers none.
	ALPN []string
	// Cleartext is the protocol a new cleartext connection speaks by prior
	// knowledge; "" for none. A kept cleartext connection that speaks
	// another is closed first: protocols do not share a cleartext
	// connection.
	Cleartext string
	// Settles names a protocol whose peer may send on an idle connection
	// (HTTP/2's SETTINGS, PING, GOAWAY) and which reads that itself before
	// it uses the connection (Waiting): a kept connection speaking it is
	// not probed. "" for none.
	Settles string
}

// Line is one VU's connection: at most one at a time, never shared. It is
// used by the VU's goroutine only, except Interrupt, which reaches cut,
// ctx's cancel, the dialer's handshake under way and active.
type Line struct {
	d   *Dialer
	now func() int64 // the run's clock, Unix ns

	// cut is set by Interrupt: every later request is cancelled. ctx is
	// cancelled with it, to cut a resolution or a TLS handshake off; it
	// lives as long as the Line, not one call.
	cut    atomic.Bool
	ctx    context.Context
	cancel context.CancelFunc

	c       *Conn                // current connection, nil when none
	active  atomic.Pointer[Conn] // c, published for Interrupt
	hadConn bool                 // a connection was opened before
	dialer  *tcpDialer
	last    recorded

	// What a failure report needs: where the last Connect went, and why
	// it, or the connection since (Drop), failed.
	addr string
	err  error

	// The idle probe (probeIdle): its callback, bound once, and what it saw.
	peekFn    func(fd uintptr)
	peekState idleState
	peekBuf   [1]byte

	// Exchange's callback, bound once, and its state.
	xchFn func(fd uintptr) bool
	xch   exchange
}

// NewLine makes a VU's Line. now is the run's clock, in Unix nanoseconds,
// that stamps connections and Results.
func (d *Dialer) NewLine(now func() int64) *Line {
	l := &Line{d: d, now: now}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.dialer = newTCPDialer(&l.cut, now)
	l.dialer.allow(d.o.Allow)
	l.peekFn = l.peek
	l.xchFn = l.exchangeStep
	return l
}

// Options are the options of the Line's Dialer, defaults filled.
func (l *Line) Options() Options { return l.d.o }

// Clock is the run's clock the Line was made with.
func (l *Line) Clock() func() int64 { return l.now }

// Route says where req goes. The last recorded host resolved is kept, so
// that a VU replaying one host resolves it once.
func (l *Line) Route(req *rrpair.Request) Route { return l.d.route(req, &l.last) }

// Connect makes sure the Line holds a connection to dst speaking p, and
// returns it. A connection kept from an earlier request is reused while it
// goes to the same place, in the same protocol, is younger than
// --max-conn-duration, and (after it sat idle) the SUT has neither closed
// it nor sent on it unasked (probeIdle, which marks res.Unsolicited).
// Otherwise a new one is dialed (through the --proxy's tunnel), its TLS
// handshake offering p.ALPN: res gets Connected, Reconnect and the connect
// timings. A new plain connection may carry first, a whole request, from
// the moment it is made (tcpDialer.dial; on Linux it then returns once the
// answer has begun to come): sent says how many bytes went, and res.Sent
// is set when some did. The kind is result.ErrNone unless the
// dial or the handshake failed (why in Failure).
func (l *Line) Connect(dst *Route, res *result.Result, p *Protocols, first []byte) (cn *Conn, sent int, kind result.ErrorKind) {
	l.addr, l.err = dst.Addr, nil
	if c := l.kept(dst, res, p); c != nil {
		return c, 0, result.ErrNone
	}
	return l.connectNew(dst, res, p, first)
}

// kept is the connection kept from an earlier request, if it may carry
// this one: it is closed when it goes elsewhere, in another protocol, or
// is too old, and probed when it sat idle (probeIdle).
func (l *Line) kept(dst *Route, res *result.Result, p *Protocols) *Conn {
	if c := l.c; c != nil && l.stale(c, dst, p) {
		l.endConn(true) // idle: it ends cleanly
	}
	if c := l.c; c != nil && (p.Settles == "" || c.Proto != p.Settles) && l.now()-c.last >= int64(idleProbe) {
		l.probeIdle(res)
	}
	return l.c
}

// stale reports a kept connection that may not carry a request to dst in
// p: it goes to another place, or in another protocol, or is older than
// --max-conn-duration.
func (l *Line) stale(c *Conn, dst *Route, p *Protocols) bool {
	o := &l.d.o
	return c.Addr != dst.Addr || c.HTTPS != dst.HTTPS || !dst.HTTPS && c.Proto != p.Cleartext ||
		o.MaxConnDuration > 0 && l.now()-c.opened >= int64(o.MaxConnDuration)
}

// connectNew dials a new connection to dst (Connect's second half) and,
// for https, makes its TLS handshake.
func (l *Line) connectNew(dst *Route, res *result.Result, p *Protocols, first []byte) (cn *Conn, sent int, kind result.ErrorKind) {
	o := &l.d.o
	deadline := time.Now().Add(o.Timeout)
	var t0 int64
	if o.Timings {
		t0 = l.now()
	}
	if dst.HTTPS || l.d.proxy != nil || o.Timings { // Timings keeps connect and send apart
		first = nil
	}
	raw, sent, err := l.dial(dst.Addr, deadline, first)
	if o.Timings {
		res.ConnectNs = l.now() - t0
	}
	if err != nil {
		l.err = err
		if l.cut.Load() {
			return nil, 0, result.ErrCancelled
		}
		return nil, 0, dialKind(err)
	}
	if sent > 0 {
		res.Sent = l.dialer.sentAt
	}
	cn = &Conn{Raw: raw, NC: raw, Addr: dst.Addr, HTTPS: dst.HTTPS, opened: l.now(), rc: rawConn(raw)}
	if dst.HTTPS {
		if kind := l.handshake(cn, dst.name, p.ALPN, deadline); kind != result.ErrNone {
			return nil, 0, kind
		}
		if o.Timings {
			res.TLSNs = l.now() - t0 - res.ConnectNs
		}
	} else {
		cn.Proto = p.Cleartext
	}
	l.established(cn, res)
	return cn, sent, result.ErrNone
}

// established makes cn, connected (TCP, and TLS for https), the Line's
// connection: only now is it a connection.
func (l *Line) established(cn *Conn, res *result.Result) {
	o := &l.d.o
	res.Connected = true
	res.Reconnect = l.hadConn && !o.NoConnectionReuse
	l.hadConn = true
	l.c = cn
	l.active.Store(cn)
	if l.cut.Load() { // Interrupt may have missed this connection
		cn.Raw.SetDeadline(time.Unix(1, 0))
	}
}

// handshake runs the TLS handshake over cn's TCP connection, offering
// alpn, by the deadline or until Interrupt, and returns the error kind of
// a failure (cn closed then).
func (l *Line) handshake(cn *Conn, name string, alpn []string, deadline time.Time) result.ErrorKind {
	tc := l.d.tls.Clone()
	if tc.ServerName == "" { // --server-name overrides the host dialed
		tc.ServerName = name
	}
	tc.NextProtos = alpn
	tlsConn := tls.Client(cn.Raw, tc)
	ctx, cancel := context.WithDeadline(l.ctx, deadline)
	err := tlsConn.HandshakeContext(ctx)
	timedOut := ctx.Err() != nil
	cancel()
	if err != nil {
		l.err = err
		cn.Raw.Close()
		if l.cut.Load() {
			return result.ErrCancelled
		}
		if timedOut {
			return result.ErrTimeout
		}
		// The SUT reached and then gone (an RST, a close) is not a TLS
		// failure.
		if k := KindOf(err); k == result.ErrReset || k == result.ErrEOF {
			return k
		}
		return result.ErrTLS
	}
	cn.NC = tlsConn
	cn.Proto = tlsConn.ConnectionState().NegotiatedProtocol
	return result.ErrNone
}

// dial opens a TCP connection to addr, through the --proxy's CONNECT
// tunnel when there is one (the request then goes through it unchanged,
// origin-form, as it would directly).
func (l *Line) dial(addr string, deadline time.Time, first []byte) (net.Conn, int, error) {
	p := l.d.proxy
	if p == nil {
		return l.dialer.dial(l.ctx, addr, deadline, first)
	}
	nc, _, err := l.dialer.dial(l.ctx, p.addr, deadline, nil)
	if err != nil {
		return nil, 0, err
	}
	if err := tunnel(nc, p, addr, deadline); err != nil {
		nc.Close()
		return nil, 0, err
	}
	return nc, 0, nil
}

// tunnel asks the proxy at the other end of nc for a tunnel to addr.
func tunnel(nc net.Conn, p *proxy, addr string, deadline time.Time) error {
	nc.SetDeadline(deadline)
	req := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n" + p.auth + "\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		return err
	}
	// Read the answer byte by byte up to its blank line, so that nothing
	// of the tunnelled stream is consumed here.
	var head []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if _, err := nc.Read(one); err != nil {
			return err
		}
		if head = append(head, one[0]); len(head) > 16<<10 {
			return errors.New("proxy: CONNECT answer too long")
		}
	}
	if f := bytes.Fields(head); len(f) < 2 || f[1][0] != '2' {
		return fmt.Errorf("proxy: CONNECT %s: %s", addr, bytes.SplitN(head, []byte("\r\n"), 2)[0])
	}
	nc.SetDeadline(time.Time{})
	return nil
}

// Drop closes the connection (after a connection error, a broken answer,
// a GOAWAY), so that the next Connect makes a new one; err, when not nil,
// is what Failure reports.
func (l *Line) Drop(err error) {
	if err != nil {
		l.err = err
	}
	l.endConn(err == nil)
}

// Detach marks cn as read from a goroutine other than the VU's (a
// WebSocket session's reader): when dropped it is closed, which ends a
// read under way, rather than recycled.
func (cn *Conn) Detach() { cn.detached = true }

// Idle records that the connection finished an answer at end (the run's
// clock), for the idle probe's clock.
func (l *Line) Idle(end int64) {
	if l.c != nil {
		l.c.last = end
	}
}

// Cut reports that Interrupt was called: every failure is a cancellation.
func (l *Line) Cut() bool { return l.cut.Load() }

// Arm sets the deadline of the connection for a request begun now
// (--timeout; on Linux moved only when it is nearer, to --timeout and a
// thousandth of it: tcpConn.arm), or after Interrupt one long past, which
// cuts any wait at once. Interrupt is checked after the deadline is set,
// so that one in between is never overwritten.
func (l *Line) Arm() {
	cn := l.c
	if cn == nil {
		return
	}
	if a, ok := cn.Raw.(armer); ok {
		a.arm(l.d.o.Timeout)
	} else {
		cn.Raw.SetDeadline(time.Now().Add(l.d.o.Timeout))
	}
	if l.cut.Load() {
		cn.Raw.SetDeadline(time.Unix(1, 0))
	}
}

// armer is a connection that arms its own deadlines for a request begun
// now, bounded by timeout (the Linux dialer's: tcpConn.arm).
type armer interface{ arm(timeout time.Duration) }

// Kind names why err, a read or a write on the connection, failed
// (KindOf): a cancellation after Interrupt.
func (l *Line) Kind(err error) result.ErrorKind {
	if l.cut.Load() {
		return result.ErrCancelled
	}
	return KindOf(err)
}

// Waiting reports whether the connection has something to read (what the
// SUT sent while it sat idle, or its close), by a non-blocking peek that
// consumes nothing; true where the platform cannot tell.
func (l *Line) Waiting() bool {
	cn := l.c
	if cn == nil {
		return false
	}
	if cn.rc == nil {
		return true
	}
	l.peekState = idleUnknown
	if cn.rc.Control(l.peekFn) != nil {
		return true
	}
	return l.peekState != idleAlive
}

// Failure is what a failure report needs of the connection: where the
// last Connect went, and why it, or the connection since, failed (nil if
// neither did).
func (l *Line) Failure() (addr string, err error) { return l.addr, l.err }

// Interrupt cuts whatever the Line is doing off (resolving, connecting, a
// TLS handshake, a read or a write on its connection), and everything
// after: a connection made later is cut at once, and every failure is
// then a cancellation (Connect's kind, Kind). The hard stop. Safe to call
// from any goroutine, more than once.
func (l *Line) Interrupt() {
	l.cut.Store(true)
	l.cancel()
	l.dialer.interrupt()
	if cn := l.active.Load(); cn != nil {
		cn.Raw.SetDeadline(time.Unix(1, 0))
	}
}

// Close closes the connection and releases what the Line holds, when the
// VU is done: the Line is not used after.
func (l *Line) Close() {
	l.closeConn()
	l.dialer.closeSpare()
	l.cancel()
}

// closeConn closes the connection, if any.
func (l *Line) closeConn() { l.endConn(false) }

// endConn ends the connection, if any: with clean (it ended with its
// answer, nothing amiss), a plain TCP one only the VU reads goes back to
// the dialer, its socket to connect again (recycle_linux.go); any other
// is closed.
func (l *Line) endConn(clean bool) {
	cn := l.c
	if cn == nil {
		return
	}
	l.active.Store(nil)
	l.c = nil
	if clean && !cn.detached && cn.NC == cn.Raw && l.dialer.recycle(cn.Raw) {
		return
	}
	cn.NC.Close()
}
