package capture

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// byteUpstream is a loopback upstream that counts every byte it is sent,
// whatever it is, as it comes, and answers one empty 200 a connection.
func byteUpstream(t *testing.T) (addr string, got *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				answered := false
				for {
					n, err := c.Read(buf)
					got.Add(int64(n))
					if n > 0 && !answered {
						answered = true
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), got
}

// TestBadFramingRefused: requests framed against RFC 9112 §6 — a
// Content-Length with a Transfer-Encoding, two Content-Lengths that
// differ, one that is not digits, a Transfer-Encoding whose last coding
// is not chunked — are answered 400 by both recorders, and not one byte
// of them reaches the upstream (sent over raw sockets).
func TestBadFramingRefused(t *testing.T) {
	bad := map[string]string{
		"CL and TE":           "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"TE and CL":           "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
		"two Content-Lengths": "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"a list that differs": "Content-Length: 5, 6\r\n\r\nhello!",
		"+5":                  "Content-Length: +5\r\n\r\nhello",
		"-1":                  "Content-Length: -1\r\n\r\n",
		"0x5":                 "Content-Length: 0x5\r\n\r\nhello",
		"xchunked":            "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
		"chunked, then gzip":  "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
	}
	up, got := byteUpstream(t)
	var out bytes.Buffer
	reverse, err := Listen("127.0.0.1:0", &out, Options{Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	defer closeProxy(t, reverse)
	fwd, _ := forwardProxy(t, &out, "", nil)
	defer closeProxy(t, fwd)
	for _, proxy := range []struct{ name, addr, target string }{
		{"reverse", reverse.Addr(), "/p"},
		{"forward", fwd.Addr(), "http://" + up + "/p"},
	} {
		for name, rest := range bad {
			t.Run(proxy.name+"/"+name, func(t *testing.T) {
				c, err := net.Dial("tcp", proxy.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, "POST "+proxy.target+" HTTP/1.1\r\nHost: x\r\n"+rest)
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil || !strings.HasPrefix(line, "HTTP/1.1 400 ") {
					t.Errorf("got %q, %v, want a 400", line, err)
				}
			})
		}
	}
	// A good request through each, so that the upstream's count is known
	// to move when something does reach it.
	c, err := net.Dial("tcp", reverse.Addr())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for got.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	want := int64(len("POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"))
	time.Sleep(100 * time.Millisecond)
	if n := got.Load(); n != want {
		t.Errorf("the upstream got %d bytes, want %d (the good request's alone)", n, want)
	}
}
