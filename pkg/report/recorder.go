package report

import (
	"sync"
	"time"

	"github.com/replay-dev/replay/pkg/vu"
)

// queueLen is the capacity of a Recorder's channel, in results (about
// 3.5 MB): enough to absorb a burst while the folding goroutine catches up.
const queueLen = 1 << 16

// Recorder is the async recorder: a vu.Sink whose Record hands each result
// to one folding goroutine through a buffered channel. That goroutine owns
// every histogram and counter, so the hot path takes no lock and allocates
// nothing.
//
// Use: NewRecorder, give it to the VUs, Close once they have all returned,
// then Summary.
type Recorder struct {
	ch    chan vu.Result
	done  chan struct{} // closed when the folding goroutine has exited
	close sync.Once
	f     *fold // owned by the folding goroutine until done is closed
}

var _ vu.Sink = (*Recorder)(nil)

// NewRecorder starts a Recorder for the endpoint table endpoints (the
// names that vu.Result.Endpoint indexes; an index outside it is counted
// under "other"). Its goroutine runs until Close.
func NewRecorder(endpoints []string) *Recorder {
	r := &Recorder{
		ch:   make(chan vu.Result, queueLen),
		done: make(chan struct{}),
		f:    newFold(endpoints),
	}
	go r.run()
	return r
}

// drainEvery is how often the folding goroutine empties the queue.
const drainEvery = 5 * time.Millisecond

// run is the folding goroutine. It drains the queue on a tick rather than
// waiting on it: a goroutine parked on an empty channel must be woken by
// every send, which would cost each request a wake-up; a send into a
// buffered channel nobody waits on is only a copy. Results are folded at
// most drainEvery after they are recorded.
func (r *Recorder) run() {
	defer close(r.done)
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	for {
		for {
			select {
			case res, ok := <-r.ch:
				if !ok {
					return
				}
				r.f.add(res)
				continue
			default:
			}
			break
		}
		<-tick.C
	}
}

// Record implements vu.Sink: it queues res for folding. It is safe for
// concurrent use, never drops a result, does not allocate, and blocks only
// while the queue is full. Calling it after Close panics.
func (r *Recorder) Record(res vu.Result) {
	r.ch <- res
}

// Close stops the Recorder once every result recorded so far is folded,
// and returns after that. Call it after the last Record has returned;
// further calls do nothing.
func (r *Recorder) Close() {
	r.close.Do(func() { close(r.ch) })
	<-r.done
}
