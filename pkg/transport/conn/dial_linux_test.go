package conn

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/result"
)

// fullListener is a loopback listener whose accept queue is full: the
// kernel drops further SYNs, so a dial to it stays in its handshake.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // one queued connection fills it
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	filler, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	return addr
}

func TestDialHandshakeTimesOut(t *testing.T) {
	addr := fullListener(t)
	d := newTCPDialer(new(atomic.Bool), nanotime)
	start := time.Now()
	// The request written early meets a handshake under way: nothing is
	// sent, and the dial waits for the handshake as it would without.
	c, sent, err := d.dial(t.Context(), addr, start.Add(300*time.Millisecond), []byte("GET / HTTP/1.1\r\n\r\n"))
	took := time.Since(start)
	if sent != 0 {
		t.Errorf("%d bytes went out before the handshake ended", sent)
	}
	if err == nil {
		c.Close()
		t.Fatal("dial to a full accept queue succeeded; want a timeout")
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v; want a net.Error that is a timeout", err)
	}
	if took < 250*time.Millisecond || took > 5*time.Second {
		t.Fatalf("the dial gave up after %v; want about 300ms", took)
	}
	if d.dialing.Load() != nil {
		t.Fatal("the failed handshake is still published for interrupt")
	}
}

func TestDialInterruptCutsHandshake(t *testing.T) {
	addr := fullListener(t)
	d := newTCPDialer(new(atomic.Bool), nanotime)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		c, _, err := d.dial(t.Context(), addr, start.Add(30*time.Second), nil)
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	for d.dialing.Load() == nil {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the dial never waited on its handshake")
		}
		time.Sleep(time.Millisecond)
	}
	d.interrupt()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an interrupted handshake succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("interrupt did not cut the handshake off")
	}
}

func TestDialRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := newTCPDialer(new(atomic.Bool), nanotime)
	_, _, err = d.dial(t.Context(), addr, time.Now().Add(5*time.Second), nil)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v; want connection refused", err)
	}
	if d.addr != "" {
		t.Fatal("a name none of whose addresses answered is still cached")
	}
}

// step is what stepServer does with its next connection: echo 4 bytes,
// reset, or (neither) stay silent until the test ends.
type step struct{ echo, reset bool }

// stepServer is a loopback server that handles each connection as the next
// step sent says. It returns its port.
func stepServer(t *testing.T) (port string, steps chan<- step) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan step, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var silent []net.Conn
		defer func() {
			for _, c := range silent {
				c.Close()
			}
		}()
		for s := range ch {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if s.echo {
				buf := make([]byte, 4)
				if _, err := io.ReadFull(c, buf); err == nil {
					c.Write(buf)
				}
			}
			if s.reset {
				c.(*net.TCPConn).SetLinger(0)
			}
			if s.echo || s.reset {
				c.Close()
			} else {
				silent = append(silent, c) // the client times out
			}
		}
	}()
	t.Cleanup(func() { close(ch); ln.Close(); <-done })
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), ch
}

// dialed dials addr with d, by a 5s deadline, and sets it on the connection.
func dialed(t *testing.T, d *tcpDialer, addr string) net.Conn {
	t.Helper()
	c, _, err := d.dial(t.Context(), addr, time.Now().Add(5*time.Second), nil)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

// TestDialConn checks a dialed connection end to end against a loopback
// server: by IP and by name, its addresses, a round trip and EOF, as the
// net package reports them.
func TestDialConn(t *testing.T) {
	port, steps := stepServer(t)
	d := newTCPDialer(new(atomic.Bool), nanotime)

	// The first write goes out with the connection; it is the same echo.
	steps <- step{echo: true}
	c, sent, err := d.dial(t.Context(), "127.0.0.1:"+port, time.Now().Add(5*time.Second), []byte("ping"))
	if err != nil || sent != 4 {
		t.Fatalf("dial with a first write: sent %d, %v; want all 4 bytes", sent, err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c); err != nil || string(got) != "ping" {
		t.Fatalf("read %q, %v; want the early write echoed", got, err)
	}
	c.Close()

	for _, addr := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		steps <- step{echo: true}
		c := dialed(t, d, addr)
		if got := c.RemoteAddr().String(); got != "127.0.0.1:"+port {
			t.Errorf("%s: RemoteAddr = %s", addr, got)
		}
		if la, ok := c.LocalAddr().(*net.TCPAddr); !ok || !la.IP.IsLoopback() || la.Port == 0 {
			t.Errorf("%s: LocalAddr = %v", addr, c.LocalAddr())
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "ping" {
			t.Fatalf("%s: read %q, %v; want the echo, then EOF", addr, got, err)
		}
		c.Close()
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("read after close: %v; want net.ErrClosed", err)
		}
	}
}

// TestDialConnErrors: a read timeout and a reset on a dialed connection
// read as the net package's, and classify as such.
func TestDialConnErrors(t *testing.T) {
	port, steps := stepServer(t)
	d := newTCPDialer(new(atomic.Bool), nanotime)

	steps <- step{}
	c := dialed(t, d, "127.0.0.1:"+port)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || KindOf(err) != result.ErrTimeout {
		t.Errorf("read past the deadline: %v; want a timeout", err)
	}
	c.Close()

	steps <- step{echo: true, reset: true}
	c = dialed(t, d, "127.0.0.1:"+port)
	c.Write([]byte("ping"))
	var rerr error
	for rerr == nil {
		_, rerr = c.Read(make([]byte, 16))
	}
	if !errors.Is(rerr, syscall.ECONNRESET) || KindOf(rerr) != result.ErrReset {
		t.Errorf("read of a reset connection: %v; want connection reset", rerr)
	}
	var op *net.OpError
	if !errors.As(rerr, &op) || op.Op != "read" {
		t.Errorf("read error %#v is not a net.OpError of a read", rerr)
	}
	c.Close()
}

func nanotime() int64 { return time.Now().UnixNano() }

func TestDialIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("SKIP: no IPv6 loopback here (%v); the IPv6 dial is not tested", err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("v6"))
			c.Close()
		}
	}()
	d := newTCPDialer(new(atomic.Bool), nanotime)
	c, _, err := d.dial(t.Context(), ln.Addr().String(), time.Now().Add(5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c); err != nil || string(got) != "v6" {
		t.Fatalf("read %q, %v", got, err)
	}
	if got := c.RemoteAddr().String(); got != ln.Addr().String() {
		t.Errorf("RemoteAddr = %s, want %s", got, ln.Addr())
	}
	if la, ok := c.LocalAddr().(*net.TCPAddr); !ok || !la.IP.Equal(net.IPv6loopback) {
		t.Errorf("LocalAddr = %v, want [::1]:port", c.LocalAddr())
	}
}
