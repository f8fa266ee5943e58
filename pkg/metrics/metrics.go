// Package metrics serves a run's live numbers in the Prometheus text format
// (--metrics ADDR): requests, errors by kind, responses by status class,
// in-flight requests, VUs, and latency percentiles (from due time) from the
// live histogram. It uses VictoriaMetrics/metrics, a small, well-kept
// writer of that format, and reads the recorder only when scraped.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
	"github.com/replay-dev/replay/pkg/report"
)

// Sources are where the numbers come from.
type Sources struct {
	Recorder interface{ Live() report.Live }
	// VUs reports the VUs started and the requests in flight.
	VUs func() (vus int, inFlight int64)
}

// Server serves GET /metrics.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
}

// Listen binds addr (":9090", "127.0.0.1:0") at once, so that a bad address
// fails before any traffic, and serves in the background until Close.
func Listen(addr string, src Sources) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler(src))
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting a scrape under way finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}

// handler writes a fresh snapshot on every scrape.
func handler(src Sources) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		set := vm.NewSet()
		l := src.Recorder.Live()
		set.NewCounter("replay_requests_total").Set(uint64(l.Requests))
		set.NewCounter("replay_succeeded_total").Set(uint64(l.Succeeded))
		set.NewCounter("replay_failed_total").Set(uint64(l.Failed))
		set.NewCounter("replay_bytes_in_total").Set(uint64(l.BytesIn))
		set.NewCounter("replay_bytes_out_total").Set(uint64(l.BytesOut))
		for kind, n := range l.Errors {
			set.NewCounter(fmt.Sprintf(`replay_errors_total{kind=%q}`, kind)).Set(uint64(n))
		}
		for class := 1; class <= 5; class++ {
			set.NewCounter(`replay_responses_total{class="` + strconv.Itoa(class) + `xx"}`).Set(uint64(l.StatusClass[class]))
		}
		vus, inFlight := 0, int64(0)
		if src.VUs != nil {
			vus, inFlight = src.VUs()
		}
		set.NewGauge("replay_vus", func() float64 { return float64(vus) })
		set.NewGauge("replay_in_flight", func() float64 { return float64(inFlight) })
		for _, q := range []struct {
			name string
			ms   float64
		}{{"0.5", l.Latency.P50}, {"0.9", l.Latency.P90}, {"0.95", l.Latency.P95}, {"0.99", l.Latency.P99}, {"0.999", l.Latency.P999}, {"1", l.Latency.Max}} {
			seconds := q.ms / 1000
			set.NewGauge(`replay_latency_seconds{quantile="`+q.name+`"}`, func() float64 { return seconds })
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		set.WritePrometheus(w)
	})
}
