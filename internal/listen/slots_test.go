package listen

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestSlots: past its bound a Take waits, is counted and logged (once for
// a burst), goes on once a slot is given back, and gives up when stop
// closes.
func TestSlots(t *testing.T) {
	var buf bytes.Buffer
	s := NewSlots(2, "mock", zerolog.New(&buf))
	stop := make(chan struct{})
	if !s.Take(stop) || !s.Take(stop) {
		t.Fatal("a free slot was not taken at once")
	}
	if s.Waited() != 0 || buf.Len() != 0 {
		t.Fatalf("waited %d, logged %q before the bound", s.Waited(), buf.String())
	}
	took := make(chan bool)
	go func() { took <- s.Take(stop) }()
	select {
	case <-took:
		t.Fatal("a third Take went on with 2 slots taken")
	case <-time.After(100 * time.Millisecond):
	}
	s.Give()
	if !<-took {
		t.Fatal("the waiting Take did not get the slot given back")
	}
	go func() { took <- s.Take(stop) }()
	time.Sleep(50 * time.Millisecond)
	close(stop)
	if <-took {
		t.Fatal("a Take waiting when stop closed took a slot")
	}
	if s.Waited() != 2 {
		t.Errorf("waited %d, want 2", s.Waited())
	}
	if n := strings.Count(buf.String(), "--max-conns"); n != 1 || !strings.Contains(buf.String(), `"max_conns":2`) {
		t.Errorf("logged %q: want one warning naming --max-conns and its bound within the second", buf.String())
	}
}
