package metrics

import (
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/result"
)

// TestMetricsWebSocket: the recorder's WebSocket sessions as Prometheus
// families, parsed by Prometheus's parser: sessions, failures by kind,
// messages each way; none of them in a run without sessions.
func TestMetricsWebSocket(t *testing.T) {
	rec := recording.NewRecorder([]string{"GET /chat"})
	for i := range 3 {
		fail := result.WSOK
		if i == 2 {
			fail = result.WSClosedEarly
		}
		rec.Record(result.Result{WS: result.WSSession, WSFail: fail, WSSent: 3, WSReceived: 2})
	}
	rec.Close()
	s, err := Listen("127.0.0.1:0", withRecorder(rec, func(*recording.Live) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fams, _ := scrape(t, s)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"replay_ws_sessions_total", nil, 3},
		{"replay_ws_sessions_failed_total", []string{"kind", "closed_early"}, 1},
		{"replay_ws_sessions_failed_total", []string{"kind", "timeout"}, 0},
		{"replay_ws_messages_sent_total", nil, 9},
		{"replay_ws_messages_received_total", nil, 6},
	} {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	var b strings.Builder
	Write(&b, fixed(recording.Live{}))
	if strings.Contains(b.String(), "replay_ws_") {
		t.Errorf("a run without sessions has WebSocket families:\n%s", b.String())
	}
}
