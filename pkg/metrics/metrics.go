// Package metrics serves a run's live numbers in the Prometheus text
// exposition format (--metrics ADDR): requests, errors by kind, responses
// by status class, dropped and late iterations, end-to-end events per
// stage, in-flight requests, VUs, the current step and target rate (in
// iterations and in requests a second), and
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
	// asked for now, iterations a second; ok false when the run has no
	// target rate.
	Target func() (step int, rate float64, ok bool)
	// PerIteration is the mean number of requests an iteration of the run
	// holds: with it, the target is given in requests a second too.
	PerIteration float64
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
	// write, when set (ListenFunc), writes every scrape instead of src.
	write func(*strings.Builder)
}

// Listen binds addr (":9090", "127.0.0.1:0") at once, so that a bad address
// fails before any traffic, and serves src in the background until Close.
// Before the first Set, a server listened with a zero Sources serves an
// empty page.
func Listen(addr string, src Sources) (*Server, error) {
	s, err := listen(addr)
	if err != nil {
		return nil, err
	}
	s.Set(src)
	return s, nil
}

// ListenFunc is Listen for a server other than a run: each scrape is what
// write writes (replay mock's Server.WriteMetrics).
func ListenFunc(addr string, write func(*strings.Builder)) (*Server, error) {
	s, err := listen(addr)
	if err != nil {
		return nil, err
	}
	s.write = write
	return s, nil
}

func listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, done: make(chan error, 1)}
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
	if s.write != nil {
		s.write(&b)
	} else if src := s.src.Load(); src != nil {
		Write(&b, *src)
	}
	w.Write([]byte(b.String()))
}

// Write writes the exposition of src to b.
func Write(b *strings.Builder, src Sources) {
	if src.Recorder == nil {
		return
	}
	l := src.Recorder.Live()
	e := Expo{b}
	e.Family("replay_requests_total", "counter", "Requests begun (succeeded + failed).")
	e.Sample("replay_requests_total", "", float64(l.Requests))
	e.Family("replay_succeeded_total", "counter", "Requests answered with a status below 400.")
	e.Sample("replay_succeeded_total", "", float64(l.Succeeded))
	e.Family("replay_failed_total", "counter", "Requests answered 400 or above, or failed without an answer.")
	e.Sample("replay_failed_total", "", float64(l.Failed))
	e.Family("replay_bytes_in_total", "counter", "Response bytes read.")
	e.Sample("replay_bytes_in_total", "", float64(l.BytesIn))
	e.Family("replay_bytes_out_total", "counter", "Request bytes written.")
	e.Sample("replay_bytes_out_total", "", float64(l.BytesOut))
	e.Family("replay_errors_total", "counter", "Requests that failed without an answer, by kind.")
	kinds := make([]string, 0, len(l.Errors))
	for k := range l.Errors {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		e.Sample("replay_errors_total", Label("kind", k), float64(l.Errors[k]))
	}
	e.Family("replay_responses_total", "counter", "Requests answered, by status class.")
	for class := 1; class <= 5; class++ {
		e.Sample("replay_responses_total", Label("class", strconv.Itoa(class)+"xx"), float64(l.StatusClass[class]))
	}
	if src.Dropped != nil {
		e.Family("replay_dropped_total", "counter", "Iterations an open model could not start: every VU (--max-vus) was busy.")
		e.Sample("replay_dropped_total", "", float64(src.Dropped()))
	}
	if src.Late != nil {
		e.Family("replay_late_total", "counter", "Requests begun more than --late-after past their due time.")
		e.Sample("replay_late_total", "", float64(src.Late()))
	}
	if src.Events != nil {
		e.Family("replay_e2e_events_total", "counter", "Events seen by a sink, each once, by end-to-end stage.")
		stages := src.Events()
		for _, st := range stages {
			e.Sample("replay_e2e_events_total", Label("stage", st.Name), float64(st.Unique))
		}
		e.Family("replay_e2e_duplicates_total", "counter", "Deliveries of an event a sink had seen already, by end-to-end stage.")
		for _, st := range stages {
			e.Sample("replay_e2e_duplicates_total", Label("stage", st.Name), float64(st.Duplicates))
		}
	}
	if src.VUs != nil {
		vus, inFlight := src.VUs()
		e.Family("replay_vus", "gauge", "VUs started.")
		e.Sample("replay_vus", "", float64(vus))
		e.Family("replay_in_flight", "gauge", "Requests in flight.")
		e.Sample("replay_in_flight", "", float64(inFlight))
	}
	if src.Target != nil {
		if step, rate, ok := src.Target(); ok {
			e.Family("replay_step", "gauge", "The step under way: the --stages item, or the capacity search's step (from 1; 0 without steps).")
			e.Sample("replay_step", "", float64(step))
			e.Family("replay_target_rate", "gauge", "The arrival rate asked for now, iterations per second.")
			e.Sample("replay_target_rate", "", rate)
			if src.PerIteration > 0 {
				e.Family("replay_target_request_rate", "gauge", "The arrival rate asked for now, requests per second (iterations per second × the requests an iteration holds).")
				e.Sample("replay_target_request_rate", "", rate*src.PerIteration)
			}
		}
	}
	if src.Buckets != nil {
		h := src.Buckets(LatencyBounds)
		e.Family("replay_request_duration_seconds", "histogram", "Latency of answered requests from their due time, seconds.")
		for i, le := range h.Bounds {
			e.Sample("replay_request_duration_seconds_bucket", Label("le", strconv.FormatFloat(le, 'g', -1, 64)), float64(h.Counts[i]))
		}
		e.Sample("replay_request_duration_seconds_bucket", Label("le", "+Inf"), float64(h.Count))
		e.Sample("replay_request_duration_seconds_sum", "", h.SumS)
		e.Sample("replay_request_duration_seconds_count", "", float64(h.Count))
	}
	e.Family("replay_latency_seconds", "summary", "Latency quantiles of answered requests from their due time since the start, seconds (HDR).")
	for _, q := range []struct {
		name string
		ms   float64
	}{{"0.5", l.Latency.P50}, {"0.9", l.Latency.P90}, {"0.95", l.Latency.P95}, {"0.99", l.Latency.P99}, {"0.999", l.Latency.P999}, {"1", l.Latency.Max}} {
		e.Sample("replay_latency_seconds", Label("quantile", q.name), q.ms/1000)
	}
	answered := l.Requests - sumErrors(l.Errors)
	e.Sample("replay_latency_seconds_sum", "", l.Latency.Mean/1000*float64(answered))
	e.Sample("replay_latency_seconds_count", "", float64(answered))
}

// sumErrors adds the counts of errs.
func sumErrors(errs map[string]int64) int64 {
	var n int64
	for _, v := range errs {
		n += v
	}
	return n
}

// Expo writes the text exposition format (version 0.0.4): a run's
// families here, and those of other servers (replay mock's).
type Expo struct{ B *strings.Builder }

// Family writes a family's # HELP and # TYPE lines.
func (e Expo) Family(name, typ, help string) {
	e.B.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

// Sample writes one sample; labels is "" or `{k="v"}`.
func (e Expo) Sample(name, labels string, v float64) {
	e.B.WriteString(name + labels + " " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
}

// Label is one label, `{k="v"}`, its value escaped as the format asks
// (\\, \", \n).
func Label(k, v string) string { return Labels(k, v) }

// Labels are labels from name, value pairs: `{a="1",b="2"}`.
func Labels(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i] + `="` + escaper.Replace(kv[i+1]) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

var escaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
