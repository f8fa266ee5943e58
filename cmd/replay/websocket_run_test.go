package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"

	"github.com/replay-dev/replay/internal/testutil/wspeer"
)

// TestRunWebSocketRecorded: a client session of three messages recorded
// through replay record in front of a WebSocket server, replayed by
// replay run --vus 3 --iterations 6: the server receives six sessions of
// those three messages in order, and the JSON's websocket section counts
// 18 messages sent and 18 received.
func TestRunWebSocketRecorded(t *testing.T) {
	up := wspeer.Serve(t, wspeer.Echo)
	recorded, sent := recordEchoSession(t, up.URL)
	up.Forget() // the recording's own session

	out := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, context.Background(), "", "run", "-f", recorded, "--target", up.URL, "--vus", "3", "--iterations", "6", "--out", out, "--progress", "off")
	if r.code != 0 {
		t.Fatalf("run: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := up.Sessions()
	if len(got) != 6 {
		t.Fatalf("the server received %d sessions, want 6: %q", len(got), got)
	}
	for i, s := range got {
		if strings.Join(s, "\n") != strings.Join(sent, "\n") {
			t.Errorf("session %d: %q, want %q", i, s, sent)
		}
	}
	ws, _ := readSummary(t, out)["websocket"].(map[string]any)
	if ws["sessions"] != 6.0 || ws["sessions_opened"] != 6.0 || ws["messages_sent"] != 18.0 || ws["messages_received"] != 18.0 || ws["sessions_failed"] != nil {
		t.Errorf("websocket section %v: want 6 sessions, 18 messages sent and 18 received, none failed", ws)
	}
	if !strings.Contains(r.stdout+r.stderr, "WebSocket sessions: 6, opened 6, failed 0") {
		t.Errorf("the text report lacks the WebSocket line:\n%s%s", r.stdout, r.stderr)
	}
}

// recordEchoSession records, through replay record in front of the echo
// server at upstream, a gorilla client's session of three text messages,
// each read back intact through the recorder, then the closes; it returns
// the traffic file and the messages sent.
func recordEchoSession(t *testing.T, upstream string) (recorded string, sent []string) {
	t.Helper()
	recorded = filepath.Join(t.TempDir(), "recorded.jsonl")
	proxyAddr := freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan runResult)
	go func() {
		var out, errb strings.Builder
		code := Main(ctx, []string{"record", "--listen", proxyAddr, "--upstream", upstream, "-o", recorded, "--log-level", "warn"}, strings.NewReader(""), &out, &errb)
		done <- runResult{code, out.String(), errb.String()}
	}()
	waitListening(t, proxyAddr)
	c, _, err := gorilla.DefaultDialer.Dial("ws://"+proxyAddr+"/chat", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	sent = []string{`{"op":"join","room":"a"}`, "hello", "bye for now"}
	for _, m := range sent {
		if err := c.WriteMessage(gorilla.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
		if _, got, err := c.ReadMessage(); err != nil || string(got) != m {
			t.Fatalf("echo of %q: %q, %v", m, got, err)
		}
	}
	c.WriteMessage(gorilla.CloseMessage, gorilla.FormatCloseMessage(1000, "done"))
	c.ReadMessage() // the server's close
	c.Close()
	stop()
	if r := <-done; r.code != 0 {
		t.Fatalf("record: exit %d: %s", r.code, r.stderr)
	}
	return recorded, sent
}
