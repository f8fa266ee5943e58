// Package metrics serves a run's live numbers in the Prometheus text
// exposition format (--metrics ADDR): requests, errors by kind, responses
// by status class, dropped and late iterations, end-to-end events per
// stage, in-flight requests, VUs, the current step and target rate, and
// the latency from due time, both as a histogram with buckets and as
// today's quantiles (a summary). Every family has its # HELP and # TYPE.
// The numbers are read from the run only when scraped.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/recording"
)

// Sources are where the numbers come from. Only Recorder is required; a
// family whose source is nil is not written.
type Sources struct {
	Recorder interface{ Live() recording.Live }
	// Buckets returns the latency's cumulative buckets at bounds.
	Buckets func(bounds []float64) recording.Buckets
	// VUs reports the VUs started and the requests in flight.
	VUs func() (vus int, inFlight int64)
	// Dropped and Late count the iterations an open model dropped and the
	// requests begun late.
	Dropped, Late func() int64
	// Target reports the step under way (from 1; 0: none) and the rate
	// asked for now; ok false when the run has no target rate.
	Target func() (step int, rate float64, ok bool)
	// Events reports what each end-to-end stage has seen.
	Events func() []e2e.StageCount
}

// LatencyBounds are the upper bounds, in seconds, of the latency
// histogram's buckets.
var LatencyBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Server serves GET /metrics.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
	src  atomic.Pointer[Sources]
}

// Listen binds addr (":9090", "127.0.0.1:0") at once, so that a bad address
// fails before any traffic, and serves src in the background until Close.
// Before the first Set, a server listened with a zero Sources serves an
// empty page.
func Listen(addr string, src Sources) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, done: make(chan error, 1)}
	s.Set(src)
	mux := http.NewServeMux()
	mux.Handle("/metrics", http.HandlerFunc(s.serve))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Set has the server serve src from the next scrape on: a capacity
// search runs one run after another behind one address.
func (s *Server) Set(src Sources) { s.src.Store(&src) }

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

// serve writes a fresh snapshot on every scrape.
func (s *Server) serve(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	Write(&b, *s.src.Load())
	w.Write([]byte(b.String()))
}

// Write writes the exposition of src to b.
func Write(b *strings.Builder, src Sources) {
	if src.Recorder == nil {
		return
	}
	l := src.Recorder.Live()
	e := expo{b}
	e.family("replay_requests_total", "counter", "Requests begun (succeeded + failed).")
	e.sample("replay_requests_total", "", float64(l.Requests))
	e.family("replay_succeeded_total", "counter", "Requests answered with a status below 400.")
	e.sample("replay_succeeded_total", "", float64(l.Succeeded))
	e.family("replay_failed_total", "counter", "Requests answered 400 or above, or failed without an answer.")
	e.sample("replay_failed_total", "", float64(l.Failed))
	e.family("replay_bytes_in_total", "counter", "Response bytes read.")
	e.sample("replay_bytes_in_total", "", float64(l.BytesIn))
	e.family("replay_bytes_out_total", "counter", "Request bytes written.")
	e.sample("replay_bytes_out_total", "", float64(l.BytesOut))
	e.family("replay_errors_total", "counter", "Requests that failed without an answer, by kind.")
	kinds := make([]string, 0, len(l.Errors))
	for k := range l.Errors {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		e.sample("replay_errors_total", label("kind", k), float64(l.Errors[k]))
	}
	e.family("replay_responses_total", "counter", "Requests answered, by status class.")
	for class := 1; class <= 5; class++ {
		e.sample("replay_responses_total", label("class", strconv.Itoa(class)+"xx"), float64(l.StatusClass[class]))
	}
	if src.Dropped != nil {
		e.family("replay_dropped_total", "counter", "Iterations an open model could not start: every VU (--max-vus) was busy.")
		e.sample("replay_dropped_total", "", float64(src.Dropped()))
	}
	if src.Late != nil {
		e.family("replay_late_total", "counter", "Requests begun more than --late-after past their due time.")
		e.sample("replay_late_total", "", float64(src.Late()))
	}
	if src.Events != nil {
		e.family("replay_e2e_events_total", "counter", "Events seen by a sink, each once, by end-to-end stage.")
		stages := src.Events()
		for _, st := range stages {
			e.sample("replay_e2e_events_total", label("stage", st.Name), float64(st.Unique))
		}
		e.family("replay_e2e_duplicates_total", "counter", "Deliveries of an event a sink had seen already, by end-to-end stage.")
		for _, st := range stages {
			e.sample("replay_e2e_duplicates_total", label("stage", st.Name), float64(st.Duplicates))
		}
	}
	if src.VUs != nil {
		vus, inFlight := src.VUs()
		e.family("replay_vus", "gauge", "VUs started.")
		e.sample("replay_vus", "", float64(vus))
		e.family("replay_in_flight", "gauge", "Requests in flight.")
		e.sample("replay_in_flight", "", float64(inFlight))
	}
	if src.Target != nil {
		if step, rate, ok := src.Target(); ok {
			e.family("replay_step", "gauge", "The step under way: the --stages item, or the capacity search's step (from 1; 0 without steps).")
			e.sample("replay_step", "", float64(step))
			e.family("replay_target_rate", "gauge", "The arrival rate asked for now, iterations per second.")
			e.sample("replay_target_rate", "", rate)
		}
	}
	if src.Buckets != nil {
		h := src.Buckets(LatencyBounds)
		e.family("replay_request_duration_seconds", "histogram", "Latency of answered requests from their due time, seconds.")
		for i, le := range h.Bounds {
			e.sample("replay_request_duration_seconds_bucket", label("le", strconv.FormatFloat(le, 'g', -1, 64)), float64(h.Counts[i]))
		}
		e.sample("replay_request_duration_seconds_bucket", label("le", "+Inf"), float64(h.Count))
		e.sample("replay_request_duration_seconds_sum", "", h.SumS)
		e.sample("replay_request_duration_seconds_count", "", float64(h.Count))
	}
	e.family("replay_latency_seconds", "summary", "Latency quantiles of answered requests from their due time since the start, seconds (HDR).")
	for _, q := range []struct {
		name string
		ms   float64
	}{{"0.5", l.Latency.P50}, {"0.9", l.Latency.P90}, {"0.95", l.Latency.P95}, {"0.99", l.Latency.P99}, {"0.999", l.Latency.P999}, {"1", l.Latency.Max}} {
		e.sample("replay_latency_seconds", label("quantile", q.name), q.ms/1000)
	}
	answered := l.Requests - sumErrors(l.Errors)
	e.sample("replay_latency_seconds_sum", "", l.Latency.Mean/1000*float64(answered))
	e.sample("replay_latency_seconds_count", "", float64(answered))
}

// sumErrors adds the counts of errs.
func sumErrors(errs map[string]int64) int64 {
	var n int64
	for _, v := range errs {
		n += v
	}
	return n
}

// expo writes the text exposition format (version 0.0.4).
type expo struct{ b *strings.Builder }

// family writes a family's # HELP and # TYPE lines.
func (e expo) family(name, typ, help string) {
	e.b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

// sample writes one sample; labels is "" or `{k="v"}`.
func (e expo) sample(name, labels string, v float64) {
	e.b.WriteString(name + labels + " " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
}

// label is one label, its value escaped as the format asks (\\, \", \n).
func label(k, v string) string {
	v = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
	return "{" + k + `="` + v + `"}`
}
