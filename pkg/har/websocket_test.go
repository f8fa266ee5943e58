package har

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

var keepWS = Options{WebSockets: true}

// sessionOf reads the session of an upgrade pair.
func sessionOf(t *testing.T, p rrpair.Pair) *rrpair.WebSocket {
	t.Helper()
	w, err := p.WebSocket()
	if err != nil || w == nil {
		t.Fatalf("%s %s: session %v, %v", p.Req.Method, p.Req.URI, w, err)
	}
	return w
}

// Chrome's form: a wss:// URL, text as text, binary and close in base64,
// pings counted, pongs left out; offsets from startedDateTime.
func TestChromeWebSocket(t *testing.T) {
	st, skipped, pairs := convertFileWith(t, "chrome-websocket.har", keepWS, "chrome-websocket.golden.jsonl")
	if len(skipped) != 0 || len(pairs) != 1 || st.WebSockets != 1 || st.WSMessages != 4 || st.WSIgnored != 2 {
		t.Fatalf("skipped %q, %d pairs, stats %+v", skipped, len(pairs), st)
	}
	p := pairs[0]
	if string(p.Req.URI) != "/socket?v=2" || string(p.Req.Host) != "chat.example" || string(p.Req.Scheme) != "https" || p.Res.Status != 101 {
		t.Errorf("upgrade pair: %s %s %s, %d", p.Req.Scheme, p.Req.Host, p.Req.URI, p.Res.Status)
	}
	if got := headers(p.Req.Headers); !reflect.DeepEqual(got[:3], []string{"Host: chat.example", "Upgrade: websocket", "Origin: https://chat.example"}) {
		t.Errorf("the upgrade's fields are kept: %q", got)
	}
	want := &rrpair.WebSocket{
		Messages: []rrpair.WSMessage{
			{From: rrpair.WSClient, Offset: 62500 * time.Microsecond, Type: rrpair.WSText, Data: []byte(`{"op":"sub","room":"a"}`)},
			{From: rrpair.WSServer, Offset: 125 * time.Millisecond, Type: rrpair.WSText, Data: []byte(`{"ok":true}`)},
			{From: rrpair.WSServer, Offset: 250 * time.Millisecond, Type: rrpair.WSBinary, Data: []byte{0, 1, 0xff}},
			{From: rrpair.WSClient, Offset: time.Second, Type: rrpair.WSClose, Code: 1000, Reason: "bye"},
		},
		Pings: rrpair.WSCounts{Client: 1},
	}
	if got := sessionOf(t, p); !reflect.DeepEqual(got, want) {
		t.Errorf("session\n%+v\nwant\n%+v", got, want)
	}
	if s := st.Summary(); !strings.Contains(s, "; 1 WebSocket session with 4 messages (2 pongs and other frames not kept)") {
		t.Errorf("summary: %s", s)
	}
}

// mitmproxy's export: an https:// URL, no pages, a startedDateTime with
// +00:00, binary in base64; the plain entry before it is written too.
func TestMitmproxyWebSocket(t *testing.T) {
	st, skipped, pairs := convertFileWith(t, "mitmproxy-websocket.har", keepWS, "mitmproxy-websocket.golden.jsonl")
	if len(skipped) != 0 || len(pairs) != 2 || st.WebSockets != 1 || st.WSMessages != 6 {
		t.Fatalf("skipped %q, %d pairs, stats %+v", skipped, len(pairs), st)
	}
	if string(pairs[0].Req.URI) != "/" || pairs[0].WebSocketRaw != nil {
		t.Errorf("the page first, plain: %s", pairs[0].Req.URI)
	}
	w := sessionOf(t, pairs[1])
	var seq []string
	for _, m := range w.Messages {
		seq = append(seq, m.From.String()+" "+m.Type.String()+" "+string(m.Data))
	}
	wantSeq := []string{"client text hello", "server text hello", "client binary \x89PNG", "server binary \x89PNG", "client text café ☕", "server text café ☕"}
	if !reflect.DeepEqual(seq, wantSeq) {
		t.Errorf("messages %q, want %q", seq, wantSeq)
	}
	if w.Messages[0].Offset != 10*time.Millisecond || w.Messages[5].Offset != 202*time.Millisecond {
		t.Errorf("offsets %v .. %v; want 10ms .. 202ms from startedDateTime", w.Messages[0].Offset, w.Messages[5].Offset)
	}
}

// Without the option a WebSocket entry is skipped as before; with it, an
// upgrade refused keeps no session, and a session whose times are before
// the entry's start counts from its first message.
func TestWebSocketOption(t *testing.T) {
	st, skipped, _ := convertFileWith(t, "mitmproxy-websocket.har", Options{}, "mitmproxy-websocket-skipped.golden.jsonl")
	if st.Skipped["websocket"] != 1 || len(skipped) != 1 || !strings.Contains(skipped[0], "import with --websocket to keep the session") {
		t.Errorf("without the option: %+v %q", st.Skipped, skipped)
	}
	st, skipped, pairs := convertFileWith(t, "mixed-recorders.har", keepWS, "mixed-recorders-websocket.golden.jsonl")
	if st.WebSockets != 1 || st.Skipped["websocket"] != 0 {
		t.Fatalf("mixed recorders: stats %+v, skipped %q", st, skipped)
	}
	for _, p := range pairs {
		if p.WebSocketRaw == nil {
			continue
		}
		w := sessionOf(t, p)
		if len(w.Messages) != 1 || w.Messages[0].Offset != 0 || string(w.Messages[0].Data) != "hi" {
			t.Errorf("a message timed before the entry: %+v", w.Messages)
		}
	}
}
