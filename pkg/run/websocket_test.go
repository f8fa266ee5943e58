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
	"sync/atomic"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"

	"github.com/replay-dev/replay/internal/testutil/wspeer"
	"github.com/replay-dev/replay/pkg/report"
)

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
	srv := wspeer.Serve(t, wspeer.Echo)
	o := options(wsFile(t, wsLine(threeMessages, []float64{1, 2, 3})), srv.URL)
	o.Load.VUs, o.Load.Iterations, o.Load.Mode = 3, 6, "loop"
	s, err := execute(t, context.Background(), o, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Sessions()
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
	if ws.Sessions != 6 || ws.Opened != 6 || ws.MessagesSent != 18 || ws.MessagesReceived != 18 || len(ws.SessionsFailed) != 0 {
		t.Errorf("sessions %d, sent %d, received %d, failed %v: want 6, 18, 18, none", ws.Sessions, ws.MessagesSent, ws.MessagesReceived, ws.SessionsFailed)
	}
	if ws.Latency.Max <= 0 || len(ws.Endpoints) != 1 || ws.Endpoints[0].MessagesSent != 18 {
		t.Errorf("latency %+v, endpoints %+v: want a latency and one endpoint of 18 messages", ws.Latency, ws.Endpoints)
	}
	if s.Requests != 6 || s.Status["101"] != 6 {
		t.Errorf("requests %d, status %v: want the 6 upgrades answered 101", s.Requests, s.Status)
	}
}

// wsRun is the options of a run of the traffic line, iterations times
// on 2 VUs against url, changed by opt.
func wsRun(t *testing.T, url string, iterations int64, line string, opt func(o *Options)) *Options {
	t.Helper()
	o := options(wsFile(t, line), url)
	o.Load.Iterations, o.Load.Mode = iterations, "loop"
	if opt != nil {
		opt(&o)
	}
	return &o
}

// TestWebSocketFailures: a refused upgrade is counted with its status, a
// server that closes after the first message as closed early, one that
// never answers as a timeout; each session once, none as another kind.
func TestWebSocketFailures(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	t.Cleanup(refusing.Close)
	closing := wspeer.Serve(t, func(c *gorilla.Conn, keep func(string)) {
		op, p, err := c.ReadMessage()
		if err != nil {
			return
		}
		keep(string(p))
		c.WriteMessage(op, p)
		c.WriteControl(gorilla.CloseMessage, gorilla.FormatCloseMessage(1001, "going away"), time.Now().Add(time.Second))
	})
	silent := wspeer.Serve(t, func(c *gorilla.Conn, keep func(string)) {
		for {
			_, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			keep(string(p))
		}
	})
	failing := wspeer.Serve(t, func(c *gorilla.Conn, keep func(string)) { // all answered, then 1011
		for range threeMessages {
			op, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			keep(string(p))
			c.WriteMessage(op, p)
		}
		c.WriteControl(gorilla.CloseMessage, gorilla.FormatCloseMessage(1011, "internal error"), time.Now().Add(time.Second))
		c.ReadMessage() // the client's close
	})
	line := wsLine(threeMessages, []float64{1, 2, 3})
	for _, tc := range []struct {
		name, url, kind string
		status          string
		unanswered      int64 // client messages sent that the server did not answer, 1 a session
	}{
		{"refused", refusing.URL, "refused", "403", 0},
		{"closed early", closing.URL, "closed_early", "", 4},
		{"timeout", silent.URL, "timeout", "", 4},
		{"closed with an error after all", failing.URL, "close_error", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := wsRun(t, tc.url, 4, line, func(o *Options) { o.HTTP.Timeout = 300 * time.Millisecond })
			s, err := execute(t, context.Background(), *o, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			ws := s.WebSocket
			if ws == nil || ws.Sessions != 4 || ws.SessionsFailed[tc.kind] != 4 || ws.Failed() != 4 {
				t.Fatalf("websocket %+v: want 4 sessions, all failed as %s", ws, tc.kind)
			}
			if tc.status != "" && (ws.RefusedStatus[tc.status] != 4 || ws.Opened != 0) {
				t.Errorf("refused by status %v, %d opened: want %s: 4, none opened", ws.RefusedStatus, ws.Opened, tc.status)
			}
			if tc.status == "" && ws.Opened != 4 {
				t.Errorf("%d sessions opened, want 4", ws.Opened)
			}
			// A message never answered counts against the latency bound:
			// ws.p99 passes only when every message sent was answered.
			th, _ := report.ParseThreshold("ws.p99<10s")
			pass := report.Evaluate(s, []report.Threshold{th})
			if ws.Unanswered != tc.unanswered || pass != (tc.unanswered == 0 && ws.Latency.Max > 0) {
				t.Errorf("%d unanswered, ws.p99<10s pass %v (%s): want %d unanswered, pass only when none", ws.Unanswered, pass, s.Thresholds[0].MeasuredText(3), tc.unanswered)
			}
		})
	}
	if n := len(closing.Sessions()); n != 4 {
		t.Errorf("the closing server saw %d sessions, want 4", n)
	}
	for i, sess := range silent.Sessions() {
		if len(sess) != 1 {
			t.Errorf("silent server's session %d: %q, want the first message only (the second waits for an answer)", i, sess)
		}
	}
}

