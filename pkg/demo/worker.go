package demo

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The asynchronous path: with Options.SinkURL set, an accepted event that
// carries a correlation ID (a "ce-id" header, CloudEvents binary mode) is
// queued, and a worker delivers it later, at most Options.WorkerRate events
// a second, as a POST to SinkURL + "/stage/processed" with the same ce-id:
// the work an event-driven service does behind its 202. Under a load above
// the worker's rate the queue grows, and the time from send to delivery
// with it, while the API still answers in a millisecond. With
// Options.WorkerDelay, no event is delivered sooner than that after it
// was queued: a pipeline slow by construction, not by load.

// DefaultWorkerRate is how many events a second the demo's worker delivers.
const DefaultWorkerRate = 3000

// maxQueue bounds the queue; an event that finds it full is dropped (and
// counted), as a real queue with a retention limit would.
const maxQueue = 200_000

// worker delivers queued events to the sink.
type worker struct {
	sink    string // POST target
	rate    float64
	delay   time.Duration // the least time from queued to delivered
	queue   chan queued
	client  *fasthttp.Client
	dropped atomic.Int64
	sent    atomic.Int64
	failed  atomic.Int64
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// queued is an event in the queue: its ID, and when it was queued.
type queued struct {
	id []byte
	at time.Time
}

func startWorker(sinkURL string, rate float64, delay time.Duration) (*worker, error) {
	u, err := url.Parse(sinkURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("demo sink %q: want http://host:port", sinkURL)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("demo sink %q: the demo delivers on loopback only", sinkURL)
	}
	if rate <= 0 {
		rate = DefaultWorkerRate
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{sink: sinkURL + "/stage/processed", rate: rate, delay: max(delay, 0), queue: make(chan queued, maxQueue), stop: cancel,
		client: &fasthttp.Client{MaxConnsPerHost: 4, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}}
	w.wg.Add(1)
	go w.run(ctx)
	return w, nil
}

// enqueue queues an event's ID; it never blocks.
func (w *worker) enqueue(id []byte) {
	select {
	case w.queue <- queued{id: append([]byte(nil), id...), at: time.Now()}:
	default:
		w.dropped.Add(1)
	}
}

// run delivers at most rate events a second, in order, each no sooner
// than delay after it was queued, until stopped.
func (w *worker) run(ctx context.Context) {
	defer w.wg.Done()
	interval := time.Duration(float64(time.Second) / w.rate)
	next := time.Now()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for {
		var ev queued
		select {
		case <-ctx.Done():
			return
		case ev = <-w.queue:
		}
		id := ev.id
		if due := ev.at.Add(w.delay); due.After(next) {
			next = due
		}
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		next = next.Add(interval)
		if now := time.Now(); next.Before(now.Add(-time.Second)) {
			next = now // idle for a while: no burst to catch up
		}
		req.Reset()
		req.SetRequestURI(w.sink)
		req.Header.SetMethod("POST")
		req.Header.Set("ce-id", string(id))
		req.Header.Set("ce-specversion", "1.0")
		req.Header.Set("ce-type", "demo.event.processed")
		req.Header.Set("ce-source", "replay-demo")
		if err := w.client.Do(req, resp); err != nil || resp.StatusCode() >= 300 {
			w.failed.Add(1)
			continue
		}
		w.sent.Add(1)
	}
}

func (w *worker) close() {
	w.stop()
	w.wg.Wait()
}
