package mock

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// closedWithin reports how long c took to be closed by the server (r,
// reading c, read until an error), at most limit.
func closedWithin(t *testing.T, c net.Conn, r io.Reader, limit time.Duration) (time.Duration, bool) {
	t.Helper()
	began := time.Now()
	c.SetReadDeadline(began.Add(limit))
	_, err := io.Copy(io.Discard, r)
	took := time.Since(began)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return took, false
	}
	return took, true
}

// TestSlowClientsClosed: --head-timeout closes a connection whose head
// stalls after its first byte (a first request, a keep-alive one, one
// inside a CONNECT tunnel); --idle-timeout closes an HTTP/2 connection
// with no stream open. A client that keeps asking keeps its connection,
// HTTP/1.1 and HTTP/2, however long it stays.
func TestSlowClientsClosed(t *testing.T) {
	const idle, head = 600 * time.Millisecond, 300 * time.Millisecond
	s := start(t, Options{File: file(t, rec{method: "GET", uri: "/x", host: "dep.test", status: 200, resBody: "x"}), IdleTimeout: idle, HeadTimeout: head})
	addr := s.Addrs()[0]
	dial := func(t *testing.T) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for _, tt := range []struct {
		name string
		// send writes what the client sends before it stalls.
		send func(t *testing.T, c net.Conn, br *bufio.Reader)
	}{
		{"part of a first head", func(t *testing.T, c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "GET /x HTTP/1.1\r\nHost: dep.te")
		}},
		{"part of a keep-alive head", func(t *testing.T, c net.Conn, br *bufio.Reader) {
			io.WriteString(c, "GET /x HTTP/1.1\r\nHost: dep.test\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("first answer: %v %v", resp, err)
			}
			io.Copy(io.Discard, resp.Body)
			io.WriteString(c, "GET /x HTTP/1.1\r\nHo")
		}},
		{"part of a head in a CONNECT tunnel", func(t *testing.T, c net.Conn, br *bufio.Reader) {
			io.WriteString(c, "CONNECT dep.test:80 HTTP/1.1\r\nHost: dep.test:80\r\n\r\n")
			line, err := br.ReadString('\n')
			if err != nil || !strings.Contains(line, "200") {
				t.Fatalf("CONNECT: %q %v", line, err)
			}
			br.ReadString('\n')
			io.WriteString(c, "GET /x HTTP/1.1\r\nHo")
		}},
		{"part of the HTTP/2 preface", func(t *testing.T, c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "PRI * HTTP/2.0\r\n")
		}},
		{"an idle HTTP/2 connection", func(t *testing.T, c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t)
			br := bufio.NewReader(c)
			tt.send(t, c, br)
			took, closed := closedWithin(t, c, br, 10*time.Second)
			if !closed {
				t.Fatalf("still open after %v, want closed within about %v", took, idle)
			}
			if took < head/2 {
				t.Errorf("closed after %v, before the timeout", took)
			}
		})
	}
	t.Run("busy clients keep their connections", func(t *testing.T) {
		h1 := &http.Client{Transport: &http.Transport{}}
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		h2 := &http.Client{Transport: &http.Transport{Protocols: &p}}
		conns := map[string]map[string]bool{"h1": {}, "h2": {}}
		for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 4) {
			for name, c := range map[string]*http.Client{"h1": h1, "h2": h2} {
				req, _ := http.NewRequest("GET", "http://"+addr+"/x", nil)
				req.Host = "dep.test"
				var local string
				req = req.WithContext(withLocalAddr(req.Context(), &local))
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				conns[name][local] = true
			}
		}
		for name, seen := range conns {
			if len(seen) != 1 {
				t.Errorf("%s: %d connections used, want 1 (a busy connection was closed)", name, len(seen))
			}
		}
	})
}

// withLocalAddr has the request's connection note its local address in
// *local (which connection it went over).
func withLocalAddr(ctx context.Context, local *string) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		*local = i.Conn.LocalAddr().String()
	}})
}

// TestMaxConns: past --max-conns, a connection waits to be served until
// one served closes, and the report counts it.
func TestMaxConns(t *testing.T) {
	s := start(t, Options{File: file(t, rec{method: "GET", uri: "/x", host: "dep.test", status: 200, resBody: "x"}), MaxConns: 2})
	addr := s.Addrs()[0]
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	third, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	io.WriteString(third, "GET /x HTTP/1.1\r\nHost: dep.test\r\n\r\n")
	br := bufio.NewReader(third)
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("a third connection was served with --max-conns 2")
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("once a slot was free: %v %v, want 200", resp, err)
	}
	r := s.Report()
	if r.ConnWaits < 1 {
		t.Errorf("conn_waits %d, want at least 1: the third connection waited", r.ConnWaits)
	}
	var text strings.Builder
	r.WriteText(&text)
	if !strings.Contains(text.String(), "--max-conns reached") {
		t.Errorf("the text report does not say a connection waited:\n%s", text.String())
	}
}

// TestCloseCutsPassthrough: a miss passed through to a real host that
// accepts and never answers does not hold Close past its grace: the call
// is cut then (it held Close for the pool's own timeout).
func TestCloseCutsPassthrough(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	host := silent.Addr().String()
	s := start(t, Options{File: file(t, rec{method: "GET", uri: "/known", host: host, status: 200, resBody: "x"}), Passthrough: true, AllowUpstream: []string{"127.0.0.0/8"}})
	c, err := net.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET http://"+host+"/other HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	for deadline := time.Now().Add(10 * time.Second); s.Report().Passthrough == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // until the call is under way
	}
	if s.Report().Passthrough == 0 {
		t.Fatal("the miss was not passed through: Close has nothing under way to cut")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	s.Close(ctx)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %v with a grace of 300ms and a call passed through under way", took)
	}
}
