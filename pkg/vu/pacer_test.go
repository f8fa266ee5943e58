package vu

import (
	"testing"
	"time"
)

// count is how many iterations p has due before t.
func count(p Pacer, t time.Duration) int64 {
	var k int64
	for {
		due, ok := p.Due(k)
		if !ok || due >= t {
			return k
		}
		k++
	}
}

func TestRecordedPacer(t *testing.T) {
	offsets := []time.Duration{0, 100 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond}
	once := NewRecordedPacer(offsets, false, 0)
	for k, want := range offsets {
		if due, ok := once.Due(int64(k)); !ok || due != want {
			t.Errorf("Due(%d) = %v, want %v", k, due, want)
		}
	}
	if _, ok := once.Due(4); ok {
		t.Error("a once walk goes past the file")
	}
	loop := NewRecordedPacer(offsets, true, time.Second)
	// span 400ms + mean gap 133ms: the second walk starts at 533ms.
	if due, ok := loop.Due(4); !ok || due != 533333333*time.Nanosecond {
		t.Errorf("Due(4) = %v, want 533.333333ms", due)
	}
	if got := count(loop, time.Hour); got != 8 { // 0 100 100 400, then 533 633 633 933
		t.Errorf("loop for 1s: got %d iterations, want 8", got)
	}
}
