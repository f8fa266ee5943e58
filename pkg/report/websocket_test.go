package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/hist"
)

// wsSummary is a run of 100 sessions on one endpoint, 2 closed early and
// 1 refused by a 403, 7 pings of the server, with message latencies of
// 1 to 40 ms.
func wsSummary(t *testing.T) *Summary {
	t.Helper()
	h := hist.New()
	for ms := int64(1); ms <= 40; ms++ {
		hist.RecordNanos(h, ms*1e6)
	}
	c := WSCounts{Sessions: 100, Opened: 99, MessagesSent: 300, MessagesReceived: 297, Pings: 7,
		SessionsFailed: map[string]int64{"closed_early": 2, "refused": 1}, RefusedStatus: map[string]int64{"403": 1},
		Latency: hist.LatencyOf(h), Histogram: hist.Encode(h)}
	return &Summary{Version: SummaryVersion, WebSocket: &WebSocket{WSCounts: c, Endpoints: []WSEndpoint{{Name: "GET /chat", WSCounts: c}}}}
}

// TestWebSocketThresholds: ws.p99 measures the message latency, ws.KIND
// the sessions failed as KIND (a share with %, else a count), per
// endpoint too; a kind the report does not have is refused by name.
func TestWebSocketThresholds(t *testing.T) {
	s := wsSummary(t)
	for _, tc := range []struct {
		expr string
		pass bool
	}{
		{"ws.p99<50ms", true},
		{"ws.p50<10ms", false},
		{"ws.closed_early<1%", false},
		{"ws.closed_early<3%", true},
		{"ws.refused<=1", true},
		{"ws.failed<3", false},
		{"GET /chat: ws.timeout<1%", true},
		{"GET /chat: ws.max<40ms", false},
	} {
		th, err := ParseThreshold(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := Evaluate(s, []Threshold{th}); got != tc.pass {
			t.Errorf("%s: pass %v, want %v (%s)", tc.expr, got, tc.pass, s.Thresholds[0].MeasuredText(3))
		}
	}
	if _, err := ParseThreshold("ws.lost<1%"); err == nil || !strings.Contains(err.Error(), "a kind of failed session") {
		t.Errorf("ws.lost: %v, want the kinds named", err)
	}
	th, _ := ParseThreshold("ws.p99<50ms")
	if Evaluate(&Summary{Version: SummaryVersion}, []Threshold{th}) {
		t.Error("ws.p99 passed a run without sessions")
	}
}

// TestWebSocketTextAndMerge: the text report's WebSocket section, and a
// merge of two shards that adds the counts and merges the histograms.
func TestWebSocketTextAndMerge(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, wsSummary(t)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"WebSocket sessions: 100, opened 99, failed 3 (closed_early:2 refused:1 (403:1)); messages sent 300, received 297; server pings 7",
		"GET /chat", "p99"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	m, err := Merge([]*Summary{wsSummary(t), wsSummary(t)})
	if err != nil {
		t.Fatal(err)
	}
	ws := m.WebSocket
	if ws == nil || ws.Sessions != 200 || ws.Opened != 198 || ws.MessagesSent != 600 || ws.SessionsFailed["closed_early"] != 4 || ws.RefusedStatus["403"] != 2 ||
		len(ws.Endpoints) != 1 || ws.Endpoints[0].MessagesReceived != 594 || ws.Pings != 14 || ws.Endpoints[0].Pings != 14 || ws.Latency.Max < 39 {
		t.Errorf("merged: %+v", ws)
	}
}

// TestWebSocketHTML: the HTML report has the WebSocket table, a row an
// endpoint and the total.
func TestWebSocketHTML(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, wsSummary(t)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<table id="websocket">`, "<td>GET /chat</td><td>100</td><td>99</td><td>3</td><td>300</td><td>297</td>", "closed_early:2 refused:1 (403:1)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// TestWebSocketUnansweredCensored: client messages the server never
// answered rank after the answered ones, slower than any bound: a p99
// that falls among them fails whatever its bound, with a note saying
// why; a p50 among the answered is measured; shards add them up.
func TestWebSocketUnansweredCensored(t *testing.T) {
	s := wsSummary(t) // 40 messages answered in 1 to 40 ms
	s.WebSocket.Unanswered = 1
	p99, _ := ParseThreshold("ws.p99<50ms")
	if Evaluate(s, []Threshold{p99}) {
		t.Errorf("ws.p99<50ms passed with 1 of 41 messages unanswered (%s)", s.Thresholds[0].MeasuredText(3))
	}
	if got := s.Thresholds[0].Note; !strings.Contains(got, "1 of 41 messages unanswered") {
		t.Errorf("note %q, want it to say 1 of 41 messages unanswered", got)
	}
	p50, _ := ParseThreshold("ws.p50<50ms")
	if !Evaluate(s, []Threshold{p50}) {
		t.Errorf("ws.p50<50ms failed with 40 of 41 answered within 40 ms (%s)", s.Thresholds[0].MeasuredText(3))
	}
	m, err := Merge([]*Summary{s, s})
	if err != nil || m.WebSocket.Unanswered != 2 {
		t.Errorf("merged unanswered %v (%v), want 2", m.WebSocket, err)
	}
}
