package outfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestExitWaitsForHolds: an exit tells the holders to hurry, waits until
// they release, then removes the temporary files still tracked; a file
// put in place before is kept, and nothing is created after.
func TestExitWaitsForHolds(t *testing.T) {
	g := newExitGate()
	dir := t.TempDir()
	left := filepath.Join(dir, ".out.json.1.tmp")
	os.WriteFile(left, []byte("half"), 0o644)
	if !g.track(left) {
		t.Fatal("track refused before the exit")
	}
	hurry, release := g.hold()
	exited := make(chan struct{})
	go func() { g.exit(); close(exited) }()
	select {
	case <-hurry:
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was never told to hurry")
	}
	select {
	case <-exited:
		t.Fatal("the exit did not wait for the hold")
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the temporary file went while held: %v", err)
	}
	release()
	release() // a second release does nothing
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the exit never ended after the release")
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
	if g.track(filepath.Join(dir, ".late.tmp")) {
		t.Error("a temporary file was tracked after the exit")
	}
}
