package recording

import (
	"strconv"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
)

// wsFold is the WebSocket sessions' share of a fold, in total or of one
// endpoint (result/websocket.go): sessions by how they ended, the refused
// upgrades by status, data messages each way, and the latency from a
// client message's due time to the next server message.
type wsFold struct {
	sessions, opened int64
	failed           [result.NumWSFails]int64
	refused          map[uint16]int64
	sent, received   int64
	pings            int64 // the server's
	unanswered       int64 // client messages the server did not answer
	latency          *hdrhistogram.Histogram
}

func newWSFold() *wsFold { return &wsFold{latency: hist.New()} }

// addWS folds a WebSocket result (r.WS != WSNone): not a request.
func (f *fold) addWS(r *result.Result) {
	if f.ws == nil {
		f.ws = newWSFold()
		f.wsEndpoints = make([]*wsFold, len(f.names))
	}
	i := int(r.Endpoint)
	if i >= len(f.wsEndpoints) {
		i = f.otherIdx
	}
	if f.wsEndpoints[i] == nil {
		f.wsEndpoints[i] = newWSFold()
	}
	f.ws.add(r)
	f.wsEndpoints[i].add(r)
	if r.WS == result.WSSession {
		f.addSpan(r) // the run lasts until its sessions end
	}
}

// add counts r in w.
func (w *wsFold) add(r *result.Result) {
	if r.WS == result.WSLatency {
		hist.RecordNanos(w.latency, r.End-r.Due)
		return
	}
	w.sessions++
	if r.Status == 101 && r.WSFail != result.WSRefused {
		w.opened++
	}
	w.sent += int64(r.WSSent)
	w.received += int64(r.WSReceived)
	w.pings += int64(r.WSPings)
	w.unanswered += int64(r.WSUnanswered)
	if r.WSFail == result.WSOK {
		return
	}
	w.failed[min(int(r.WSFail), result.NumWSFails-1)]++
	if r.WSFail == result.WSRefused {
		if w.refused == nil {
			w.refused = make(map[uint16]int64)
		}
		w.refused[r.Status]++
	}
}

// counts is w as the summary writes it.
func (w *wsFold) counts() report.WSCounts {
	c := report.WSCounts{Sessions: w.sessions, Opened: w.opened, MessagesSent: w.sent, MessagesReceived: w.received, Pings: w.pings, Unanswered: w.unanswered,
		Latency: hist.LatencyOf(w.latency), Histogram: hist.Encode(w.latency)}
	c.SessionsFailed = w.failedCounts()
	for st, n := range w.refused {
		if c.RefusedStatus == nil {
			c.RefusedStatus = make(map[string]int64, len(w.refused))
		}
		c.RefusedStatus[strconv.Itoa(int(st))] = n
	}
	return c
}

// live is w as the live counters show it.
func (w *wsFold) live() *LiveWS {
	c := w.failedCounts()
	return &LiveWS{Sessions: w.sessions, Failed: c, MessagesSent: w.sent, MessagesReceived: w.received}
}

// failedCounts are the sessions failed by kind's name; nil when none did.
func (w *wsFold) failedCounts() map[string]int64 {
	var m map[string]int64
	for k := 1; k < result.NumWSFails; k++ {
		if n := w.failed[k]; n > 0 {
			if m == nil {
				m = make(map[string]int64)
			}
			m[result.WSFail(k).String()] = n
		}
	}
	return m
}

// wsSummary is the summary's WebSocket section; nil without sessions.
func (f *fold) wsSummary() *report.WebSocket {
	if f.ws == nil {
		return nil
	}
	out := &report.WebSocket{WSCounts: f.ws.counts()}
	for i, w := range f.wsEndpoints {
		if w != nil {
			out.Endpoints = append(out.Endpoints, report.WSEndpoint{Name: f.names[i], WSCounts: w.counts()})
		}
	}
	return out
}
