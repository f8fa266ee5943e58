package rrpair

import (
	"bufio"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Writer is the one writer of a recording (replay record's, and replay
// mock's --record-misses): exchanges hand it their lines
// through a bounded queue, and it writes them in the order the exchanges
// began, flushing every 200 ms and at Close, so that a file replayed with
// --pace recorded sends what arrived in the order it arrived.
//
// Each exchange takes a ticket when it begins (BeginAt, which also says
// when: its ts, so that ts never goes back in ticket order) and gives it
// back when it ends (Done), with its line or nil. A finished exchange's
// line waits for the exchanges that began before it, within a reorder
// window: an earlier exchange still under way longer than the window
// (a long poll, a slow upload) is passed over, the lines after it are
// written, and its own line, when it ends, is written then and counted
// out of order (OutOfOrder). MaxWaiting bounds the lines held back
// whatever the window: past it, the earliest unfinished exchange is
// passed over too, so a busy recording never holds more than that.
type Writer struct {
	in   chan ticketLine
	done chan error // the writer's result
	o    WriterOptions

	mu    sync.Mutex // guards seq and began
	seq   int64
	began map[int64]time.Time // tickets neither written nor passed over: when each began

	outOfOrder atomic.Int64
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	// Window is how long a finished exchange's line may wait for an
	// earlier exchange still under way (DefaultWindow when 0).
	Window time.Duration
	// Now is the clock (time.Now when nil): the exchanges' begin times
	// and the window are read on it.
	Now func() time.Time
	// Tick is how often the writer flushes and looks for exchanges
	// under way past the window (200 ms when 0).
	Tick time.Duration
}

// DefaultWindow is the reorder window of a recording (--reorder-window).
const DefaultWindow = 2 * time.Second

// MaxWaiting bounds the lines held back for an earlier exchange still
// under way.
const MaxWaiting = 4096

type ticketLine struct {
	seq  int64
	line []byte // nil: the exchange wrote nothing
}

// NewWriter starts the writer of w with the default window, on the real
// clock.
func NewWriter(w io.Writer) *Writer { return NewWriterWith(w, WriterOptions{}) }

// NewWriterWith starts the writer of w with o.
func NewWriterWith(w io.Writer, o WriterOptions) *Writer {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Tick <= 0 {
		o.Tick = 200 * time.Millisecond
	}
	wr := &Writer{in: make(chan ticketLine, 1024), done: make(chan error, 1), o: o, began: map[int64]time.Time{}}
	go wr.run(w)
	return wr
}

// BeginAt takes the ticket of an exchange beginning now and says when now
// is: the two are taken together, so that the ts of lines written in
// ticket order never go back.
func (w *Writer) BeginAt() (seq int64, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seq, at = w.seq, w.o.Now()
	w.seq++
	w.began[seq] = at
	return seq, at
}

// Begin takes the ticket of an exchange beginning now (BeginAt without
// the time).
func (w *Writer) Begin() int64 {
	seq, _ := w.BeginAt()
	return seq
}

// Done gives back ticket seq with the exchange's line (nil for none). It
// blocks while the queue is full. Every ticket must be given back, once.
func (w *Writer) Done(seq int64, line []byte) { w.in <- ticketLine{seq, line} }

// OutOfOrder is the number of lines written out of the order their
// exchanges began in: exchanges under way longer than the window (or
// while MaxWaiting later ones were done).
func (w *Writer) OutOfOrder() int64 { return w.outOfOrder.Load() }

// Close writes what is waiting, flushes, and returns the first write
// error. Every ticket must have been given back (or its exchange cut off
// for good): what still waits for one is written in order past it.
func (w *Writer) Close() error {
	close(w.in)
	return <-w.done
}

// Begun is the number of tickets taken so far: the exchanges begun.
func (w *Writer) Begun() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// beganAt is when ticket seq began; ok is false for one written or
// passed over.
func (w *Writer) beganAt(seq int64) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.began[seq]
	return at, ok
}

// forget drops ticket seq's begin time: it was written or passed over.
func (w *Writer) forget(seq int64) {
	w.mu.Lock()
	delete(w.began, seq)
	w.mu.Unlock()
}

// order is the writer goroutine's state: the next ticket to write, the
// lines of later tickets waiting for it, and the tickets passed over.
type order struct {
	w       *Writer
	out     *bufio.Writer
	err     error
	next    int64
	waiting map[int64][]byte
	passed  map[int64]struct{}
}

func (o *order) keep(err error) {
	if o.err == nil {
		o.err = err
	}
}

func (o *order) write(line []byte) {
	if line != nil {
		_, err := o.out.Write(line)
		o.keep(err)
	}
}

// drain writes from next on, as far as the lines go.
func (o *order) drain() {
	for {
		line, ok := o.waiting[o.next]
		if !ok {
			return
		}
		delete(o.waiting, o.next)
		o.w.forget(o.next)
		o.write(line)
		o.next++
	}
}

// pass passes over the tickets before seq still under way, and writes
// what waited for them.
func (o *order) pass(seq int64) {
	for s := o.next; s < seq; s++ {
		o.passed[s] = struct{}{}
		o.w.forget(s)
	}
	o.next = seq
	o.drain()
}

// take handles a ticket given back.
func (o *order) take(tl ticketLine) {
	switch {
	case tl.seq == o.next:
		o.w.forget(tl.seq)
		o.write(tl.line)
		o.next++
		o.drain()
	case tl.seq < o.next: // passed over earlier
		if _, ok := o.passed[tl.seq]; ok {
			delete(o.passed, tl.seq)
			if tl.line != nil {
				o.w.outOfOrder.Add(1)
			}
			o.write(tl.line)
		}
	default:
		o.waiting[tl.seq] = tl.line
		for len(o.waiting) > MaxWaiting {
			o.pass(minKey(o.waiting))
		}
	}
}

// passStale passes over the earliest exchanges under way longer than the
// window, while lines wait for them.
func (o *order) passStale() {
	for len(o.waiting) > 0 {
		at, ok := o.w.beganAt(o.next)
		if ok && o.w.o.Now().Sub(at) < o.w.o.Window {
			return
		}
		o.pass(o.next + 1)
	}
}

// run is the writer's goroutine.
func (w *Writer) run(out io.Writer) {
	o := &order{w: w, out: bufio.NewWriterSize(out, 64<<10), waiting: map[int64][]byte{}, passed: map[int64]struct{}{}}
	tick := time.NewTicker(w.o.Tick)
	defer tick.Stop()
	for {
		select {
		case tl, ok := <-w.in:
			if !ok {
				for len(o.waiting) > 0 { // tickets never given back: pass them
					o.pass(minKey(o.waiting))
				}
				o.keep(o.out.Flush())
				w.done <- o.err
				return
			}
			o.take(tl)
			o.passStale()
		case <-tick.C:
			o.passStale()
			o.keep(o.out.Flush())
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
