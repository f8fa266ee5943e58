package conn

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// tcpDialer opens a VU's TCP connections itself: a non-blocking socket put
// in the runtime's poller through os.File. net.Dialer costs about 9 CPU-µs
// a dial on top of the system calls (a resolution, a context and its
// AfterFunc, a deadline timer, a park for the connect, getpeername and
// getsockname), which --no-connection-reuse pays on every request. Here a
// dial is socket, fcntl and the poller's registration, connect, then the
// request's first write (or getpeername) to learn whether the handshake is
// done (it always is on loopback, where connect completes it); only a
// handshake still under way parks the VU, or, once a whole request went,
// its answer to come (sendFirst). socket, connect and the first write are
// raw system calls (rawIO's reasons: on a non-blocking socket none
// blocks), and TCP_NODELAY is set before the connection's second
// write, so that a connection that carries one request whole in its
// first write (--no-connection-reuse) never pays for it: Nagle's
// algorithm only holds back a write while an earlier one is unacknowledged.
//
// Resolutions are kept per VU for dnsTTL, and dropped when no address of a
// name could be reached, so that a moved service is found again.
type tcpDialer struct {
	hard    *atomic.Bool            // the Line's Interrupt: the hard stop
	dialing atomic.Pointer[os.File] // a handshake under way, for interrupt

	addr  string // the last address resolved, its addresses and until when
	ras   []remoteAddr
	until int64

	soErr   error              // set by connected
	checked func(uintptr) bool // connected, bound once

	// sendFirst's callback, bound once, and its state: what to write,
	// how much went, whether the handshake is known done, and why the
	// connect failed.
	firstFn  func(uintptr) bool
	deadline time.Time // the dial's, for the request (an address may have less)
	first    []byte
	sent     int
	done     bool
	werr     error

	// spare is the socket of the last connection recycled: its close
	// under way, to connect again (recycle_linux.go); skip counts the
	// connections still to close rather than recycle after one that was
	// not ready.
	spare *tcpConn
	skip  int

	check  func(netip.Addr) error // Options.Allow; nil: any address
	clock  func() int64           // the run's clock
	sentAt int64                  // when the last dial wrote its first bytes
}

// dnsTTL is how long a VU keeps a resolved name, as k6 does by default.
const dnsTTL = 5 * time.Minute

// minAttempt is the least time an address gets when a name has several
// and the dial's time is shared among them (net.Dialer's floor).
const minAttempt = 2 * time.Second

// remoteAddr is one address a name resolved to.
type remoteAddr struct {
	family int
	// in4 or in6 (by family) is the address as connect takes it, made
	// once; n its length.
	in4 syscall.RawSockaddrInet4
	in6 syscall.RawSockaddrInet6
	n   uintptr
	tcp *net.TCPAddr
}

// connect starts the connect of fd to ra: a raw system call, as fd is
// non-blocking.
func (ra *remoteAddr) connect(fd int) syscall.Errno {
	p := unsafe.Pointer(&ra.in4)
	if ra.family == syscall.AF_INET6 {
		p = unsafe.Pointer(&ra.in6)
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_CONNECT, uintptr(fd), uintptr(p), ra.n)
	return errno
}

func newTCPDialer(hard *atomic.Bool, clock func() int64) *tcpDialer {
	d := &tcpDialer{hard: hard, clock: clock}
	d.checked = d.connected
	d.firstFn = d.firstStep
	return d
}

// allow sets the check of each address dialed (Options.Allow).
func (d *tcpDialer) allow(check func(netip.Addr) error) { d.check = check }

