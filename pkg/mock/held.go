package mock

import (
	"net"
	"sync"
)

// heldConn is a connection lent for a while (fasthttp's hijacked
// connection, taken back and reused when the hijack handler returns).
// release ends the loan: the connection is closed, the reads and writes
// under way are waited for, and later ones fail with net.ErrClosed
// without touching it. net/http's HTTP/2 server writes its last frames
// (a GOAWAY) from a goroutine of its own that can outlive the serving.
type heldConn struct {
	net.Conn
	mu     sync.Mutex
	closed bool
	ops    sync.WaitGroup
}

func holdConn(c net.Conn) *heldConn { return &heldConn{Conn: c} }

// enter counts an operation in, or reports that the loan has ended.
func (h *heldConn) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.ops.Add(1)
	return true
}

func (h *heldConn) Read(p []byte) (int, error) {
	if !h.enter() {
		return 0, net.ErrClosed
	}
	defer h.ops.Done()
	return h.Conn.Read(p)
}

func (h *heldConn) Write(p []byte) (int, error) {
	if !h.enter() {
		return 0, net.ErrClosed
	}
	defer h.ops.Done()
	return h.Conn.Write(p)
}

// Close closes the connection; the loan goes on until release.
func (h *heldConn) Close() error {
	if !h.enter() {
		return net.ErrClosed
	}
	defer h.ops.Done()
	return h.Conn.Close()
}

// release ends the loan: see heldConn.
func (h *heldConn) release() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.Conn.Close() // cuts a read or write under way
	h.ops.Wait()
}
