// Package metrics serves a run's live numbers in the Prometheus text
// exposition format (--metrics ADDR): requests, errors by kind, responses
// by status class, dropped and late iterations, end-to-end events per
// stage, in-flight requests, VUs, the current step and target rate (in
// iterations and in requests a second), and
// the latency from due time, both as a histogram with buckets and as
// today's quantiles (a summary). Every family has its # HELP and # TYPE.
// The numbers are read from the run only when scraped. The format itself
// is written by pkg/metrics/expo, a leaf a server uses for its own
// families without linking the run's recorder and report, as this
// package does.
package metrics

import (
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/metrics/expo"
	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/result"
)

// LatencyBounds are the upper bounds, in seconds, of the latency
// histogram's buckets.
var LatencyBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Server serves a run's GET /metrics.
type Server struct {
	*expo.Server
	src atomic.Pointer[recording.LiveView]
}

// Listen binds addr (":9090", "127.0.0.1:0") at once, so that a bad address
// fails before any traffic, and serves src in the background until Close.
// Before the first Set, a server listened with a zero LiveView serves an
// empty page.
func Listen(addr string, src recording.LiveView) (*Server, error) {
	s := &Server{}
	s.Set(src)
	var err error
	s.Server, err = expo.Listen(addr, func(b *strings.Builder) {
		if src := s.src.Load(); src != nil {
			Write(b, *src)
		}
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Set has the server serve src from the next scrape on: a capacity
// search runs one run after another behind one address.
func (s *Server) Set(src recording.LiveView) { s.src.Store(&src) }

// Write writes the exposition of src to b, from one look at its counters.
func Write(b *strings.Builder, src recording.LiveView) {
	if src.Now == nil {
		return
	}
	l := src.Now()
	e := expo.Writer{B: b}
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
		e.Sample("replay_errors_total", expo.Label("kind", k), float64(l.Errors[k]))
	}
	e.Family("replay_responses_total", "counter", "Requests answered, by status class.")
	for class := 1; class <= 5; class++ {
		e.Sample("replay_responses_total", expo.Label("class", strconv.Itoa(class)+"xx"), float64(l.StatusClass[class]))
	}
	e.Family("replay_dropped_total", "counter", "Iterations an open model could not start: every VU (--max-vus) was busy.")
	e.Sample("replay_dropped_total", "", float64(l.Dropped))
	e.Family("replay_late_total", "counter", "Requests begun more than --late-after past their due time.")
	e.Sample("replay_late_total", "", float64(l.Late))
	if l.Events != nil {
		writeE2E(e, l.Events)
	}
	if l.WebSocket != nil {
		writeWS(e, l.WebSocket)
	}
	e.Family("replay_vus", "gauge", "VUs started.")
	e.Sample("replay_vus", "", float64(l.VUs))
	e.Family("replay_in_flight", "gauge", "Requests in flight.")
	e.Sample("replay_in_flight", "", float64(l.InFlight))
	if l.HasTarget {
		writeTarget(e, l)
	}
	if src.Buckets != nil {
		writeBuckets(e, src.Buckets(LatencyBounds))
	}
	e.Family("replay_latency_seconds", "summary", "Latency quantiles of answered requests from their due time since the start, seconds (HDR).")
	for _, q := range []struct {
		name string
		ms   float64
	}{{"0.5", l.Latency.P50}, {"0.9", l.Latency.P90}, {"0.95", l.Latency.P95}, {"0.99", l.Latency.P99}, {"0.999", l.Latency.P999}, {"1", l.Latency.Max}} {
		e.Sample("replay_latency_seconds", expo.Label("quantile", q.name), q.ms/1000)
	}
	answered := l.Requests - sumErrors(l.Errors)
	e.Sample("replay_latency_seconds_sum", "", l.Latency.Mean/1000*float64(answered))
	e.Sample("replay_latency_seconds_count", "", float64(answered))
}

// writeE2E writes the events the sinks saw, each once and again, by stage.
func writeE2E(e expo.Writer, stages []e2e.StageCount) {
	e.Family("replay_e2e_events_total", "counter", "Events seen by a sink, each once, by end-to-end stage.")
	for _, st := range stages {
		e.Sample("replay_e2e_events_total", expo.Label("stage", st.Name), float64(st.Unique))
	}
	e.Family("replay_e2e_duplicates_total", "counter", "Deliveries of an event a sink had seen already, by end-to-end stage.")
	for _, st := range stages {
		e.Sample("replay_e2e_duplicates_total", expo.Label("stage", st.Name), float64(st.Duplicates))
	}
}

// writeWS writes the WebSocket sessions' families, in a run that has
// sessions.
func writeWS(e expo.Writer, ws *recording.LiveWS) {
	e.Family("replay_ws_sessions_total", "counter", "WebSocket sessions ended (upgrades sent), failed or not.")
	e.Sample("replay_ws_sessions_total", "", float64(ws.Sessions))
	e.Family("replay_ws_sessions_failed_total", "counter", "WebSocket sessions failed, by kind (refused, closed_early, timeout, too_large, protocol, close_error, error).")
	for _, k := range result.WSFailNames() {
		e.Sample("replay_ws_sessions_failed_total", expo.Label("kind", k), float64(ws.Failed[k]))
	}
	e.Family("replay_ws_messages_sent_total", "counter", "WebSocket data messages sent (text, binary).")
	e.Sample("replay_ws_messages_sent_total", "", float64(ws.MessagesSent))
	e.Family("replay_ws_messages_received_total", "counter", "WebSocket data messages received (text, binary).")
	e.Sample("replay_ws_messages_received_total", "", float64(ws.MessagesReceived))
}

// writeTarget writes the step under way and the rate asked for, in
// iterations and, when known, requests a second.
func writeTarget(e expo.Writer, l recording.Live) {
	e.Family("replay_step", "gauge", "The step under way: the --stages item, or the capacity search's step (from 1; 0 without steps).")
	e.Sample("replay_step", "", float64(l.Step))
	e.Family("replay_target_rate", "gauge", "The arrival rate asked for now, iterations per second.")
	e.Sample("replay_target_rate", "", l.Target)
	if reqs, ok := l.TargetRequests(); ok {
		e.Family("replay_target_request_rate", "gauge", "The arrival rate asked for now, requests per second (iterations per second × the requests an iteration holds).")
		e.Sample("replay_target_request_rate", "", reqs)
	}
}

// writeBuckets writes the latency histogram, one bucket a bound.
func writeBuckets(e expo.Writer, h recording.Buckets) {
	e.Family("replay_request_duration_seconds", "histogram", "Latency of answered requests from their due time, seconds.")
	for i, le := range h.Bounds {
		e.Sample("replay_request_duration_seconds_bucket", expo.Label("le", strconv.FormatFloat(le, 'g', -1, 64)), float64(h.Counts[i]))
	}
	e.Sample("replay_request_duration_seconds_bucket", expo.Label("le", "+Inf"), float64(h.Count))
	e.Sample("replay_request_duration_seconds_sum", "", h.SumS)
	e.Sample("replay_request_duration_seconds_count", "", float64(h.Count))
}

// sumErrors adds the counts of errs.
func sumErrors(errs map[string]int64) int64 {
	var n int64
	for _, v := range errs {
		n += v
	}
	return n
}