// dial connects to addr (host:port) by the wall-clock deadline; ctx (the
// Line's Interrupt) bounds a resolution.
//
// first, when not empty, is a whole request, written as soon as connect
// returns: on loopback the handshake is done by then, and the request
// reaches the server with its connection, which then wakes once for both
// rather than twice. When all of it went, the dial returns once its answer
// has begun to come (sendFirst). sent is how much of first went out, at
// d.sentAt; a handshake still under way sends nothing early.
func (d *tcpDialer) dial(ctx context.Context, addr string, deadline time.Time, first []byte) (c net.Conn, sent int, err error) {
	if now := d.clock(); addr != d.addr || now >= d.until {
		ras, err := resolve(ctx, addr, deadline)
		if err != nil {
			return nil, 0, &net.OpError{Op: "dial", Net: "tcp", Err: err}
		}
		d.addr, d.ras, d.until = addr, ras, now+int64(dnsTTL)
	}
	d.deadline = deadline
	var firstErr error
	for i, ra := range d.ras {
		if d.check != nil {
			if err := d.check(ra.tcp.AddrPort().Addr()); err != nil {
				if firstErr == nil {
					firstErr = &net.OpError{Op: "dial", Net: "tcp", Addr: ra.tcp, Err: err}
				}
				continue
			}
		}
		attempt := deadline
		if left := len(d.ras) - i; left > 1 {
			share := time.Until(deadline) / time.Duration(left)
			attempt = time.Now().Add(max(share, min(minAttempt, time.Until(deadline))))
		}
		c, sent, err := d.dialOne(ra, attempt, first)
		if err == nil {
			return c, sent, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if d.hard.Load() || !time.Now().Before(deadline) {
			break
		}
	}
	d.addr = "" // resolve again next time
	return nil, 0, firstErr
}

// dialOne connects to one address, and writes first early when it can.
func (d *tcpDialer) dialOne(ra remoteAddr, deadline time.Time, first []byte) (net.Conn, int, error) {
	fail := func(call string, err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: ra.tcp, Err: os.NewSyscallError(call, err)}
	}
	c := d.takeSpare(ra)
	if c == nil {
		fd, err := syscall.Socket(ra.family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
		if err != nil {
			return nil, 0, fail("socket", err)
		}
		// The socket joins the poller before it connects, so that the
		// request written early can wait for its answer there (sendFirst).
		c = newTCPConn(os.NewFile(uintptr(fd), "tcp"), fd, ra)
	}
	f, fd := c.f, c.fd
	switch errno := ra.connect(fd); errno {
	case 0, syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
	default:
		f.Close()
		return nil, 0, fail("connect", errno)
	}
	sent, done := 0, false
	var err error
	if len(first) > 0 {
		if sent, done, err = d.sendFirst(c, first); err != nil {
			f.Close()
			return nil, 0, fail("connect", err)
		}
	}
	if !done {
		if done, err = handshake(fd); err != nil {
			f.Close()
			return nil, 0, fail("connect", err)
		}
	}
	// Nagle's algorithm is off before any write but a whole first one.
	if c.delayed = sent == len(first) && sent > 0; !c.delayed {
		if errno := setNoDelay(uintptr(fd)); errno != 0 {
			f.Close()
			return nil, 0, fail("setsockopt", errno)
		}
	}
	if !done {
		if err := d.wait(f, deadline); err != nil {
			f.Close()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, 0, &net.OpError{Op: "dial", Net: "tcp", Addr: ra.tcp, Err: os.ErrDeadlineExceeded}
			}
			return nil, 0, fail("connect", err)
		}
	}
	return c, sent, nil
}

// sendFirst writes first, the whole request, on c while its handshake may
// be under way (writeFirst), in the poller's read wait: when all of it
// went, the VU waits there for its answer to begin, so that the answer is
// then read at once rather than after a read that finds nothing. The wait
// is bounded by the request's deadline, which c keeps for it (dialArmed),
// and cut by the hard stop; a wait that ends so is the read's to report.
func (d *tcpDialer) sendFirst(c *tcpConn, first []byte) (sent int, done bool, err error) {
	c.arm(time.Until(d.deadline))
	c.dialArmed = true
	d.dialing.Store(c.f)
	defer d.dialing.Store(nil)
	if d.hard.Load() {
		c.f.SetDeadline(time.Unix(1, 0))
	}
	d.first, d.sent, d.done, d.werr = first, 0, false, nil
	c.rc.Read(d.firstFn) // a deadline or a cut: the read that follows reports it
	d.first = nil
	return d.sent, d.done, d.werr
}

// firstStep is sendFirst's callback (bound once: d.firstFn): its first
// call writes, and waits when the whole request went; the next, woken by
// the answer (or the connection's end), returns.
func (d *tcpDialer) firstStep(fd uintptr) bool {
	first := d.first
	if first == nil {
		return true
	}
	d.first = nil
	d.sent, d.done, d.werr = d.writeFirst(int(fd), first)
	return d.werr != nil || !d.done || d.sent < len(first)
}

