package report

import "github.com/replay-dev/replay/pkg/hist"

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

// FailedRatio is the share of the sessions that failed as kind (0
// without sessions).
func (c *WSCounts) FailedRatio(kind string) float64 {
	if c.Sessions == 0 {
		return 0
	}
	return float64(c.SessionsFailed[kind]) / float64(c.Sessions)
}

// merge adds o to c; the latency is made again from the merged histogram.
func (c *WSCounts) merge(o *WSCounts) error {
	c.Sessions += o.Sessions
	c.MessagesSent += o.MessagesSent
	c.MessagesReceived += o.MessagesReceived
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
