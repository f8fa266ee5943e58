package capture

import (
	"fmt"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/replaytest"
)

// TestWriterOrder: lines come out in the order their tickets were taken,
// whatever order they are given back in; an empty ticket writes nothing.
func TestWriterOrder(t *testing.T) {
	var out replaytest.Buffer
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
	if w.Late() != 0 {
		t.Errorf("late %d", w.Late())
	}
}

// TestWriterPassesOver: an exchange still under way when MaxWaiting later
// ones are done is passed over; its line is written when it comes, counted
// late.
func TestWriterPassesOver(t *testing.T) {
	var out replaytest.Buffer
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
	if len(lines) != MaxWaiting+2 || lines[0] != "1" || lines[len(lines)-1] != "slow" || w.Late() != 1 {
		t.Errorf("%d lines, first %q, last %q, late %d", len(lines), lines[0], lines[len(lines)-1], w.Late())
	}
}