// TestWebSocketPaceRecorded: under --pace recorded the client's messages
// go at their recorded offsets divided by --speed (0, 300 and 600 ms at
// speed 2: 150 ms apart), though the server answers at once; by default
// they go as soon as the answers come.
func TestWebSocketPaceRecorded(t *testing.T) {
	var mu sync.Mutex
	var arrivals [][]time.Time
	srv := wspeer.Serve(t, func(c *gorilla.Conn, keep func(string)) {
		mu.Lock()
		arrivals = append(arrivals, nil)
		i := len(arrivals) - 1
		mu.Unlock()
		for {
			op, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			mu.Lock()
			arrivals[i] = append(arrivals[i], time.Now())
			mu.Unlock()
			keep(string(p))
			c.WriteMessage(op, p)
		}
	})
	line := wsLine(threeMessages, []float64{0, 300, 600})
	o := wsRun(t, srv.URL, 1, line, func(o *Options) { o.Load.Pace, o.Load.Speed, o.Load.Mode, o.Load.Iterations = "recorded", 2, "once", 0 })
	s, err := execute(t, context.Background(), *o, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ws := s.WebSocket; ws == nil || ws.MessagesSent != 3 || ws.MessagesReceived != 3 || ws.Failed() != 0 {
		t.Fatalf("websocket %+v: want 3 messages each way, no failure", ws)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals) != 1 || len(arrivals[0]) != 3 {
		t.Fatalf("arrivals %v, want one session of 3 messages", arrivals)
	}
	a := arrivals[0]
	for i := 1; i < 3; i++ {
		if gap := a[i].Sub(a[i-1]); gap < 140*time.Millisecond {
			t.Errorf("message %d came %v after the one before, want about 150ms (300ms recorded, speed 2)", i+1, gap)
		}
	}
}

// TestWebSocketTransform: the timestamps transform moves a timestamp in a
// client's text message as it would in a body.
func TestWebSocketTransform(t *testing.T) {
	srv := wspeer.Serve(t, wspeer.Echo)
	msgs := []string{`{"sent_at":"2026-11-01T10:00:00Z","op":"ping"}`}
	o := wsRun(t, srv.URL, 1, wsLine(msgs, []float64{1}), func(o *Options) {
		o.Transforms.ShiftTime = true
		o.Load.Mode, o.Load.Iterations = "once", 0
	})
	s, err := execute(t, context.Background(), *o, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sessions := srv.Sessions()
	if len(sessions) != 1 || len(sessions[0]) != 1 {
		t.Fatalf("sessions %q, want one of one message", sessions)
	}
	got := sessions[0][0]
	if got == msgs[0] || !strings.HasPrefix(got, `{"sent_at":"`) || !strings.HasSuffix(got, `Z","op":"ping"}`) {
		t.Errorf("the server got %s, want the timestamp of %s moved to now, the rest kept", got, msgs[0])
	}
	if s.WebSocket == nil || s.WebSocket.MessagesReceived != 1 {
		t.Errorf("websocket %+v, want one message received", s.WebSocket)
	}
}

// TestWebSocketCompare: --compare body compares each server message with
// the recorded one of the same rank: an echo matches all three, a server
// that shouts them back matches none, and the mismatch keeps an example.
func TestWebSocketCompare(t *testing.T) {
	shouting := wspeer.Serve(t, func(c *gorilla.Conn, keep func(string)) {
		for {
			op, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			keep(string(p))
			c.WriteMessage(op, []byte(strings.ToUpper(string(p))))
		}
	})
	line := wsLine(threeMessages, []float64{1, 2, 3})
	for _, tc := range []struct {
		name    string
		url     string
		matched int64
	}{{"echo", wspeer.Serve(t, wspeer.Echo).URL, 3}, {"shouting", shouting.URL, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			o := wsRun(t, tc.url, 1, line, func(o *Options) { o.Compare.Mode, o.Load.Mode, o.Load.Iterations = "body", "once", 0 })
			s, err := execute(t, context.Background(), *o, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			c := s.Compare
			if c == nil || c.MessagesCompared != 3 || c.MessagesMatched != tc.matched {
				t.Fatalf("compare %+v: want 3 messages compared, %d matched", c, tc.matched)
			}
			if tc.matched == 0 && (len(c.Mismatches) != 1 || c.Mismatches[0].Kind != "message" || c.Mismatches[0].Count != 3) {
				t.Errorf("mismatches %+v: want one kind, message, counted 3 times", c.Mismatches)
			}
		})
	}
}

// TestWebSocketBounds: a server message over --max-answer-body ends the
// session as too_large; a ping from the server is answered with a pong,
// and the session goes on.
func TestWebSocketBounds(t *testing.T) {
	huge := wspeer.Serve(t, func(c *gorilla.Conn, keep func(string)) {
		if _, p, err := c.ReadMessage(); err == nil {
			keep(string(p))
			c.WriteMessage(gorilla.TextMessage, []byte(strings.Repeat("x", 64<<10)))
		}
		c.ReadMessage() // until the client goes
	})
	pong := make(chan struct{})
	var once sync.Once
	pinging := wspeer.Serve(t, func(c *gorilla.Conn, keep func(string)) {
		c.SetPongHandler(func(string) error { once.Do(func() { close(pong) }); return nil })
		c.WriteControl(gorilla.PingMessage, []byte("are you there"), time.Now().Add(time.Second))
		wspeer.Echo(c, keep)
	})
	line := wsLine(threeMessages, []float64{1, 2, 3})
	o := wsRun(t, huge.URL, 2, line, func(o *Options) { o.HTTP.MaxAnswerBody = 1024 })
	s, err := execute(t, context.Background(), *o, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ws := s.WebSocket; ws == nil || ws.SessionsFailed["too_large"] != 2 || ws.MessagesReceived != 0 {
		t.Errorf("websocket %+v: want both sessions too_large, no message received", ws)
	}
	o = wsRun(t, pinging.URL, 1, line, nil)
	if s, err = execute(t, context.Background(), *o, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if ws := s.WebSocket; ws == nil || ws.Failed() != 0 || ws.MessagesReceived != 3 {
		t.Errorf("websocket %+v: want the session whole, 3 messages received", ws)
	}
	select {
	case <-pong:
	case <-time.After(10 * time.Second):
		t.Error("the server's ping was not answered")
	}
}

// TestWebSocketPings: a server that pings before each answer gets a pong
// for each, and the summary counts its pings, in total and for the
// endpoint.
func TestWebSocketPings(t *testing.T) {
	var pongs atomic.Int64
	srv := wspeer.Serve(t, func(c *gorilla.Conn, keep func(string)) {
		c.SetPongHandler(func(string) error { pongs.Add(1); return nil })
		for {
			op, p, err := c.ReadMessage() // the pongs are read here too
			if err != nil {
				return
			}
			keep(string(p))
			c.WriteControl(gorilla.PingMessage, []byte("are you there"), time.Now().Add(time.Second))
			c.WriteMessage(op, p)
		}
	})
	o := wsRun(t, srv.URL, 2, wsLine(threeMessages, []float64{1, 2, 3}), nil)
	s, err := execute(t, context.Background(), *o, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ws := s.WebSocket
	if ws == nil || ws.Failed() != 0 || ws.MessagesReceived != 6 || ws.Pings != 6 || len(ws.Endpoints) != 1 || ws.Endpoints[0].Pings != 6 {
		t.Fatalf("websocket %+v: want 2 sessions of 3 messages and 3 pings each, counted for the endpoint too", ws)
	}
	// Each pong goes before the client's next message or its close.
	if n := pongs.Load(); n != 6 {
		t.Errorf("the server got %d pongs, want one a ping", n)
	}
}
