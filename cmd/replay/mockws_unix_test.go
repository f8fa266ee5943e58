//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"
	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/mock"
)

// TestMockWebSocket: replay mock serving a recorded session to a gorilla
// client: the 101, the recorded server messages each after the client
// message they followed, the client's close answered; the report written
// on SIGTERM counts the session and its messages.
func TestMockWebSocket(t *testing.T) {
	out := filepath.Join(t.TempDir(), "mock.json")
	m := startMock(t, nil, "-f", wsExportFile(t, fixture.ChatSession()), "--keep", "direction=IN", "--listen", "127.0.0.1:0", "--latency", "0", "--ws-pace", "reply", "--out", out)
	c, resp, err := gorilla.DefaultDialer.Dial("ws://"+m.addr+"/chat?room=1", nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	steps := []struct {
		send bool
		typ  int
		data string
	}{
		{false, gorilla.TextMessage, "hello"},
		{true, gorilla.TextMessage, `{"op":"sub"}`},
		{false, gorilla.TextMessage, `{"ok":true}`},
		{true, gorilla.BinaryMessage, "\x00\x01\x02"},
		{false, gorilla.TextMessage, "tick 1"},
		{false, gorilla.BinaryMessage, "\x09\x08"},
		{true, gorilla.TextMessage, "bye"},
		{false, gorilla.TextMessage, "ciao"},
	}
	for _, s := range steps {
		if s.send {
			c.WriteMessage(s.typ, []byte(s.data))
			continue
		}
		if typ, b, err := c.ReadMessage(); err != nil || typ != s.typ || string(b) != s.data {
			t.Fatalf("read %d %q, %v; want %q", typ, b, err, s.data)
		}
	}
	c.WriteMessage(gorilla.CloseMessage, gorilla.FormatCloseMessage(1000, "done"))
	var ce *gorilla.CloseError
	if _, _, err := c.ReadMessage(); !errors.As(err, &ce) || ce.Code != 1000 {
		t.Fatalf("after the client's close: %v; want the close 1000 answered", err)
	}
	c.Close()
	if _, code := m.stop(t, syscall.SIGTERM); code != 143 {
		t.Fatalf("exit %d on SIGTERM; want 143", code)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r mock.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.WebSocket == nil || *r.WebSocket != (mock.WSReport{Sessions: 1, MessagesSent: 5, MessagesReceived: 3}) {
		t.Fatalf("report's websocket %+v; want 1 session, 5 sent, 3 received", r.WebSocket)
	}
}
