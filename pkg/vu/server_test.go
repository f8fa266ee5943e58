package vu

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer is a loopback HTTP/1.1 server that keeps the raw bytes of every
// request it reads, counts connections, and misbehaves on demand. It parses
// just enough HTTP to frame requests (Content-Length bodies).
type rawServer struct {
	t  testing.TB
	ln net.Listener

	// respond decides the answer to the n-th request (from 1); nil answers
	// 200 with a small body.
	respond func(n int64, req []byte) action

	mu    sync.Mutex // guards reqs and at
	reqs  [][]byte
	at    []time.Time // when each request was read
	conns atomic.Int64
	count atomic.Int64 // requests read
	wg    sync.WaitGroup
	quit  chan struct{} // closed by close: ends stalls
	once  sync.Once
}

// action is what the server does with a request it read.
type action struct {
	status int
	close  bool          // send "Connection: close" and close after answering
	stall  time.Duration // wait this long before answering
	reset  bool          // close with RST instead of answering
	hangup bool          // close without answering (EOF)
	body   string
	header string // extra header lines, each ending in \r\n
}

func newRawServer(t testing.TB, respond func(n int64, req []byte) action) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{t: t, ln: ln, respond: respond, quit: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *rawServer) close() {
	s.once.Do(func() { close(s.quit) })
	s.ln.Close()
	s.wg.Wait()
}

func (s *rawServer) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.reqs...)
}

func (s *rawServer) arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...)
}

func (s *rawServer) accept() {
	defer s.wg.Done()
	var conns sync.WaitGroup
	var open sync.Map
	defer func() {
		open.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		conns.Wait()
	}()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		open.Store(c, nil)
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer open.Delete(c)
			defer c.Close()
			s.serve(c)
		}()
	}
}

func (s *rawServer) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := readRawRequest(br)
		if err != nil {
			return
		}
		n := s.count.Add(1)
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.at = append(s.at, time.Now())
		s.mu.Unlock()
		a := action{status: 200, body: "ok"}
		if s.respond != nil {
			a = s.respond(n, req)
		}
		if a.stall > 0 {
			select {
			case <-time.After(a.stall):
			case <-s.quit:
				return
			}
		}
		switch {
		case a.reset:
			c.(*net.TCPConn).SetLinger(0)
			return
		case a.hangup:
			return
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n", a.status, "X", len(a.body))
		if a.close {
			b.WriteString("Connection: close\r\n")
		}
		b.WriteString(a.header)
		b.WriteString("\r\n")
		if !bytes.HasPrefix(req, []byte("HEAD ")) { // HEAD: the length of a body not sent
			b.WriteString(a.body)
		}
		if _, err := c.Write(b.Bytes()); err != nil || a.close {
			return
		}
	}
}

// readRawRequest reads one request's exact bytes.
func readRawRequest(br *bufio.Reader) ([]byte, error) {
	var raw []byte
	length := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		raw = append(raw, line...)
		if string(line) == "\r\n" {
			break
		}
		if name, value, ok := strings.Cut(strings.TrimRight(string(line), "\r\n"), ":"); ok && strings.EqualFold(name, "content-length") {
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, err
	}
	return append(raw, body...), nil
}
