package capture

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// wsEcho is a gorilla WebSocket server on loopback echoing each message;
// with push, it also sends a message every push while the client is
// silent, until the client closes. It counts the sessions it served.
func wsEcho(t *testing.T, compress bool, push time.Duration) (addr string, sessions *atomic.Int64) {
	sessions = new(atomic.Int64)
	up := gorilla.Upgrader{EnableCompression: compress}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		sessions.Add(1)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var mu sync.Mutex // gorilla takes one writer at a time
		write := func(op int, p []byte) error {
			mu.Lock()
			defer mu.Unlock()
			return c.WriteMessage(op, p)
		}
		if push > 0 {
			done := make(chan struct{})
			defer close(done)
			go func() {
				for i := 0; ; i++ {
					select {
					case <-done:
						return
					case <-time.After(push):
					}
					if write(gorilla.TextMessage, []byte("tick")) != nil {
						return
					}
				}
			}()
		}
		for {
			op, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := write(op, p); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), sessions
}

// talk sends msgs as text on c, reads each echo, and closes the session
// with 1000 "bye": the echoes the client saw, in order.
func talk(t *testing.T, c *gorilla.Conn, msgs ...string) []string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []string
	for _, m := range msgs {
		if err := c.WriteMessage(gorilla.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
		_, p, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(p))
	}
	c.WriteMessage(gorilla.CloseMessage, gorilla.FormatCloseMessage(1000, "bye"))
	_, _, err := c.ReadMessage() // the server's close
	var ce *gorilla.CloseError
	if !errors.As(err, &ce) || ce.Code != 1000 {
		t.Errorf("after the client's close: %v; want the server's close 1000", err)
	}
	c.Close()
	return got
}

// session decodes the one upgrade pair of a recording.
func session(t *testing.T, ps []rrpair.Pair) (*rrpair.Pair, *rrpair.WebSocket) {
	t.Helper()
	if len(ps) != 1 {
		t.Fatalf("%d pairs recorded, want the upgrade pair", len(ps))
	}
	ws, err := ps[0].WebSocket()
	if err != nil || ws == nil {
		t.Fatalf("session %v, %v", ws, err)
	}
	return &ps[0], ws
}

// sequence is a session's messages as "from type data".
func sequence(ws *rrpair.WebSocket) []string {
	var seq []string
	for _, m := range ws.Messages {
		s := m.From.String() + " " + m.Type.String() + " " + string(m.Data)
		if m.Type == rrpair.WSClose {
			s += m.Reason
		}
		seq = append(seq, s)
	}
	return seq
}

var echoed = []string{
	"client text {\"op\":\"sub\"}", "server text {\"op\":\"sub\"}",
	"client text hello", "server text hello",
	"client text café", "server text café",
	"client close bye", "server close ", // gorilla's close answers the code, without a reason
}

// TestReverseRecordsWebSocket: a gorilla client talks to a gorilla
// server through replay record; the client sees every echo intact, and
// the file holds the upgrade pair with the session's six messages in
// order, then the closes.
func TestReverseRecordsWebSocket(t *testing.T) {
	addr, sessions := wsEcho(t, false, 0)
	var out fixture.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: addr})
	if err != nil {
		t.Fatal(err)
	}
	c, res, err := gorilla.DefaultDialer.Dial("ws://"+p.Addr()+"/feed?v=1", http.Header{"Authorization": {"Bearer live-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 101 {
		t.Fatalf("upgrade answered %d", res.StatusCode)
	}
	msgs := []string{`{"op":"sub"}`, "hello", "café"}
	if got := talk(t, c, msgs...); strings.Join(got, "|") != strings.Join(msgs, "|") {
		t.Errorf("the client saw %q, want its messages echoed intact", got)
	}
	closeProxy(t, p)
	pair, ws := session(t, inPairs(t, out.Bytes()))
	if string(pair.Req.URI) != "/feed?v=1" || string(pair.Req.Host) != addr || header(pair, "Authorization") != "Bearer REDACTED" || header(pair, "Upgrade") != "websocket" {
		t.Errorf("the upgrade pair: %s %s, headers %q", pair.Req.Host, pair.Req.URI, pair.Req.Headers)
	}
	if got := sequence(ws); strings.Join(got, "\n") != strings.Join(echoed, "\n") {
		t.Errorf("recorded\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(echoed, "\n"))
	}
	if ws.Messages[6].Code != 1000 || ws.Messages[7].Code != 1000 || ws.Error != "" || ws.Oversize != (rrpair.WSCounts{}) {
		t.Errorf("close code %d, error %q, oversize %+v", ws.Messages[6].Code, ws.Error, ws.Oversize)
	}
	if st := p.Stats(); st.WebSockets != 1 || st.Pairs != 1 || st.Errors != 0 || sessions.Load() != 1 {
		t.Errorf("stats %+v, sessions served %d", st, sessions.Load())
	}
}

// TestReverseRecordsCompressedWebSocket: permessage-deflate passes
// through as negotiated; the recorded payloads are decompressed.
func TestReverseRecordsCompressedWebSocket(t *testing.T) {
	addr, _ := wsEcho(t, true, 0)
	var out fixture.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: addr})
	if err != nil {
		t.Fatal(err)
	}
	d := gorilla.Dialer{EnableCompression: true}
	c, res, err := d.Dial("ws://"+p.Addr()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate") {
		t.Fatalf("no compression negotiated through the recorder: %q", res.Header)
	}
	long := strings.Repeat(`{"price":101.25,"symbol":"ACME"}`, 50)
	if got := talk(t, c, long, "short"); len(got) != 2 || got[0] != long {
		t.Errorf("echoes %d", len(got))
	}
	closeProxy(t, p)
	_, ws := session(t, inPairs(t, out.Bytes()))
	if len(ws.Messages) != 6 || string(ws.Messages[0].Data) != long || string(ws.Messages[1].Data) != long || string(ws.Messages[3].Data) != "short" {
		t.Errorf("recorded %q", sequence(ws))
	}
}

