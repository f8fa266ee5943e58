package mock

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"
	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/websocket"
)

// wsFile writes a traffic file of one recorded upgrade to /chat with the
// session, and a plain GET beside it.
func wsFile(t *testing.T, session *rrpair.WebSocket) string {
	t.Helper()
	up := string(rrpair.AppendLine(nil, &rrpair.Record{TS: recordedAt, Protocol: "http", Direction: "OUT",
		Method: "GET", URI: "/chat?room=1", Host: "chat.test",
		Headers: []rrpair.Field{{Name: "Upgrade", Value: "websocket"}, {Name: "Connection", Value: "Upgrade"},
			{Name: "Sec-WebSocket-Key", Value: "dGhlIHNhbXBsZSBub25jZQ=="}, {Name: "Sec-WebSocket-Version", Value: "13"}},
		Status: 101, ResHeaders: []rrpair.Field{{Name: "Upgrade", Value: "websocket"}, {Name: "Connection", Value: "Upgrade"},
			{Name: "Sec-WebSocket-Accept", Value: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="}},
		WebSocket: session}))
	return writeFile(t, up+rec{method: "GET", uri: "/health", host: "chat.test", status: 200, resBody: `{"up":true}`}.line())
}

// dialWS opens a session through the mock (origin-form, as the file's one
// host) with gorilla's client, permessage-deflate offered.
func dialWS(t *testing.T, s *Server, path string) (*gorilla.Conn, *http.Response, error) {
	t.Helper()
	d := gorilla.Dialer{HandshakeTimeout: 5 * time.Second, EnableCompression: true}
	c, resp, err := d.Dial("ws://"+s.Addrs()[0]+path, nil)
	if c != nil {
		t.Cleanup(func() { c.Close() })
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
	}
	return c, resp, err
}

// readWS reads one data message and checks it.
func readWS(t *testing.T, c *gorilla.Conn, wantType int, want []byte) {
	t.Helper()
	typ, got, err := c.ReadMessage()
	if err != nil || typ != wantType || !bytes.Equal(got, want) {
		t.Fatalf("read %d %q, %v; want %d %q", typ, got, err, wantType, want)
	}
}

// wantClose reads until the session's close and checks its code.
func wantClose(t *testing.T, c *gorilla.Conn, code int) {
	t.Helper()
	for range 10 {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ce *gorilla.CloseError
		if !errors.As(err, &ce) || ce.Code != code {
			t.Fatalf("session ended with %v; want a close %d", err, code)
		}
		return
	}
	t.Fatal("no close after 10 messages")
}

// TestWebSocketSession: a client's upgrade matching the recorded one
// gets a 101 with the accept of its own key and no extension (compression
// offered, not taken), then the recorded server messages, each after the
// client message it followed, and the close answered; the report counts
// the session and its messages.
func TestWebSocketSession(t *testing.T) {
	s := start(t, Options{File: wsFile(t, fixture.ChatSession()), MatchHeaders: []string{"Sec-WebSocket-Key"}})
	c, resp, err := dialWS(t, s, "/chat?room=1")
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Extensions") != "" {
		t.Fatalf("answer %d with extensions %q; want 101 without", resp.StatusCode, resp.Header.Get("Sec-WebSocket-Extensions"))
	}
	readWS(t, c, gorilla.TextMessage, []byte("hello"))
	c.WriteMessage(gorilla.TextMessage, []byte(`{"op":"sub"}`))
	readWS(t, c, gorilla.TextMessage, []byte(`{"ok":true}`))
	c.WriteMessage(gorilla.BinaryMessage, []byte{0, 1, 2})
	readWS(t, c, gorilla.TextMessage, []byte("tick 1"))
	readWS(t, c, gorilla.BinaryMessage, []byte{9, 8})
	c.WriteMessage(gorilla.TextMessage, []byte("bye"))
	readWS(t, c, gorilla.TextMessage, []byte("ciao"))
	c.WriteMessage(gorilla.CloseMessage, gorilla.FormatCloseMessage(1000, "done"))
	wantClose(t, c, 1000)
	c.Close()
	closeNow(t, s)
	r := s.Report()
	if ws := r.WebSocket; ws == nil || *ws != (WSReport{Sessions: 1, MessagesSent: 5, MessagesReceived: 3}) {
		t.Fatalf("report %+v; want 1 session, 5 sent, 3 received", ws)
	}
	var b strings.Builder
	r.WriteText(&b)
	if !strings.Contains(b.String(), "websocket: 1 sessions, 5 messages sent, 3 received") {
		t.Errorf("text report has no session line:\n%s", b.String())
	}
	var m strings.Builder
	s.WriteMetrics(&m)
	for _, want := range []string{`replay_mock_websocket_sessions_total{result="opened"} 1`, `replay_mock_websocket_messages_total{direction="sent"} 5`,
		`replay_mock_websocket_messages_total{direction="received"} 3`} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, m.String())
		}
	}
}