// setNoDelay turns Nagle's algorithm off on fd (TCP_NODELAY).
func setNoDelay(fd uintptr) syscall.Errno {
	one := int32(1)
	_, _, errno := syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY,
		uintptr(unsafe.Pointer(&one)), 4, 0)
	return errno
}

// beforeWrite turns Nagle's algorithm off before a write that is not the
// dial's first (tcpDialer.dialOne), if that is still to do. An error is
// left to the write to report.
func (c *tcpConn) beforeWrite(fd uintptr) {
	if c.delayed {
		c.delayed = false
		setNoDelay(fd)
	}
}

// writeFirst writes first on fd while its handshake may be under way:
// sent is how much went, done whether the handshake is known done, and err
// the connect's error when it failed.
func (d *tcpDialer) writeFirst(fd int, first []byte) (sent int, done bool, err error) {
	// A write succeeds only on a connected socket: it proves the
	// handshake done. It fails with EAGAIN while the handshake is under
	// way, and with the connect's error when that failed.
	d.sentAt = d.clock()
	n, werr := rawIO(syscall.SYS_WRITE, uintptr(fd), first)
	switch {
	case werr == 0:
		sent, done = n, true
	case werr == syscall.ECONNRESET || werr == syscall.EPIPE:
		// Reset (or shut) by a peer that accepted: connected, then
		// broken, not refused. The next write says how.
		done = true
	case werr != syscall.EAGAIN && werr != syscall.EINTR:
		if ok, _ := handshake(fd); !ok {
			return 0, false, werr
		}
		done = true // connected, then broken: the next write says how
	}
	return sent, done, nil
}

// wait parks until the handshake on f ends, the deadline passes or the
// Line's Interrupt cuts it.
func (d *tcpDialer) wait(f *os.File, deadline time.Time) error {
	// The deadline goes on before f is published, so that a cut from
	// interrupt is never overwritten by it.
	f.SetWriteDeadline(deadline)
	d.dialing.Store(f)
	defer d.dialing.Store(nil)
	if d.hard.Load() {
		f.SetDeadline(time.Unix(1, 0))
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	d.soErr = nil
	if err := rc.Write(d.checked); err != nil {
		return err
	}
	return d.soErr
}

// connected is the RawConn callback of wait: true once the handshake has
// ended, with soErr set when it failed. It reads the state rather than
// trusting the poller's wake-up, which may be spurious.
func (d *tcpDialer) connected(fd uintptr) bool {
	done, err := handshake(int(fd))
	d.soErr = err
	return done || err != nil
}

// interrupt cuts off a handshake under way: called from the stopper.
func (d *tcpDialer) interrupt() {
	if f := d.dialing.Load(); f != nil {
		f.SetDeadline(time.Unix(1, 0))
	}
}

// handshake says whether the connect on fd has ended; err is why it failed.
// A connected socket has a peer; one without has its error, or none while
// the handshake is under way. One reset since it connected counts as
// connected.
func handshake(fd int) (done bool, err error) {
	var rsa syscall.RawSockaddrAny
	n := uint32(syscall.SizeofSockaddrAny)
	_, _, errno := syscall.RawSyscall(syscall.SYS_GETPEERNAME, uintptr(fd),
		uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)))
	if errno == 0 {
		return true, nil
	}
	if errno != syscall.ENOTCONN {
		return false, errno
	}
	switch n, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ERROR); {
	case err != nil:
		return false, err
	case syscall.Errno(n) == syscall.ECONNRESET:
		// Reset by a peer that had accepted (a refused connect is
		// ECONNREFUSED): it was made, then broken; the first write says so.
		return true, nil
	case n != 0:
		return false, syscall.Errno(n)
	}
	return false, nil
}

