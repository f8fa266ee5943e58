package capture

import (
	"bufio"
	"io"
	"sync/atomic"
	"time"
)

// Writer is the one writer of a recording: exchanges hand it their lines
// through a bounded queue, and it writes them in the order the exchanges
// began, flushing every 200 ms and at Close. Each exchange takes a ticket
// when it begins (Begin) and gives it back when it ends (Done), with its
// line or nil; a line waits for the lines of the exchanges that began
// before it, up to MaxWaiting lines: past that, the earliest unfinished
// exchange is passed over and its line, when it comes, is written as it
// arrives (a long poll does not hold a busy recording in memory).
type Writer struct {
	in   chan ticketLine
	done chan error // the writer's result
	seq  atomic.Int64
	// late counts lines written out of order: their exchange was passed
	// over (MaxWaiting).
	late atomic.Int64
}

// MaxWaiting bounds the lines held back for an earlier exchange still
// under way.
const MaxWaiting = 4096

type ticketLine struct {
	seq  int64
	line []byte // nil: the exchange wrote nothing
}

// NewWriter starts the writer of w.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{in: make(chan ticketLine, 1024), done: make(chan error, 1)}
	go wr.run(w)
	return wr
}

// Begin takes the ticket of an exchange beginning now.
func (w *Writer) Begin() int64 { return w.seq.Add(1) - 1 }

// Done gives back ticket seq with the exchange's line (nil for none). It
// blocks while the queue is full. Every ticket must be given back, once.
func (w *Writer) Done(seq int64, line []byte) { w.in <- ticketLine{seq, line} }

// Late is the number of lines written out of the order their exchanges
// began in (MaxWaiting).
func (w *Writer) Late() int64 { return w.late.Load() }

// Close writes what is waiting, flushes, and returns the first write
// error. Every ticket must have been given back (or its exchange cut off
// for good): what still waits for one is written in order past it.
func (w *Writer) Close() error {
	close(w.in)
	return <-w.done
}

// run is the writer's goroutine.
func (w *Writer) run(out io.Writer) {
	bw := bufio.NewWriterSize(out, 64<<10)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var err error
	keep := func(e error) {
		if err == nil {
			err = e
		}
	}
	var next int64                 // the next ticket to write
	waiting := map[int64][]byte{}  // lines of later tickets
	passed := map[int64]struct{}{} // tickets passed over, written when they come
	write := func(line []byte) {
		if line != nil {
			_, e := bw.Write(line)
			keep(e)
		}
	}
	drain := func() { // write from next on, as far as the lines go
		for {
			line, ok := waiting[next]
			if !ok {
				return
			}
			delete(waiting, next)
			write(line)
			next++
		}
	}
	for {
		select {
		case tl, ok := <-w.in:
			if !ok {
				for len(waiting) > 0 { // tickets never given back: pass them
					next = minKey(waiting)
					drain()
				}
				keep(bw.Flush())
				w.done <- err
				return
			}
			switch {
			case tl.seq == next:
				write(tl.line)
				next++
				drain()
			case tl.seq < next: // passed over earlier
				if _, ok := passed[tl.seq]; ok {
					delete(passed, tl.seq)
					if tl.line != nil {
						w.late.Add(1)
					}
					write(tl.line)
				}
			default:
				waiting[tl.seq] = tl.line
				for len(waiting) > MaxWaiting {
					m := minKey(waiting)
					for s := next; s < m; s++ {
						passed[s] = struct{}{}
					}
					next = m
					drain()
				}
			}
		case <-tick.C:
			keep(bw.Flush())
		}
	}
}

func minKey(m map[int64][]byte) int64 {
	first, k := true, int64(0)
	for s := range m {
		if first || s < k {
			first, k = false, s
		}
	}
	return k
}
