package conn

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
)

// peerEnd is how the server's side of one connection went: the client's
// port, and how its read after the answer ended (nil: EOF, the client's
// FIN).
type peerEnd struct {
	port int
	err  error
}

// endServer is a loopback server that reads a 4-byte request on each
// connection, answers it, and then, by then: "close" closes its side at
// once (a FIN); "hold" reads the client's end and holds its side open
// until the test ends; "reset" reads the client's end, then resets. Each
// connection's end goes to the channel returned once its read ended.
func endServer(t *testing.T, then string) (string, <-chan peerEnd) {
	t.Helper()
	ends := make(chan peerEnd, 16)
	addr, _ := loopback.ServeClosing(t, func(c net.Conn, quit <-chan struct{}) {
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		c.Write(buf)
		if then == "close" {
			c.(*net.TCPConn).CloseWrite()
		}
		_, err := c.Read(buf)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		ends <- peerEnd{port: c.RemoteAddr().(*net.TCPAddr).Port, err: err}
		switch then {
		case "hold":
			<-quit
		case "reset":
			c.(*net.TCPConn).SetLinger(0)
		}
	})
	return addr, ends
}

// served is a connection d dialed to addr, after one round trip.
func served(t *testing.T, d *tcpDialer, addr string) net.Conn {
	t.Helper()
	c := dialed(t, d, addr)
	roundTrip(t, c)
	return c
}

// spareReady is a dialer whose spare is ready: a connection to an
// endServer (then) served, recycled, and ended both ways; addr is the
// server's, c1 the connection recycled.
func spareReady(t *testing.T, then string) (d *tcpDialer, addr string, c1 net.Conn) {
	t.Helper()
	addr, ends := endServer(t, then)
	d = newTCPDialer(new(atomic.Bool), nanotime)
	t.Cleanup(d.closeSpare)
	c1 = served(t, d, addr)
	if !d.recycle(c1) {
		t.Fatal("a plain TCP connection was not recycled")
	}
	waitEnd(t, ends)
	waitClosed(t, socketOf(c1))
	return d, addr, c1
}

// waitClosed waits, at most 5s, until the connection on fd has ended both
// ways (TCP_CLOSE).
func waitClosed(t *testing.T, fd int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for tcpState(fd) != tcpClose {
		if time.Now().After(deadline) {
			t.Fatalf("the connection on socket %d did not end: state %d", fd, tcpState(fd))
		}
		time.Sleep(time.Millisecond)
	}
}

// roundTrip writes a 4-byte request on c and reads its echo.
func roundTrip(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatalf("write: %v", err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read: %q %v", buf, err)
	}
}

// waitEnd is the next connection's end the server saw, at most 5s.
func waitEnd(t *testing.T, ends <-chan peerEnd) peerEnd {
	t.Helper()
	select {
	case e := <-ends:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("the server saw no end of the connection")
		return peerEnd{}
	}
}

// socketOf is the socket a dialed connection is on.
func socketOf(c net.Conn) int { return c.(*tcpConn).fd }

// TestRecycledSocket: a connection recycled ends for its peer with a FIN
// (no reset) and for its holder (net.ErrClosed, its socket untouched);
// once the peer closed too, the next dial connects the same socket again,
// a connection of its own (another port, served anew).
func TestRecycledSocket(t *testing.T) {
	addr, ends := endServer(t, "close")
	d := newTCPDialer(new(atomic.Bool), nanotime)
	t.Cleanup(d.closeSpare)
	c1 := served(t, d, addr)
	if !d.recycle(c1) {
		t.Fatal("a plain TCP connection was not recycled")
	}
	e1 := waitEnd(t, ends)
	if e1.err != nil {
		t.Fatalf("the server's read after the answer: %v, want EOF (the client's FIN)", e1.err)
	}
	waitClosed(t, socketOf(c1))
	c2 := dialed(t, d, addr)
	defer c2.Close()
	if socketOf(c2) != socketOf(c1) {
		t.Errorf("the next dial opened socket %d, want the recycled %d", socketOf(c2), socketOf(c1))
	}
	roundTrip(t, c2)
	// The recycled connection's holder reaches nothing of the new one.
	if _, err := c1.Write([]byte("ping")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write on the recycled connection: %v, want net.ErrClosed", err)
	}
	if _, err := c1.Read(make([]byte, 4)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read on the recycled connection: %v, want net.ErrClosed", err)
	}
	if err := c1.SetDeadline(time.Unix(1, 0)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("deadline on the recycled connection: %v, want net.ErrClosed", err)
	}
	c1.Close()
	// c2 is untouched by all of that: it reads the server's end (EOF),
	// not a closed socket's error.
	if _, err := c2.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read on the new connection after its socket's old holder closed: %v, want EOF", err)
	}
	c2.(*tcpConn).f.Close()
	if e2 := waitEnd(t, ends); e2.port == e1.port {
		t.Errorf("the second connection came from port %d as the first did: not a new connection", e2.port)
	}
}

