package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportHARWebSocket: import har --websocket keeps mitmproxy's
// WebSocket entry as its upgrade pair with the session's six messages,
// and inspect counts them.
func TestImportHARWebSocket(t *testing.T) {
	traffic := filepath.Join(t.TempDir(), "traffic.jsonl")
	r := runMain(t, context.Background(), "", "import", "har", "--websocket", "../../pkg/har/testdata/mitmproxy-websocket.har", "-o", traffic)
	want := "replay: 2 entries, 2 pairs written (0 recorded as HTTP/2 or 3); 1 WebSocket session with 6 messages\n"
	if r.code != 0 || !strings.HasPrefix(r.stderr, want) {
		t.Fatalf("import: exit %d, stderr:\n%s\nwant it to start with:\n%s", r.code, r.stderr, want)
	}
	r = runMain(t, context.Background(), "", "inspect", traffic)
	if want := "1 session, 6 messages (client 3, server 3), pings client 0, server 0"; r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("inspect: exit %d, lacks %q:\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	r = runMain(t, context.Background(), "", "inspect", "--json", traffic)
	var st struct {
		WebSocket struct {
			Sessions int `json:"sessions"`
			Messages struct{ Client, Server int }
		} `json:"websocket"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.WebSocket.Sessions != 1 || st.WebSocket.Messages.Client != 3 || st.WebSocket.Messages.Server != 3 {
		t.Errorf("inspect --json: %v %+v", err, st)
	}
	// Without --websocket the entry is skipped, as a WebSocket always was.
	r = runMain(t, context.Background(), "", "import", "har", "../../pkg/har/testdata/mitmproxy-websocket.har", "-o", filepath.Join(t.TempDir(), "plain.jsonl"))
	if r.code != 0 || !strings.Contains(r.stderr, "skipped 1: websocket 1") {
		t.Errorf("import without --websocket: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
