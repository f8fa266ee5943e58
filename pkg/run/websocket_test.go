package run

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"
)

// wsSUT is a gorilla WebSocket server that keeps the text messages of each
// session it served, in order, and answers them as its handle says.
type wsSUT struct {
	*httptest.Server
	mu       sync.Mutex
	sessions [][]string
}

// newWSSUT serves upgrades with handle, which gets the connection and a
// function that keeps a message of the session.
func newWSSUT(t *testing.T, handle func(c *gorilla.Conn, keep func(string))) *wsSUT {
	s := &wsSUT{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&gorilla.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		s.mu.Lock()
		i := len(s.sessions)
		s.sessions = append(s.sessions, nil)
		s.mu.Unlock()
		handle(c, func(m string) {
			s.mu.Lock()
			s.sessions[i] = append(s.sessions[i], m)
			s.mu.Unlock()
		})
	}))
	t.Cleanup(s.Close)
	return s
}

// echo answers each message with itself until the client closes.
func echo(c *gorilla.Conn, keep func(string)) {
	for {
		op, p, err := c.ReadMessage()
		if err != nil {
			return
		}
		keep(string(p))
		if c.WriteMessage(op, p) != nil {
			return
		}
	}
}

// wsLine is an upgrade pair to /chat with a session of the client
// messages msgs, each answered by its echo at the offsets given (ms),
// then the client's close.
func wsLine(msgs []string, offsets []float64) string {
	var b strings.Builder
	for i, m := range msgs {
		fmt.Fprintf(&b, `{"from":"client","offset_ms":%g,"type":"text","text":%q},{"from":"server","offset_ms":%g,"type":"text","text":%q},`,
			offsets[i], m, offsets[i]+0.5, m)
	}
	last := offsets[len(offsets)-1] + 1
	fmt.Fprintf(&b, `{"from":"client","offset_ms":%g,"type":"close","code":1000,"reason":"done"},{"from":"server","offset_ms":%g,"type":"close","code":1000,"reason":"done"}`, last, last+0.5)
	return `{"ts":"2026-11-01T10:00:00Z","websocket":{"messages":[` + b.String() + `]},` +
		`"http":{"req":{"method":"GET","uri":"/chat","host":"recorded:80","headers":{"Upgrade":["websocket"],"Connection":["Upgrade"],` +
		`"Sec-WebSocket-Key":["dGhlIHNhbXBsZSBub25jZQ=="],"Sec-WebSocket-Version":["13"]}},` +
		`"res":{"statusCode":101,"headers":{"Upgrade":["websocket"],"Connection":["Upgrade"],"Sec-WebSocket-Accept":["s3pPLMBiTxaQ9kYGzzhZRbK+xOo="]}}}}`
}

// wsFile writes lines as a traffic file.
func wsFile(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var threeMessages = []string{`{"op":"join","room":"a"}`, "hello", "bye for now"}

// TestWebSocketReplay: a session of three client messages replayed with 3
// VUs, 6 iterations: the server gets six sessions of those three messages
// in order, and the summary counts 18 sent and 18 received, six sessions,
// none failed, a latency per message.
func TestWebSocketReplay(t *testing.T) {
	srv := newWSSUT(t, echo)
	o := options(wsFile(t, wsLine(threeMessages, []float64{1, 2, 3})), srv.URL)
	o.Load.VUs, o.Load.Iterations, o.Load.Mode = 3, 6, "loop"
	s, err := execute(t, context.Background(), o, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	got := srv.sessions
	srv.mu.Unlock()
	if len(got) != 6 {
		t.Fatalf("the server saw %d sessions, want 6: %q", len(got), got)
	}
	for i, sess := range got {
		if strings.Join(sess, "|") != strings.Join(threeMessages, "|") {
			t.Errorf("session %d: %q, want %q", i, sess, threeMessages)
		}
	}
	ws := s.WebSocket
	if ws == nil {
		t.Fatalf("no websocket section: %+v", s)
	}
	if ws.Sessions != 6 || ws.MessagesSent != 18 || ws.MessagesReceived != 18 || len(ws.SessionsFailed) != 0 {
		t.Errorf("sessions %d, sent %d, received %d, failed %v: want 6, 18, 18, none", ws.Sessions, ws.MessagesSent, ws.MessagesReceived, ws.SessionsFailed)
	}
	if ws.Latency.Max <= 0 || len(ws.Endpoints) != 1 || ws.Endpoints[0].MessagesSent != 18 {
		t.Errorf("latency %+v, endpoints %+v: want a latency and one endpoint of 18 messages", ws.Latency, ws.Endpoints)
	}
	if s.Requests != 6 || s.Status["101"] != 6 {
		t.Errorf("requests %d, status %v: want the 6 upgrades answered 101", s.Requests, s.Status)
	}
}
