package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/rrpair"
)

func TestWriteInspectShowsWebSockets(t *testing.T) {
	st := &rrpair.Stats{File: "ws.jsonl", Pairs: 2, Methods: map[string]int{"GET": 2},
		WebSocket: &rrpair.WSStats{Sessions: 2, Messages: rrpair.WSCounts{Client: 3, Server: 4}, Pings: rrpair.WSCounts{Client: 1}}}
	var buf bytes.Buffer
	if err := WriteInspect(&buf, st); err != nil {
		t.Fatal(err)
	}
	want := "WebSocket        2 sessions, 7 messages (client 3, server 4), pings client 1, server 0\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("inspect lacks %q:\n%s", want, buf.String())
	}
	buf.Reset()
	st.WebSocket.Oversize, st.WebSocket.Broken = rrpair.WSCounts{Server: 2}, 1
	WriteInspect(&buf, st)
	for _, want := range []string{"; over the recorder's bound, not kept: client 0, server 2", "; 1 recorded only in part"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("inspect lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	st.WebSocket = nil
	WriteInspect(&buf, st)
	if strings.Contains(buf.String(), "WebSocket") {
		t.Errorf("inspect of a file without sessions has a WebSocket line:\n%s", buf.String())
	}
}