// TestReverseWebSocketOneSideSpeaks: a session in which only the server
// speaks, for longer than the idle timeout, is not cut; a message over
// the bound is relayed and counted, not kept.
func TestReverseWebSocketOneSideSpeaks(t *testing.T) {
	addr, _ := wsEcho(t, false, 50*time.Millisecond)
	var out fixture.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: addr, IdleTimeout: 200 * time.Millisecond, MaxBody: 1000})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := gorilla.DefaultDialer.Dial("ws://"+p.Addr()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	// Ticks for about five idle timeouts of the client's silence.
	for range 20 {
		if _, p, err := c.ReadMessage(); err != nil || string(p) != "tick" {
			t.Fatalf("tick: %q, %v", p, err)
		}
	}
	big := strings.Repeat("x", 2000)
	if err := c.WriteMessage(gorilla.TextMessage, []byte(big)); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		_, got, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) == big {
			break
		}
	}
	c.WriteMessage(gorilla.CloseMessage, gorilla.FormatCloseMessage(1000, ""))
	c.Close()
	closeProxy(t, p)
	_, ws := session(t, inPairs(t, out.Bytes()))
	if ws.Oversize != (rrpair.WSCounts{Client: 1, Server: 1}) {
		t.Errorf("oversize %+v, want the big message of each side", ws.Oversize)
	}
	ticks := 0
	for _, m := range ws.Messages {
		if m.From == rrpair.WSServer && string(m.Data) == "tick" {
			ticks++
		}
	}
	if ticks < 20 {
		t.Errorf("%d ticks recorded, want the 20 the client read at least", ticks)
	}
}

// TestForwardRecordsWebSocket: a client whose proxy is replay record
// --forward (gorilla tunnels through CONNECT) records its session OUT.
func TestForwardRecordsWebSocket(t *testing.T) {
	addr, _ := wsEcho(t, false, 0)
	var out fixture.Buffer
	p, _ := forwardProxy(t, &out, "", nil)
	proxyURL, _ := url.Parse("http://" + p.Addr())
	d := gorilla.Dialer{Proxy: http.ProxyURL(proxyURL), HandshakeTimeout: 5 * time.Second}
	c, _, err := d.DialContext(context.Background(), "ws://"+addr+"/feed?v=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []string{`{"op":"sub"}`, "hello", "café"}
	if got := talk(t, c, msgs...); strings.Join(got, "|") != strings.Join(msgs, "|") {
		t.Errorf("the client saw %q", got)
	}
	closeProxy(t, p)
	pair, ws := session(t, pairs(t, out.Bytes()))
	if string(pair.Direction) != "OUT" || string(pair.Req.URI) != "/feed?v=1" || string(pair.Req.Host) != addr {
		t.Errorf("the upgrade pair: %s %s %s", pair.Direction, pair.Req.Host, pair.Req.URI)
	}
	if got := sequence(ws); strings.Join(got, "\n") != strings.Join(echoed, "\n") {
		t.Errorf("recorded\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(echoed, "\n"))
	}
}

// TestWebSocketOpenAtClose: a session still open when the recorder stops
// is cut, and its pair written with the messages so far.
func TestWebSocketOpenAtClose(t *testing.T) {
	addr, _ := wsEcho(t, false, 0)
	var out fixture.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: addr})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := gorilla.DefaultDialer.Dial("ws://"+p.Addr()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := c.WriteMessage(gorilla.TextMessage, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if _, got, err := c.ReadMessage(); err != nil || string(got) != "still here" {
		t.Fatalf("echo %q, %v", got, err)
	}
	closeProxy(t, p)
	if _, _, err := c.ReadMessage(); err == nil {
		t.Error("the session goes on after the recorder stopped")
	}
	_, ws := session(t, inPairs(t, out.Bytes()))
	if got := sequence(ws); strings.Join(got, "|") != "client text still here|server text still here" {
		t.Errorf("recorded %q", got)
	}
}

// TestOtherUpgradeRelayed: a 101 to another protocol is relayed both
// ways as it comes, and its pair recorded without a session.
func TestOtherUpgradeRelayed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := rawhttp.Read(br, true, "", nil); err != nil {
			return
		}
		// The answer and the protocol's first bytes in one write.
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\nready\n")
		io.Copy(c, br) // then an echo, until the client half-closes
	}()
	var out fixture.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /raw HTTP/1.1\r\nHost: x\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(c)
	if m := readAnswer(t, br, "GET"); m.Status != 101 {
		t.Fatalf("answer %d", m.Status)
	}
	payload := "ready\n" + strings.Repeat("\x00\xffbytes as they are", 1000)
	io.WriteString(c, payload[len("ready\n"):])
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(br)
	if err != nil || string(got) != payload {
		t.Errorf("read %d bytes (%v), want the %d the upstream sent", len(got), err, len(payload))
	}
	closeProxy(t, p)
	ps := inPairs(t, out.Bytes())
	if len(ps) != 1 || ps[0].WebSocketRaw != nil || string(ps[0].Req.URI) != "/raw" {
		t.Errorf("recorded:\n%s", out.Bytes())
	}
	if st := p.Stats(); st.WebSockets != 0 || st.Pairs != 1 {
		t.Errorf("stats %+v", st)
	}
}
