package capture

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// closedWithin reads c until the proxy closes it and returns how long
// that took; it fails the test past limit.
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	took := time.Since(start)
	// A reset is the proxy's close too: the client's bytes were still
	// arriving when it closed, so the kernel answers them with RST.
	if ne, ok := err.(net.Error); ok && ne.Timeout() { // our deadline: the proxy kept it open
		t.Fatalf("the connection was still open after %v: %v", took.Round(time.Millisecond), err)
	}
	return took
}

// TestSlowClientsClosed: the reverse proxy closes a client whose head
// dribbles in a byte at a time (each byte within the idle timeout, the
// head never whole) at the head timeout, and a client that stops in the
// middle of a body at the idle timeout; a client sending a whole request
// slowly, but within both, is answered.
func TestSlowClientsClosed(t *testing.T) {
	up := rawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	var out bytes.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: up, HeadTimeout: 300 * time.Millisecond, IdleTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer closeProxy(t, p)
	t.Run("slowloris head", func(t *testing.T) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stop := make(chan struct{})
		defer close(stop)
		go func() { // a header byte every 100 ms: never idle, never whole
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := io.WriteString(c, "X"); err != nil {
						return
					}
				}
			}
		}()
		if took := closedWithin(t, c, 5*time.Second); took > 1500*time.Millisecond {
			t.Errorf("closed after %v, want about the head timeout (300ms), well before the idle timeout (2s)", took)
		}
	})
	t.Run("stalled body", func(t *testing.T) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
		start := time.Now()
		closedWithin(t, c, 5*time.Second)
		if took := time.Since(start); took < 1900*time.Millisecond {
			t.Errorf("closed after %v, want the idle timeout (2s): a body's time is not the head's", took)
		}
	})
	t.Run("slow but within", func(t *testing.T) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\n")
		time.Sleep(100 * time.Millisecond)
		io.WriteString(c, "Content-Length: 4\r\n\r\nab")
		time.Sleep(500 * time.Millisecond) // under the idle timeout, past the head timeout: a body's time is not the head's
		io.WriteString(c, "cd")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		m := readAnswer(t, bufio.NewReader(c), "POST")
		if m.Status != 200 {
			t.Errorf("got %d, want 200", m.Status)
		}
	})
	if st := p.Stats(); st.Slow < 1 {
		t.Errorf("slow heads: got %d, want the slowloris counted", st.Slow)
	}
}

// TestForwardIdleTunnels: the forward proxy closes a CONNECT tunnel whose
// client never begins TLS (at the head timeout), and an HTTP/2 connection
// inside a tunnel that stays idle after its preface (at the idle
// timeout): neither stays open.
func TestForwardIdleTunnels(t *testing.T) {
	var out bytes.Buffer
	p, ca := forwardProxy(t, &out, "", func(o *ForwardOptions) {
		o.HeadTimeout, o.IdleTimeout = 400*time.Millisecond, 800*time.Millisecond
	})
	defer closeProxy(t, p)
	connect := func(t *testing.T) net.Conn {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "CONNECT api.example:443 HTTP/1.1\r\nHost: api.example:443\r\n\r\n")
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, " 200 ") {
			t.Fatalf("CONNECT: %q, %v", line, err)
		}
		br.ReadString('\n')
		return c
	}
	t.Run("silent tunnel", func(t *testing.T) {
		c := connect(t)
		defer c.Close()
		closedWithin(t, c, 5*time.Second)
	})
	t.Run("idle HTTP/2", func(t *testing.T) {
		c := connect(t)
		defer c.Close()
		tc := tls.Client(c, &tls.Config{ServerName: "api.example", RootCAs: ca.Pool(), NextProtos: []string{"h2"}})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		if tc.ConnectionState().NegotiatedProtocol != "h2" {
			t.Fatalf("ALPN: got %q, want h2", tc.ConnectionState().NegotiatedProtocol)
		}
		io.WriteString(tc, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00") // preface, empty SETTINGS
		start := time.Now()
		tc.SetReadDeadline(start.Add(6 * time.Second))
		_, err := io.Copy(io.Discard, tc)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the HTTP/2 tunnel was still open after %v", time.Since(start).Round(time.Millisecond))
		}
	})
}

// TestForwardSlowBodyKeepsMoving: a body that keeps moving may take
// longer than the upstream timeout: each read and write gives the
// exchange the timeout again.
func TestForwardSlowBodyKeepsMoving(t *testing.T) {
	up := rawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	var out bytes.Buffer
	p, _ := forwardProxy(t, &out, "", func(o *ForwardOptions) { o.Reach.Timeout = 400 * time.Millisecond })
	defer closeProxy(t, p)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST http://"+up+"/slow HTTP/1.1\r\nHost: "+up+"\r\nContent-Length: 12\r\n\r\n")
	for range 12 { // 1.2 s in all, 100 ms a byte: three times the timeout
		time.Sleep(100 * time.Millisecond)
		io.WriteString(c, "x")
	}
	if m := readAnswer(t, bufio.NewReader(c), "POST"); m.Status != 200 {
		t.Errorf("got %d, want 200", m.Status)
	}
}

// TestReverseSilentUpstreamCut: an upstream that never answers ends the
// exchange at the idle timeout with a 502, rather than holding the
// client's connection for good.
func TestReverseSilentUpstreamCut(t *testing.T) {
	up, _ := byteUpstreamSilent(t)
	var out bytes.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: up, IdleTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer closeProxy(t, p)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 502 ") {
		t.Errorf("got %q, %v, want a 502 at the idle timeout", line, err)
	}
}

// byteUpstreamSilent is an upstream that reads and never answers.
func byteUpstreamSilent(t *testing.T) (string, net.Listener) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(io.Discard, c) }()
		}
	}()
	return ln.Addr().String(), ln
}

// TestMaxConns: past MaxConns (--max-conns), a connection waits to be
// served until one served closes; a negative count is refused by name.
func TestMaxConns(t *testing.T) {
	up := rawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	var out bytes.Buffer
	if _, err := Listen("127.0.0.1:0", &out, Options{Upstream: up, MaxConns: -1}); err == nil || !strings.Contains(err.Error(), "--max-conns") {
		t.Fatalf("MaxConns -1: %v, want --max-conns refused", err)
	}
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: up, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer closeProxy(t, p)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	third, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	io.WriteString(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(third)
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("a third connection was served with MaxConns 2")
	}
	if n := p.Stats().ConnWaits; n != 1 {
		t.Errorf("conn_waits %d, want the third connection counted", n)
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200 ") {
		t.Fatalf("once a slot was free: %q %v, want a 200", line, err)
	}
}