// resolve turns host:port into its addresses: at once for an IP address,
// else through the system resolver by the deadline.
func resolve(ctx context.Context, addr string, deadline time.Time) ([]remoteAddr, error) {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		ra, err := newRemoteAddr(ap)
		if err != nil {
			return nil, err
		}
		return []remoteAddr{ra}, nil
	}
	host, service, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	port, err := net.DefaultResolver.LookupPort(ctx, "tcp", service)
	if err != nil {
		return nil, err
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	var ras []remoteAddr
	for _, ip := range ips {
		if ra, err := newRemoteAddr(netip.AddrPortFrom(ip, uint16(port))); err == nil {
			ras = append(ras, ra)
		}
	}
	if len(ras) == 0 {
		return nil, &net.AddrError{Err: "no usable address", Addr: host}
	}
	return ras, nil
}

func newRemoteAddr(ap netip.AddrPort) (remoteAddr, error) {
	ip := ap.Addr().Unmap()
	ra := remoteAddr{tcp: net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, ap.Port()))}
	port := [2]byte{byte(ap.Port() >> 8), byte(ap.Port())} // network order
	if ip.Is4() {
		ra.family, ra.n = syscall.AF_INET, syscall.SizeofSockaddrInet4
		ra.in4 = syscall.RawSockaddrInet4{Family: syscall.AF_INET, Addr: ip.As4()}
		*(*[2]byte)(unsafe.Pointer(&ra.in4.Port)) = port
		return ra, nil
	}
	ra.family, ra.n = syscall.AF_INET6, syscall.SizeofSockaddrInet6
	ra.in6 = syscall.RawSockaddrInet6{Family: syscall.AF_INET6, Addr: ip.As16()}
	*(*[2]byte)(unsafe.Pointer(&ra.in6.Port)) = port
	if zone := ip.Zone(); zone != "" {
		ifi, err := net.InterfaceByName(zone)
		if err != nil {
			return ra, err
		}
		ra.in6.Scope_id = uint32(ifi.Index)
	}
	return ra, nil
}

// tcpConn is a connection tcpDialer opened. Its errors read as net's do.
// It reads and writes through its RawConn (rawIO on the non-blocking
// socket, the runtime's poller to wait), with callbacks bound once, so
// that Line.Exchange and the idle probe share its descriptor.
type tcpConn struct {
	f      *os.File
	fd     int // f's descriptor
	family int // its address family
	rc     syscall.RawConn
	raddr  *net.TCPAddr

	// The callbacks of Read and Write, bound once, and their state: the
	// buffer, how much went, the error. Read and Write may run at once.
	readFn, writeFn func(fd uintptr) bool
	rb, wb          []byte
	rn, wn          int
	rerr, werr      syscall.Errno
	// rdl and wdl are the read and write deadlines set (monoOf), which
	// arm reads; Interrupt sets them from another goroutine.
	rdl, wdl atomic.Int64
	// closed is set by Close (and recycle): the poller's error for a
	// closed descriptor (reached through RawConn) then reads as
	// net.ErrClosed, as os.File's, and a recycled connection's socket,
	// carrying another connection, is no longer reached through it.
	closed atomic.Bool
	// delayed: TCP_NODELAY is still to set, before the next write
	// (beforeWrite); only the dial's whole first write went without it.
	delayed bool
	// dialArmed: the dial armed the deadlines for the request it wrote
	// (sendFirst), so that the first arm, that request's, leaves them.
	dialArmed bool
}

// newTCPConn is the connection on f (descriptor fd) to ra.
func newTCPConn(f *os.File, fd int, ra remoteAddr) *tcpConn {
	rc, _ := f.SyscallConn() // an error only for a closed file
	return newTCPConnRC(f, fd, ra, rc)
}

// newTCPConnRC is newTCPConn with f's RawConn.
func newTCPConnRC(f *os.File, fd int, ra remoteAddr, rc syscall.RawConn) *tcpConn {
	c := &tcpConn{f: f, fd: fd, family: ra.family, rc: rc, raddr: ra.tcp}
	c.rdl.Store(math.MinInt64) // the dial's write deadline may be set: arm at the first request
	c.wdl.Store(math.MinInt64)
	c.readFn, c.writeFn = c.readStep, c.writeStep
	return c
}

func (c *tcpConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.closed.Load() {
		return 0, c.opError("read", net.ErrClosed)
	}
	c.rb, c.rn, c.rerr = p, 0, 0
	err := c.rc.Read(c.readFn)
	c.rb = nil
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case c.rerr != 0:
		return 0, c.opError("read", c.rerr)
	case c.rn == 0:
		return 0, io.EOF
	}
	return c.rn, nil
}