// TestSpareNotClosedByPeer: a spare whose peer has not closed its side is
// closed at the next dial, as it would have been (the peer saw the FIN,
// and no reset), and the dial takes a new socket; the next recycleSkip
// connections are then closed, not recycled, and the one after is
// recycled again.
func TestSpareNotClosedByPeer(t *testing.T) {
	addr, ends := endServer(t, "hold")
	d := newTCPDialer(new(atomic.Bool), nanotime)
	t.Cleanup(d.closeSpare)
	c1 := served(t, d, addr)
	fd1 := socketOf(c1)
	d.recycle(c1)
	if e := waitEnd(t, ends); e.err != nil {
		t.Fatalf("the server's read after the answer: %v, want EOF", e.err)
	}
	c2 := dialed(t, d, addr)
	defer c2.Close()
	if d.spare != nil {
		t.Error("the spare is still kept after the dial")
	}
	if socketOf(c2) == fd1 && tcpState(fd1) == tcpClose {
		t.Error("the dial reused a socket whose connection had not ended")
	}
	roundTrip(t, c2)
	for i := range recycleSkip {
		if d.recycle(c2) {
			t.Fatalf("connection %d after a spare that was not ready was recycled", i+1)
		}
	}
	if !d.recycle(c2) {
		t.Errorf("the connection after %d closed was not recycled", recycleSkip)
	}
}

// TestSpareAfterReset: a connection reset by its peer after its FIN
// leaves the reset's error on the socket (unconnecting does not take
// it); connected again, the new connection does not inherit it (the
// connect clears it), which a handshake still under way would read as
// its own failure (handshake).
func TestSpareAfterReset(t *testing.T) {
	d, addr, c1 := spareReady(t, "reset")
	c2 := dialed(t, d, addr)
	defer c2.Close()
	if socketOf(c2) != socketOf(c1) {
		t.Fatalf("the reset connection's socket was not connected again (%d, want %d)", socketOf(c2), socketOf(c1))
	}
	if e, err := syscall.GetsockoptInt(socketOf(c2), syscall.SOL_SOCKET, syscall.SO_ERROR); err != nil || e != 0 {
		t.Errorf("the new connection's socket error: %v %v, want none (the old connection's reset)", syscall.Errno(e), err)
	}
	roundTrip(t, c2)
}

// TestLineRecyclesOnlyWhatEndedCleanly: a Line recycles a connection
// dropped with no error, and closes one dropped with an error, or
// detached (read by another goroutine, whose read the close ends).
func TestLineRecyclesOnlyWhatEndedCleanly(t *testing.T) {
	held := make(chan struct{})
	l, dst, _, _ := testLine(t, func(c net.Conn) {
		io.Copy(io.Discard, c)
		<-held // its side stays open: only the client's close ends a read
	}, Options{})
	defer close(held)
	var res result.Result
	p := &Protocols{Cleartext: "http/1.1"}

	cn := connect(t, l, &dst, p, &res)
	l.Drop(nil)
	if l.dialer.spare == nil || l.dialer.spare != cn.Raw {
		t.Error("a connection dropped with no error was not recycled")
	}

	cn = connect(t, l, &dst, p, &res)
	l.Drop(errors.New("the answer was cut short"))
	if l.dialer.spare == cn.Raw {
		t.Error("a connection dropped with an error was recycled")
	}

	cn = connect(t, l, &dst, p, &res)
	cn.Detach()
	read := make(chan error, 1)
	go func() {
		_, err := cn.NC.Read(make([]byte, 1))
		read <- err
	}()
	time.Sleep(20 * time.Millisecond) // the read waits
	l.Drop(nil)
	select {
	case err := <-read:
		if err == nil {
			t.Error("the detached connection's read returned no error after the drop")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read of the detached connection still waits after the drop: it was not closed")
	}
	if l.dialer.spare == cn.Raw {
		t.Error("a detached connection was recycled")
	}
}

// TestSpareOfAnotherFamily: an IPv4 spare is not connected to an IPv6
// address: it is closed, a socket of the family made, and that is no
// miss (the connections after are recycled still).
func TestSpareOfAnotherFamily(t *testing.T) {
	ln6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("SKIP: no IPv6 loopback here (%v); a spare of another family is not tested", err)
	}
	defer ln6.Close() // the kernel completes the handshake: nothing to accept
	d, _, _ := spareReady(t, "close")
	c2 := dialed(t, d, ln6.Addr().String())
	defer c2.Close()
	if fam := c2.(*tcpConn).family; fam != syscall.AF_INET6 {
		t.Fatalf("a dial to %s made a socket of family %d", ln6.Addr(), fam)
	}
	if d.skip != 0 {
		t.Errorf("a spare of another family counted as a miss: %d connections to close", d.skip)
	}
}
