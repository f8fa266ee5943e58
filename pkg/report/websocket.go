package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/result"
)

// WebSocket is the summary's "websocket" section: the WebSocket sessions
// the run replayed (docs/websocket.md, The report), in total and per
// endpoint (the upgrade pair's):
//
//	"websocket": {"sessions": 6, "sessions_failed": {"closed_early": 1},
//	  "refused_status": {"403": 2}, "messages_sent": 18, "messages_received": 18,
//	  "latency_ms": {...}, "histogram": "HISTF...", "endpoints": [...]}
//
// Absent when the run replayed no session.
type WebSocket struct {
	WSCounts
	// Endpoints are the upgrade pairs' endpoints that had sessions, in
	// endpoint table order.
	Endpoints []WSEndpoint `json:"endpoints,omitempty"`
}

// WSCounts are the counts of the sessions of the run or of one endpoint.
type WSCounts struct {
	// Sessions are the upgrades sent, whatever came of them: opened and
	// played, or failed.
	Sessions int64 `json:"sessions"`
	// Opened are the sessions whose upgrade a 101 answered with the key's
	// accept: played, whatever came of them after.
	Opened int64 `json:"sessions_opened"`
	// SessionsFailed counts the sessions that failed by kind
	// (result.WSFail's names: refused, closed_early, timeout, too_large,
	// protocol, error); absent when none did.
	SessionsFailed map[string]int64 `json:"sessions_failed,omitempty"`
	// RefusedStatus splits the refused upgrades by the status that refused
	// them ({"403": 2}; 101 for a 101 that did not answer the key).
	RefusedStatus map[string]int64 `json:"refused_status,omitempty"`
	// MessagesSent and MessagesReceived count data messages (text and
	// binary; closes, pings and pongs are not messages).
	MessagesSent     int64 `json:"messages_sent"`
	MessagesReceived int64 `json:"messages_received"`
	// Unanswered are the client messages sent that the recording has an
	// answer to (a server message after them) and that no server message
	// followed: counted against the ws latency thresholds.
	Unanswered int64 `json:"messages_unanswered"`
	// Pings are the server's pings, each answered with a pong while the
	// session was played (none after the client's close).
	Pings int64 `json:"pings_received"`
	// Latency runs from each client message's due time to the next server
	// message; Histogram is its HDR histogram, so that shards merge exactly.
	Latency   Latency `json:"latency_ms"`
	Histogram string  `json:"histogram,omitempty"`
}

// WSEndpoint is one endpoint's share of the sessions.
type WSEndpoint struct {
	Name string `json:"name"`
	WSCounts
}

// Failed is the number of sessions that failed, whatever the kind.
func (c *WSCounts) Failed() int64 {
	var n int64
	for _, v := range c.SessionsFailed {
		n += v
	}
	return n
}

// merge adds o to c; the latency is made again from the merged histogram.
func (c *WSCounts) merge(o *WSCounts) error {
	c.Sessions += o.Sessions
	c.Opened += o.Opened
	c.MessagesSent += o.MessagesSent
	c.MessagesReceived += o.MessagesReceived
	c.Pings += o.Pings
	c.Unanswered += o.Unanswered
	c.SessionsFailed = addOptCounts(c.SessionsFailed, o.SessionsFailed)
	c.RefusedStatus = addOptCounts(c.RefusedStatus, o.RefusedStatus)
	h := hist.New()
	for _, enc := range []string{c.Histogram, o.Histogram} {
		if enc == "" {
			continue
		}
		if err := hist.MergeEncoded(h, enc); err != nil {
			return err
		}
	}
	c.Histogram, c.Latency = hist.Encode(h), hist.LatencyOf(h)
	return nil
}

