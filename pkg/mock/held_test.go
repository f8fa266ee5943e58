package mock

import (
	"errors"
	"net"
	"testing"
	"time"
)

// A held connection's release cuts a read under way and waits for it;
// after it, reads and writes fail without reaching the connection.
func TestHeldConnRelease(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	h := holdConn(a)
	read := make(chan error, 1)
	go func() {
		_, err := h.Read(make([]byte, 1))
		read <- err
	}()
	time.Sleep(20 * time.Millisecond) // the read is under way (a margin, not a condition: release must wait either way)
	h.release()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("the read under way returned no error after release")
		}
	default:
		t.Fatal("release returned before the read under way ended")
	}
	if _, err := h.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after release: %v, want net.ErrClosed", err)
	}
	if _, err := h.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after release: %v, want net.ErrClosed", err)
	}
}
