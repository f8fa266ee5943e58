//go:build unix

package sniff

import (
	"path/filepath"
	"syscall"
	"testing"
)

// TestHeadOfAFIFO: a named pipe is not opened again: its data is gone,
// and the open would wait for a writer that never comes (this test would
// hang).
func TestHeadOfAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipe here: %v", err)
	}
	if got := Head(fifo); got != nil {
		t.Errorf("Head of a named pipe = %q, want nil", got)
	}
}
