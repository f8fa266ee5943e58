package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/wspeer"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// TestImportHARWebSocket: import har keeps mitmproxy's WebSocket entry
// as its upgrade pair with the session's six messages (by default: a run
// plays sessions), and inspect counts them; --websocket=false skips it.
func TestImportHARWebSocket(t *testing.T) {
	traffic := filepath.Join(t.TempDir(), "traffic.jsonl")
	r := runMain(t, context.Background(), "", "import", "har", "../../pkg/har/testdata/mitmproxy-websocket.har", "-o", traffic)
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
	// With --websocket=false the entry is skipped, as a WebSocket was
	// before runs played sessions.
	r = runMain(t, context.Background(), "", "import", "har", "--websocket=false", "../../pkg/har/testdata/mitmproxy-websocket.har", "-o", filepath.Join(t.TempDir(), "plain.jsonl"))
	if r.code != 0 || !strings.Contains(r.stderr, "skipped 1: websocket 1") {
		t.Errorf("import with --websocket=false: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestRecordWebSocket: replay record in front of a gorilla WebSocket
// server; a gorilla client sends three text messages and reads their
// echoes through it. The client sees every echo intact, and the file
// holds the upgrade pair with the session: the six messages in order,
// then the closes.
func TestRecordWebSocket(t *testing.T) {
	up := wspeer.Serve(t, wspeer.Echo)
	recorded, sent := recordEchoSession(t, up.URL)

	f, err := rrpair.Open(recorded, rrpair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var p rrpair.Pair
	if err := f.NewCursor().WithResponses().Decode(0, &p); err != nil || f.Len() != 1 || p.Res.Status != 101 {
		t.Fatalf("%d pairs, the first %d, %v", f.Len(), p.Res.Status, err)
	}
	ws, err := p.WebSocket()
	if err != nil || ws == nil {
		t.Fatalf("session %v, %v", ws, err)
	}
	var got []string
	for _, m := range ws.Messages {
		got = append(got, m.From.String()+" "+m.Type.String()+" "+string(m.Data))
	}
	want := []string{"client text " + sent[0], "server text " + sent[0], "client text " + sent[1], "server text " + sent[1],
		"client text " + sent[2], "server text " + sent[2], "client close ", "server close "}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recorded\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r := runMain(t, context.Background(), "", "inspect", recorded)
	if want := "1 session, 8 messages (client 4, server 4)"; !strings.Contains(r.stdout, want) {
		t.Errorf("inspect lacks %q:\n%s", want, r.stdout)
	}
}