// readStep is Read's callback: one read, or false to wait for more.
func (c *tcpConn) readStep(fd uintptr) bool {
	n, errno := rawIO(syscall.SYS_READ, fd, c.rb)
	if errno == syscall.EAGAIN {
		return false
	}
	c.rn, c.rerr = n, errno
	return true
}

func (c *tcpConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.closed.Load() {
		return 0, c.opError("write", net.ErrClosed)
	}
	c.wb, c.wn, c.werr = p, 0, 0
	err := c.rc.Write(c.writeFn)
	n := c.wn
	c.wb = nil
	switch {
	case c.werr != 0:
		return n, c.opError("write", c.werr)
	case err != nil:
		return n, c.opError("write", err)
	}
	return n, nil
}

// writeStep is Write's callback: writes until all of c.wb went, or false
// to wait for room.
func (c *tcpConn) writeStep(fd uintptr) bool {
	c.beforeWrite(fd)
	for c.wn < len(c.wb) {
		n, errno := rawIO(syscall.SYS_WRITE, fd, c.wb[c.wn:])
		switch errno {
		case 0:
			c.wn += n
		case syscall.EAGAIN:
			return false
		default:
			c.werr = errno
			return true
		}
	}
	return true
}

func (c *tcpConn) Close() error {
	if c.closed.Swap(true) {
		return c.opError("close", net.ErrClosed) // recycled: its socket is another's
	}
	if err := c.f.Close(); err != nil {
		return c.opError("close", err)
	}
	return nil
}

func (c *tcpConn) RemoteAddr() net.Addr { return c.raddr }

func (c *tcpConn) LocalAddr() net.Addr {
	if c.closed.Load() {
		return &net.TCPAddr{}
	}
	var sa syscall.Sockaddr
	c.rc.Control(func(fd uintptr) { sa, _ = syscall.Getsockname(int(fd)) })
	switch sa := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.TCPAddr{IP: sa.Addr[:], Port: sa.Port}
	case *syscall.SockaddrInet6:
		return &net.TCPAddr{IP: sa.Addr[:], Port: sa.Port}
	}
	return &net.TCPAddr{}
}

func (c *tcpConn) SetDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.opError("set", net.ErrClosed)
	}
	err := c.f.SetDeadline(t)
	c.rdl.Store(monoOf(t))
	c.wdl.Store(monoOf(t))
	return err
}

func (c *tcpConn) SetReadDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.opError("set", net.ErrClosed)
	}
	err := c.f.SetReadDeadline(t)
	c.rdl.Store(monoOf(t))
	return err
}

func (c *tcpConn) SetWriteDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.opError("set", net.ErrClosed)
	}
	err := c.f.SetWriteDeadline(t)
	c.wdl.Store(monoOf(t))
	return err
}

// arm implements armer: it makes sure that the read and write deadlines
// are at least timeout away, and moves them only when they are not,
// timeout and a 1/1024th of it away: a request is cut after timeout,
// within a thousandth of it, and a busy connection's deadlines (two
// timers of the runtime, and two clock reads) move every timeout/1024
// rather than at every request.
func (c *tcpConn) arm(timeout time.Duration) {
	if c.dialArmed {
		c.dialArmed = false
		return
	}
	want := time.Since(monoBase) + timeout
	if min(c.rdl.Load(), c.wdl.Load()) >= int64(want) {
		return
	}
	c.SetDeadline(monoBase.Add(want + timeout>>10))
}

// monoBase is the origin of monoOf.
var monoBase = time.Now()

// monoOf is deadline t as an offset from monoBase (monotonic when t has a
// monotonic reading, as time.Now's have); no deadline is the smallest
// value: a deadline to arm.
func monoOf(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return int64(t.Sub(monoBase))
}

// opError rewrites an os.File error as the net package's, so that failure
// reports and error kinds read the same as for any connection.
func (c *tcpConn) opError(op string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, os.ErrClosed) || c.closed.Load() {
		err = net.ErrClosed
	} else if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	}
	return &net.OpError{Op: op, Net: "tcp", Addr: c.raddr, Err: err}
}