// TestWebSocketRecordedClose: a session the server closed in the
// recording is closed by the mock with the recorded code and reason; at
// recorded pacing a message goes at its offset, not after the client's.
func TestWebSocketRecordedClose(t *testing.T) {
	session := &rrpair.WebSocket{Messages: []rrpair.WSMessage{
		{From: rrpair.WSClient, Offset: time.Millisecond, Type: rrpair.WSText, Data: []byte("q")},
		{From: rrpair.WSServer, Offset: 2 * time.Millisecond, Type: rrpair.WSText, Data: []byte("a")},
		{From: rrpair.WSServer, Offset: 3 * time.Millisecond, Type: rrpair.WSClose, Code: 4000, Reason: "shift over"},
	}}
	s := start(t, Options{File: wsFile(t, session), WSPace: WSPaceRecorded, Latency: "recorded"})
	c, _, err := dialWS(t, s, "/chat?room=1")
	if err != nil {
		t.Fatal(err)
	}
	readWS(t, c, gorilla.TextMessage, []byte("a")) // sent before the client's "q"
	typ, _, err := c.ReadMessage()
	var ce *gorilla.CloseError
	if !errors.As(err, &ce) || ce.Code != 4000 || ce.Text != "shift over" {
		t.Fatalf("got %d, %v; want the recorded close 4000 shift over", typ, err)
	}
}

// TestWebSocketGarbage: frames RFC 6455 forbids (unmasked, a reserved
// opcode) close the session with 1002, counted as protocol errors.
func TestWebSocketGarbage(t *testing.T) {
	s := start(t, Options{File: wsFile(t, fixture.ChatSession())})
	for _, frame := range [][]byte{
		websocket.AppendFrame(nil, true, false, websocket.OpText, nil, []byte("unmasked")),
		{0x83, 0x80, 1, 2, 3, 4}, // opcode 3, reserved
	} {
		c, _, err := dialWS(t, s, "/chat?room=1")
		if err != nil {
			t.Fatal(err)
		}
		readWS(t, c, gorilla.TextMessage, []byte("hello"))
		if _, err := c.NetConn().Write(frame); err != nil {
			t.Fatal(err)
		}
		wantClose(t, c, 1002)
	}
	closeNow(t, s)
	if ws := s.Report().WebSocket; ws == nil || ws.ProtocolErrors != 2 || ws.Sessions != 2 {
		t.Fatalf("report %+v; want 2 sessions, 2 protocol errors", ws)
	}
}

// TestWebSocketTooLarge: a client message over twice the longest
// recorded plus the body slack closes the session with 1009.
func TestWebSocketTooLarge(t *testing.T) {
	s := start(t, Options{File: wsFile(t, fixture.ChatSession())})
	c, _, err := dialWS(t, s, "/chat?room=1")
	if err != nil {
		t.Fatal(err)
	}
	readWS(t, c, gorilla.TextMessage, []byte("hello"))
	c.WriteMessage(gorilla.BinaryMessage, make([]byte, bodySlack+100))
	wantClose(t, c, 1009)
	closeNow(t, s)
	if ws := s.Report().WebSocket; ws == nil || ws.TooLarge != 1 || ws.MessagesReceived != 0 {
		t.Fatalf("report %+v; want 1 too large, none received", ws)
	}
}

// TestWebSocketMiss: an upgrade no recorded one matches gets the mock's
// miss answer; a request that matches but is no handshake gets a 400.
func TestWebSocketMiss(t *testing.T) {
	s := start(t, Options{File: wsFile(t, fixture.ChatSession())})
	_, resp, err := dialWS(t, s, "/chat?room=2")
	if !errors.Is(err, gorilla.ErrBadHandshake) || resp == nil || resp.StatusCode != DefaultMissStatus {
		t.Fatalf("dial of an unrecorded path: %v, %v; want the miss status %d", err, resp, DefaultMissStatus)
	}
	conn, err := net.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET /chat?room=1 HTTP/1.1\r\nHost: chat.test\r\n\r\n"))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf [512]byte
	n, _ := conn.Read(buf[:])
	if !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 400")) {
		t.Fatalf("a plain GET of the upgrade's path got %q; want a 400", buf[:n])
	}
}

