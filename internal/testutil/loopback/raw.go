package loopback

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Raw is a loopback HTTP/1.1 server for tests that keeps the raw bytes of
// every request it reads, counts connections, and misbehaves on demand. It
// parses just enough HTTP to frame requests (Content-Length bodies).
type Raw struct {
	ln net.Listener

	// respond decides the answer to the n-th request (from 1); nil answers
	// 200 with a small body.
	respond func(n int64, req []byte) Action
	// onAccept, when set, decides what happens to the n-th connection (from
	// 1) before any request is read: Reset or Hangup end it at once.
	onAccept atomic.Pointer[func(n int64) Action]

	mu    sync.Mutex // guards reqs and at
	reqs  [][]byte
	at    []time.Time // when each request was read
	conns atomic.Int64
	count atomic.Int64 // requests read
	wg    sync.WaitGroup
	quit  chan struct{} // closed by Close: ends stalls
	once  sync.Once
}

// Action is what a Raw server does with a request it read.
type Action struct {
	Status int
	Close  bool          // send "Connection: close" and close after answering
	Stall  time.Duration // wait this long before answering
	Reset  bool          // close with RST instead of answering
	Hangup bool          // close without answering (EOF)
	Body   string
	Header string // extra header lines, each ending in \r\n
	// Raw, when not empty, is written as the whole answer, byte for byte,
	// instead of one built from Status, Body and Header (Close still
	// closes after it).
	Raw string
	// IdleClose closes the connection (FIN) when no next request has begun
	// this long after the answer: a keep-alive timeout. IdleReset does the
	// same with an RST.
	IdleClose time.Duration
	IdleReset bool
	// Extra is written ExtraAfter after the answer, on the same
	// connection: bytes no request asked for (a second answer).
	Extra      string
	ExtraAfter time.Duration
}

// NewRaw starts a Raw server, closed when the test ends. respond decides
// the answer to the n-th request (from 1); nil answers 200 "ok".
func NewRaw(t testing.TB, respond func(n int64, req []byte) Action) *Raw {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Raw{ln: ln, respond: respond, quit: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// URL is "http://127.0.0.1:PORT".
func (s *Raw) URL() string { return "http://" + s.Addr() }

// Addr is "127.0.0.1:PORT".
func (s *Raw) Addr() string { return s.ln.Addr().String() }

// Close stops the server, ends its stalls and waits for its connections
// to end. Safe to call more than once.
func (s *Raw) Close() {
	s.once.Do(func() { close(s.quit) })
	s.ln.Close()
	s.wg.Wait()
}

// Requests are the requests read so far, as read.
func (s *Raw) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.reqs...)
}

// Arrivals are when each request was read.
func (s *Raw) Arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...)
}

// OnAccept has f decide what happens to each connection accepted from
// now on, n counting from 1, before any request is read: an Action with
// Reset closes it with an RST at once, one with Hangup closes it (FIN);
// any other lets it serve requests.
func (s *Raw) OnAccept(f func(n int64) Action) { s.onAccept.Store(&f) }

// Conns counts the connections accepted.
func (s *Raw) Conns() int64 { return s.conns.Load() }

// Count counts the requests read.
func (s *Raw) Count() int64 { return s.count.Load() }

func (s *Raw) accept() {
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
		n := s.conns.Add(1)
		open.Store(c, nil)
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer open.Delete(c)
			defer c.Close()
			if f := s.onAccept.Load(); f != nil {
				switch a := (*f)(n); {
				case a.Reset:
					c.(*net.TCPConn).SetLinger(0)
					return
				case a.Hangup:
					return
				}
			}
			s.serve(c)
		}()
	}
}

func (s *Raw) serve(c net.Conn) {
	br := bufio.NewReader(c)
	var idle time.Duration // the last answer's IdleClose
	reset := false
	for {
		if idle > 0 {
			c.SetReadDeadline(time.Now().Add(idle))
		}
		req, err := readRawRequest(br)
		if err != nil {
			if reset && errors.Is(err, os.ErrDeadlineExceeded) {
				c.(*net.TCPConn).SetLinger(0)
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		a := s.take(req)
		if a.Stall > 0 && !sleep(a.Stall, s.quit) {
			return
		}
		switch {
		case a.Reset:
			c.(*net.TCPConn).SetLinger(0)
			return
		case a.Hangup:
			return
		}
		idle, reset = a.IdleClose, a.IdleReset
		if !s.answer(c, a, req) {
			return
		}
	}
}

// take records req, and returns the action the script gives it (a plain
// 200 "ok" without a script).
func (s *Raw) take(req []byte) Action {
	n := s.count.Add(1)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	a := Action{Status: 200, Body: "ok"}
	if s.respond != nil {
		a = s.respond(n, req)
	}
	return a
}

// answer writes a's answer to req on c, then its extra bytes after their
// wait. false: the connection is done with (closed by a, or failed).
func (s *Raw) answer(c net.Conn, a Action, req []byte) bool {
	var b bytes.Buffer
	if a.Raw != "" {
		b.WriteString(a.Raw)
	} else {
		writeAnswer(&b, a, req)
	}
	if _, err := c.Write(b.Bytes()); err != nil || a.Close {
		return false
	}
	if a.Extra != "" {
		if !sleep(a.ExtraAfter, s.quit) {
			return false
		}
		if _, err := io.WriteString(c, a.Extra); err != nil {
			return false
		}
	}
	return true
}

// writeAnswer builds the answer a describes to req.
func writeAnswer(b *bytes.Buffer, a Action, req []byte) {
	fmt.Fprintf(b, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n", a.Status, "X", len(a.Body))
	if a.Close {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString(a.Header)
	b.WriteString("\r\n")
	if !bytes.HasPrefix(req, []byte("HEAD ")) { // HEAD: the length of a body not sent
		b.WriteString(a.Body)
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
