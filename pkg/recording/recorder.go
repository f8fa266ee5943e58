package recording

import (
	"sync"
	"time"

	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/result"
)

// queueLen is the capacity of a Recorder's channel, in results (about
// 3.5 MB): enough to absorb a burst while the folding goroutine catches up.
const queueLen = 1 << 16

// Recorder is the async recorder: a result.Sink whose Record hands each result
// to one folding goroutine through a buffered channel. That goroutine owns
// every histogram and counter, so the hot path takes no lock and allocates
// nothing.
//
// Use: NewRecorder, give it to the VUs, Close once they have all returned,
// then Summary.
type Recorder struct {
	ch    chan result.Result
	done  chan struct{} // closed when the folding goroutine has exited
	close sync.Once
	// mu guards f: the folding goroutine holds it while it folds a batch,
	// Live while it reads. Nothing on the VUs' path takes it.
	mu sync.Mutex
	f  *fold
}

var _ result.Sink = (*Recorder)(nil)

// NewRecorder starts a Recorder for the endpoint table endpoints (the
// names that result.Result.Endpoint indexes; an index outside it is counted
// under "other"). Its goroutine runs until Close.
func NewRecorder(endpoints []string) *Recorder {
	r := &Recorder{
		ch:   make(chan result.Result, queueLen),
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
		if !r.drain() {
			return
		}
		<-tick.C
	}
}

// drain folds what is queued; false once the queue is closed and empty.
func (r *Recorder) drain() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		select {
		case res, ok := <-r.ch:
			if !ok {
				return false
			}
			r.f.add(res)
		default:
			return true
		}
	}
}

// Live returns the recorder's part of the live counters so far (the
// results folded; the engine's fields are zero: the run adds them), at
// most drainEvery late. It is safe to call during a run (a metrics
// scrape); it costs a lock and a few percentile look-ups, never the VUs
// anything.
func (r *Recorder) Live() Live {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.f
	l := Live{
		Requests: f.requests, Succeeded: f.succeeded, Failed: f.failed,
		BytesIn: f.bytesIn, BytesOut: f.bytesOut,
		Errors: errorCounts(&f.errors), Latency: hist.LatencyOf(f.latency),
	}
	if n := len(f.intervals); n > 0 {
		last := f.intervals[n-1]
		l.LastInterval = &last
	}
	if f.ws != nil {
		l.WebSocket = f.ws.live()
	}
	for code, st := range f.status {
		class := int(code) / 100
		if class < 1 || class > 5 {
			class = 0
		}
		l.StatusClass[class] += st.count
	}
	return l
}

// Record implements result.Sink: it queues res for folding. It is safe for
// concurrent use, never drops a result, does not allocate, and blocks only
// while the queue is full. Calling it after Close panics.
func (r *Recorder) Record(res result.Result) {
	r.ch <- res
}

// Close stops the Recorder once every result recorded so far is folded,
// and returns after that. Call it after the last Record has returned;
// further calls do nothing.
func (r *Recorder) Close() {
	r.close.Do(func() { close(r.ch) })
	<-r.done
}