// TestWebSocketPingAndStop: a client's ping is answered with its pong; a
// stop closes an open session with 1001; with --passthrough an upgrade no
// recorded one matches is a miss, not sent on.
func TestWebSocketPingAndStop(t *testing.T) {
	s := start(t, Options{File: wsFile(t, fixture.ChatSession()), Passthrough: true})
	c, _, err := dialWS(t, s, "/chat?room=1")
	if err != nil {
		t.Fatal(err)
	}
	pong := make(chan string, 1)
	c.SetPongHandler(func(data string) error { pong <- data; return nil })
	readWS(t, c, gorilla.TextMessage, []byte("hello"))
	c.WriteControl(gorilla.PingMessage, []byte("p1"), time.Now().Add(5*time.Second))
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				closed <- err
				return
			}
		}
	}()
	select {
	case got := <-pong:
		if got != "p1" {
			t.Fatalf("pong %q; want p1", got)
		}
	case err := <-closed:
		t.Fatalf("session ended before the pong: %v", err)
	}
	if _, resp, err := dialWS(t, s, "/chat?room=9"); err == nil || resp == nil || resp.StatusCode != DefaultMissStatus {
		t.Fatalf("an unmatched upgrade with --passthrough: %v, %v; want the miss status", err, resp)
	}
	closeNow(t, s)
	var ce *gorilla.CloseError
	if err := <-closed; !errors.As(err, &ce) || ce.Code != 1001 {
		t.Fatalf("on stop the session ended with %v; want a close 1001", err)
	}
	if r := s.Report(); r.Passthrough != 0 || r.Misses != 1 {
		t.Fatalf("passthrough %d, misses %d; want 0 and 1", r.Passthrough, r.Misses)
	}
}

// TestWebSocketSubprotocol: the 101 names the subprotocol the recorded
// server chose when the client offers it (a client that offered
// subprotocols, as GraphQL and STOMP clients do, fails a 101 naming
// none), and names none when the recording chose none.
func TestWebSocketSubprotocol(t *testing.T) {
	line := string(rrpair.AppendLine(nil, &rrpair.Record{TS: recordedAt, Protocol: "http", Direction: "OUT",
		Method: "GET", URI: "/graphql", Host: "chat.test",
		Headers: []rrpair.Field{{Name: "Upgrade", Value: "websocket"}, {Name: "Connection", Value: "Upgrade"},
			{Name: "Sec-WebSocket-Key", Value: "dGhlIHNhbXBsZSBub25jZQ=="}, {Name: "Sec-WebSocket-Version", Value: "13"},
			{Name: "Sec-WebSocket-Protocol", Value: "graphql-ws, graphql-transport-ws"}},
		Status: 101, ResHeaders: []rrpair.Field{{Name: "Upgrade", Value: "websocket"}, {Name: "Connection", Value: "Upgrade"},
			{Name: "Sec-WebSocket-Accept", Value: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="}, {Name: "Sec-WebSocket-Protocol", Value: "graphql-transport-ws"}},
		WebSocket: &rrpair.WebSocket{Messages: []rrpair.WSMessage{}}}))
	s := start(t, Options{File: writeFile(t, line)})
	d := gorilla.Dialer{HandshakeTimeout: 5 * time.Second, Subprotocols: []string{"graphql-ws", "graphql-transport-ws"}}
	c, resp, err := d.Dial("ws://"+s.Addrs()[0]+"/graphql", nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer c.Close()
	if got := c.Subprotocol(); got != "graphql-transport-ws" {
		t.Errorf("subprotocol %q, want the recorded graphql-transport-ws", got)
	}
	for _, tc := range []struct{ offered, recorded, want string }{
		{"a, b", "b", "b"},
		{"a, b", "c", "a"},
		{"a, b", "", ""},
		{"", "b", ""},
		{" B ", "b", "B"},
	} {
		if got := subprotocol(tc.offered, tc.recorded); got != tc.want {
			t.Errorf("subprotocol(%q, %q) = %q, want %q", tc.offered, tc.recorded, got, tc.want)
		}
	}
}
