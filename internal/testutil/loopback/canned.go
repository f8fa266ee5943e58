// Package loopback has HTTP/1.1 test peers on 127.0.0.1 for the project's
// tests and benchmarks: a canned server, a raw one that answers what a
// test says, the catalogue of hostile answers (drawn by a seed or a
// fuzzer's bytes; the HTTP/2 one in h2peer draws by the same rules), an
// accept loop for a test's own handler, and a CONNECT dialer. A test
// helper: nothing replay builds imports it.
package loopback

import (
	"bytes"
	"net"
	"strconv"
	"sync"
)

// Canned is a loopback HTTP/1.1 server that answers every request with the
// same bytes and allocates nothing per request, so that the allocations a
// benchmark reports are the client's. It frames requests by Content-Length
// (spelled "Content-Length"), which is all a replay of this project sends,
// and closes a connection after the answer to a request that says
// "Connection: close", as servers do.
type Canned struct {
	ln     net.Listener
	answer []byte
	wg     sync.WaitGroup
}

// Accepted202 is a small JSON 202 answer.
const Accepted202 = "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 21\r\n\r\n{\"status\":\"accepted\"}"

// NewCanned starts a Canned server answering answer.
func NewCanned(answer string) (*Canned, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Canned{ln: ln, answer: []byte(answer)}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// URL is "http://127.0.0.1:PORT".
func (s *Canned) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server and waits for its connections to end.
func (s *Canned) Close() {
	s.ln.Close()
	s.wg.Wait()
}

func (s *Canned) accept() {
	defer s.wg.Done()
	var mu sync.Mutex // guards conns
	conns := map[net.Conn]bool{}
	defer func() {
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
	}
}

// buffers are Canned's connections' read buffers, reused, so that a
// connection per request allocates none.
var buffers = sync.Pool{New: func() any { return new([256 << 10]byte) }}

func (s *Canned) serve(c net.Conn) {
	b := buffers.Get().(*[256 << 10]byte)
	defer buffers.Put(b)
	buf := b[:]
	n := 0
	for {
		m, err := c.Read(buf[n:])
		if err != nil {
			return
		}
		n += m
		for {
			end := bytes.Index(buf[:n], []byte("\r\n\r\n"))
			if end < 0 {
				break
			}
			size := end + 4 + bodyLength(buf[:end])
			if size > n {
				if size > len(buf) {
					return // larger than this server takes
				}
				break
			}
			if _, err := c.Write(s.answer); err != nil {
				return
			}
			if bytes.Contains(buf[:end], []byte("\r\nConnection: close\r\n")) {
				return
			}
			n = copy(buf, buf[size:n])
		}
	}
}

func bodyLength(head []byte) int {
	i := bytes.Index(head, []byte("Content-Length: "))
	if i < 0 {
		return 0
	}
	rest := head[i+len("Content-Length: "):]
	if j := bytes.IndexByte(rest, '\r'); j >= 0 {
		rest = rest[:j]
	}
	n, _ := strconv.Atoi(string(rest))
	return n
}
