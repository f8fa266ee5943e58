package mock

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
)

// watchedConn tells when a Read has begun on it, and whether it returned.
type watchedConn struct {
	net.Conn
	began    chan struct{}
	returned atomic.Bool
}

func (w *watchedConn) Read(p []byte) (int, error) {
	close(w.began)
	n, err := w.Conn.Read(p)
	w.returned.Store(true)
	return n, err
}

// A held connection's release cuts a read under way and waits for it;
// after it, reads and writes fail without reaching the connection.
func TestHeldConnRelease(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	w := &watchedConn{Conn: a, began: make(chan struct{})}
	h := holdConn(w)
	read := make(chan error, 1)
	go func() {
		_, err := h.Read(make([]byte, 1))
		read <- err
	}()
	<-w.began
	h.release()
	if !w.returned.Load() {
		t.Fatal("release returned before the read under way ended")
	}
	if err := <-read; err == nil {
		t.Fatal("the read under way returned no error after release")
	}
	if _, err := h.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after release: %v, want net.ErrClosed", err)
	}
	if _, err := h.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after release: %v, want net.ErrClosed", err) // a second Read of w would close began again: it never gets there
	}
}
