package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// wsExportFile writes a traffic file of one recorded upgrade with session.
func wsExportFile(t *testing.T, session *rrpair.WebSocket) string {
	t.Helper()
	line := rrpair.AppendLine(nil, &rrpair.Record{TS: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC), Protocol: "http",
		Method: "GET", URI: "/chat?room=1", Host: "chat.test",
		Headers: []rrpair.Field{{Name: "Upgrade", Value: "websocket"}, {Name: "Connection", Value: "Upgrade"}, {Name: "Authorization", Value: "Bearer t"},
			{Name: "Sec-WebSocket-Key", Value: "dGhlIHNhbXBsZSBub25jZQ=="}, {Name: "Sec-WebSocket-Version", Value: "13"}},
		Status: 101, WebSocket: session})
	path := filepath.Join(t.TempDir(), "ws.jsonl")
	if err := os.WriteFile(path, line, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExportK6WebSocket: a recorded session becomes k6/websockets calls;
// the data holds its messages in order, the handshake's own fields left
// to k6; node loads the script as k6's init stage does, and one iteration
// played against a stand-in server sends each client message after the
// server messages that preceded it, then the recorded close.
func TestExportK6WebSocket(t *testing.T) {
	node := findNode(t)
	transforms := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(transforms, []byte("transforms:\n  - timestamps: {auto: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, extra := range map[string][]string{"plain": nil, "transforms": {"--transforms", transforms}} {
		t.Run(name, func(t *testing.T) { exportK6Session(t, node, extra...) })
	}
}

// exportK6Session exports the session with the extra flags and plays it.
func exportK6Session(t *testing.T, node string, extra ...string) {
	t.Helper()
	session := fixture.ChatSession()
	script := filepath.Join(t.TempDir(), "ws.js")
	args := append([]string{"export", "k6", "-f", wsExportFile(t, session), "--target", "http://127.0.0.1:8080", "-o", script}, extra...)
	r := runMain(t, context.Background(), "", args...)
	if r.code != 0 || !strings.Contains(r.stderr, "(1 WebSocket sessions)") {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	js, _ := os.ReadFile(script)
	for _, want := range []string{"import { WebSocket } from 'k6/websockets';", "new WebSocket(r.ws.url", "export default async function", "await wsSession(r);"} {
		if !strings.Contains(string(js), want) {
			t.Errorf("script lacks %q", want)
		}
	}
	var data [][]struct {
		Headers map[string]string `json:"headers"`
		WS      struct {
			URL      string `json:"url"`
			Messages []struct {
				From, Data string
				Close      bool
			} `json:"messages"`
		} `json:"ws"`
	}
	b, _ := os.ReadFile(strings.TrimSuffix(script, ".js") + ".data.json")
	if err := json.Unmarshal(b, &data); err != nil || len(data) != 1 || len(data[0]) != 1 {
		t.Fatalf("data %s: %v", b, err)
	}
	got := data[0][0]
	if got.WS.URL != "ws://127.0.0.1:8080/chat?room=1" || got.Headers["Authorization"] != "Bearer t" || got.Headers["Sec-WebSocket-Key"] != "" || got.Headers["Upgrade"] != "" {
		t.Errorf("session at %q with headers %v; want ws://127.0.0.1:8080/chat?room=1, Authorization kept, the handshake's own fields left to k6", got.WS.URL, got.Headers)
	}
	var want, play []string
	var rec []map[string]any
	for i, m := range session.Messages {
		data := string(m.Data)
		if m.Type == rrpair.WSBinary {
			data = base64.StdEncoding.EncodeToString(m.Data)
		}
		if g := got.WS.Messages; i >= len(g) || g[i].From != m.From.String() || g[i].Data != data || g[i].Close != (m.Type == rrpair.WSClose) {
			t.Fatalf("messages %+v; want the recorded ones in order", g)
		}
		switch {
		case m.Type == rrpair.WSClose:
			want = append(want, m.From.String()+" close 1000")
		case m.Type == rrpair.WSBinary && m.From == rrpair.WSClient:
			want = append(want, "client binary") // the stand-in logs what the script sent by its type
		default:
			want = append(want, m.From.String()+" "+data)
		}
		rec = append(rec, map[string]any{"from": m.From.String(), "data": data, "close": m.Type == rrpair.WSClose, "code": m.Code})
	}
	peer, _ := json.Marshal(rec)
	var out struct {
		Log []string `json:"ws_log"`
	}
	if err := json.Unmarshal(k6Node(t, node, script, "K6_WS_PLAY="+string(peer)), &out); err != nil {
		t.Fatal(err)
	}
	play = out.Log
	want = append([]string{"open ws://127.0.0.1:8080/chat?room=1"}, want...)
	if !slices.Equal(play, want) {
		t.Fatalf("the iteration played\n  %s\nwant\n  %s", strings.Join(play, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestExportK6WebSocketRefused: a session whose recording left messages
// out (over the recorder's bound) is refused, naming why; --strict fails.
func TestExportK6WebSocketRefused(t *testing.T) {
	session := fixture.ChatSession()
	session.Oversize.Client = 2
	file := wsExportFile(t, session)
	script := filepath.Join(t.TempDir(), "ws.js")
	r := runMain(t, context.Background(), "", "export", "k6", "-f", file, "--target", "http://127.0.0.1:8080", "--strict", "-o", script)
	if r.code == 0 || !strings.Contains(r.stderr, "2 messages over the recorder's bound were not kept") {
		t.Fatalf("export --strict of a session with messages left out: exit %d: %s", r.code, r.stderr)
	}
}
