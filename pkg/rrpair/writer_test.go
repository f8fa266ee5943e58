package rrpair

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWriterOrder: lines come out in the order their tickets were taken,
// whatever order they are given back in; an empty ticket writes nothing.
func TestWriterOrder(t *testing.T) {
	var out lockedBuffer
	w := NewWriter(&out)
	var seqs []int64
	for range 5 {
		seqs = append(seqs, w.Begin())
	}
	for _, i := range []int{3, 1, 4, 0, 2} {
		line := []byte(fmt.Sprintf("%d\n", seqs[i]))
		if i == 2 {
			line = nil
		}
		w.Done(seqs[i], line)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "0\n1\n3\n4\n" {
		t.Errorf("wrote %q", got)
	}
	if w.OutOfOrder() != 0 {
		t.Errorf("late %d", w.OutOfOrder())
	}
}

// TestWriterPassesOver: an exchange still under way when MaxWaiting later
// ones are done is passed over; its line is written when it comes, counted
// late.
func TestWriterPassesOver(t *testing.T) {
	var out lockedBuffer
	w := NewWriter(&out)
	slow := w.Begin()
	for range MaxWaiting + 1 {
		s := w.Begin()
		w.Done(s, []byte(fmt.Sprintf("%d\n", s)))
	}
	w.Done(slow, []byte("slow\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != MaxWaiting+2 || lines[0] != "1" || lines[len(lines)-1] != "slow" || w.OutOfOrder() != 1 {
		t.Errorf("%d lines, first %q, last %q, late %d", len(lines), lines[0], lines[len(lines)-1], w.OutOfOrder())
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestWriterWindow: a finished exchange's line waits for an earlier one
// still under way, within the window: written in the order they began
// when the earlier one ends in time; passed over once it has been under
// way longer than the window (the lines after it written), and written
// when it ends, counted out of order. BeginAt's times never go back in
// ticket order.
func TestWriterWindow(t *testing.T) {
	for _, tt := range []struct {
		name       string
		slowFor    time.Duration // how long the first exchange is under way
		want       string
		outOfOrder int64
	}{
		{"ended within the window", 1900 * time.Millisecond, "slow\nfast1\nfast2\nlater\n", 0},
		{"under way past the window", 2100 * time.Millisecond, "fast1\nfast2\nlater\nslow\n", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)}
			var out lockedBuffer
			w := NewWriterWith(&out, WriterOptions{Window: 2 * time.Second, Now: clock.now, Tick: time.Millisecond})
			slow, t0 := w.BeginAt()
			clock.add(100 * time.Millisecond)
			f1, t1 := w.BeginAt()
			f2, t2 := w.BeginAt()
			if !t0.Before(t1) || t2.Before(t1) {
				t.Errorf("begin times %v %v %v go back", t0, t1, t2)
			}
			w.Done(f1, []byte("fast1\n"))
			w.Done(f2, []byte("fast2\n"))
			clock.add(tt.slowFor - 100*time.Millisecond)
			later := w.Begin()
			w.Done(later, []byte("later\n"))
			if tt.outOfOrder > 0 { // the writer sees the window pass (a Done or its tick), then the slow one ends
				deadline := time.Now().Add(5 * time.Second)
				for !strings.Contains(out.String(), "later") && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
			}
			w.Done(slow, []byte("slow\n"))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tt.want || w.OutOfOrder() != tt.outOfOrder {
				t.Errorf("wrote %q, %d out of order; want %q, %d", got, w.OutOfOrder(), tt.want, tt.outOfOrder)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer the writer's goroutine writes while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