// mergeWebSocket is the WebSocket section of two summaries merged: the
// totals added, the endpoints by name; nil when neither has one.
func mergeWebSocket(a, b *WebSocket) (*WebSocket, error) {
	if b == nil {
		return a, nil
	}
	if a == nil {
		a = &WebSocket{}
	}
	out := &WebSocket{}
	for _, w := range []*WebSocket{a, b} {
		if w == nil {
			continue
		}
		if err := out.WSCounts.merge(&w.WSCounts); err != nil {
			return nil, err
		}
		for i := range w.Endpoints {
			if err := out.endpoint(w.Endpoints[i].Name).merge(&w.Endpoints[i].WSCounts); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// endpoint is the endpoint named name, added last when new.
func (w *WebSocket) endpoint(name string) *WSCounts {
	for i := range w.Endpoints {
		if w.Endpoints[i].Name == name {
			return &w.Endpoints[i].WSCounts
		}
	}
	w.Endpoints = append(w.Endpoints, WSEndpoint{Name: name})
	return &w.Endpoints[len(w.Endpoints)-1].WSCounts
}

// writeWebSocket writes the text report's WebSocket section: the totals,
// then a row an endpoint (latencies "-" where no message was answered).
func writeWebSocket(buf *bytes.Buffer, w *WebSocket) {
	fmt.Fprintf(buf, "\nWebSocket sessions: %d, opened %d, failed %d (%s); messages sent %d, received %d; server pings %d\n",
		w.Sessions, w.Opened, w.Failed(), wsFailures(&w.WSCounts), w.MessagesSent, w.MessagesReceived, w.Pings)
	fmt.Fprintf(buf, "  latency (client message to the next server message), ms: min, mean, p50, p90, p95, p99, p99.9, max: %s\n", formatLatency(w.Latency))
	rows := [][]string{{"name", "sessions", "opened", "failed", "sent", "received", "p50", "p99", "max", "failures"}}
	for _, e := range w.Endpoints {
		lat := []string{formatMillis(e.Latency.P50), formatMillis(e.Latency.P99), formatMillis(e.Latency.Max)}
		if e.Latency.Max == 0 {
			lat = []string{"-", "-", "-"}
		}
		row := []string{e.Name, strconv.FormatInt(e.Sessions, 10), strconv.FormatInt(e.Opened, 10), strconv.FormatInt(e.Failed(), 10),
			strconv.FormatInt(e.MessagesSent, 10), strconv.FormatInt(e.MessagesReceived, 10)}
		rows = append(rows, append(append(row, lat...), wsFailures(&e.WSCounts)))
	}
	writeTable(buf, rows, true)
}

// wsFailures lists the failures by kind, a refusal with its statuses
// ("refused:2 (403:2) timeout:1"); "-" when none failed.
func wsFailures(c *WSCounts) string {
	if len(c.SessionsFailed) == 0 {
		return "-"
	}
	list := countList(c.SessionsFailed)
	for i, kv := range list {
		if strings.HasPrefix(kv, "refused:") && len(c.RefusedStatus) > 0 {
			list[i] = kv + " (" + formatCounts(c.RefusedStatus, " ") + ")"
		}
	}
	return strings.Join(list, " ")
}

// of is the counts of the endpoint named name, or the totals when name is
// empty; an endpoint without sessions has none (zero counts).
func (w *WebSocket) of(name string) *WSCounts {
	if name == "" {
		return &w.WSCounts
	}
	for i := range w.Endpoints {
		if w.Endpoints[i].Name == name {
			return &w.Endpoints[i].WSCounts
		}
	}
	return &WSCounts{}
}

// wsFailArg is a kind of failed session (ws.closed_early), or "failed"
// for any kind.
var wsFailArg = argument{placeholder: "KIND", want: "a kind of failed session: failed (any), " + strings.Join(result.WSFailNames(), ", "),
	read: func(s string) (string, bool) {
		s = strings.ToLower(s)
		return s, s == "failed" || slices.Contains(result.WSFailNames(), s)
	}}

// wsLatency measures the WebSocket latency's statistic; nothing without a
// client message answered.
func wsLatency(v *view, q query) (float64, string) {
	c := wsCensus(v, q)
	if c.seen == 0 && c.unseen == 0 {
		return math.NaN(), "ms (no WebSocket message was answered)"
	}
	return censoredOf(v.ws.Latency, v.ws.Histogram, c, q.stat), ""
}

// wsCensus is what a WebSocket latency is measured over: the client
// messages answered (the histogram's count) and those sent that the
// recording had answered and the server did not, ranked after them as
// slower than any bound, so that a server that stops answering never
// makes ws.p99 look faster.
func wsCensus(v *view, _ query) census {
	if v.ws == nil {
		return census{}
	}
	c := census{unseen: v.ws.Unanswered, word: "unanswered", noun: "messages"}
	if h, err := DecodeHistogram(v.ws.Histogram); err == nil {
		c.seen = h.TotalCount()
	} else if v.ws.Latency != (Latency{}) {
		c.seen = 1 // a summary without its histogram: answered, how many unknown
	}
	if c.seen == 0 && c.unseen == 0 {
		return census{}
	}
	return c
}

// wsFailedShare measures the sessions failed as the kind q.arg (any kind:
// "failed"): their count, or their share of the sessions. Without a
// session there is nothing to measure.
func wsFailedShare(v *view, q query) (float64, string) {
	if v.ws == nil || v.ws.Sessions == 0 {
		return math.NaN(), "sessions (no WebSocket session was replayed)"
	}
	n := v.ws.SessionsFailed[q.arg]
	if q.arg == "failed" {
		n = v.ws.Failed()
	}
	if !q.share {
		return float64(n), ""
	}
	return 100 * float64(n) / float64(v.ws.Sessions), ""
}
