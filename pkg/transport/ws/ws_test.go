package ws

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/websocket"
)

// TestSetKey: the recorded key is replaced by a fresh one each time, in
// its place; a request without the upgrade's fields gets them.
func TestSetKey(t *testing.T) {
	recorded := "dGhlIHNhbXBsZSBub25jZQ=="
	req := &rrpair.Request{Headers: []rrpair.Header{{Name: []byte("Upgrade"), Value: []byte("websocket")},
		{Name: []byte("sec-websocket-key"), Value: []byte(recorded)}, {Name: []byte("Sec-WebSocket-Version"), Value: []byte("13")}}}
	k1 := SetKey(req)
	if len(req.Headers) != 3 || string(req.Headers[1].Value) != k1 || k1 == recorded || len(k1) != 24 {
		t.Errorf("key %q, headers %q: want the recorded key replaced in place by a fresh one", k1, req.Headers)
	}
	if k2 := SetKey(req); k2 == k1 {
		t.Errorf("the same key twice: %q", k2)
	}
	bare := &rrpair.Request{}
	key := SetKey(bare)
	get := func(name string) string {
		for _, h := range bare.Headers {
			if rrpair.EqualFold(h.Name, name) {
				return string(h.Value)
			}
		}
		return ""
	}
	if get("upgrade") != "websocket" || get("sec-websocket-version") != "13" || get("sec-websocket-key") != key {
		t.Errorf("headers %q: want Upgrade, Sec-WebSocket-Version and the key added", bare.Headers)
	}
}

// TestOpened: the upgrade's outcome as the session's.
func TestOpened(t *testing.T) {
	key := websocket.NewKey()
	fields := map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": websocket.AcceptKey(key)}
	get := func(name string) string { return fields[name] }
	for _, tc := range []struct {
		res    result.Result
		key    string
		ok     bool
		fail   result.WSFail
		status uint16
	}{
		{result.Result{Status: 101}, key, true, result.WSOK, 0},
		{result.Result{Status: 101}, websocket.NewKey(), false, result.WSRefused, 101},
		{result.Result{Status: 403}, key, false, result.WSRefused, 403},
		{result.Result{Err: result.ErrTimeout}, key, false, result.WSTimeout, 0},
		{result.Result{Err: result.ErrConnect}, key, false, result.WSError, 0},
	} {
		var out result.Result
		if ok := Opened(&tc.res, get, tc.key, &out); ok != tc.ok || out.WSFail != tc.fail || out.Status != tc.status {
			t.Errorf("%+v: opened %v, %v %d; want %v, %v %d", tc.res, ok, out.WSFail, out.Status, tc.ok, tc.fail, tc.status)
		}
	}
}

// TestPlayRefusesAnUnreadableExtension: a 101 that took an extension the
// client cannot read (a window of 99 bits) fails the session as refused
// before a message goes, rather than as the server's protocol error at
// its first compressed frame.
func TestPlayRefusesAnUnreadableExtension(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go io.Copy(io.Discard, server)
	c := &Conn{NC: client, R: bufio.NewReader(client), Timeout: time.Second,
		Get: func(name string) string {
			if strings.EqualFold(name, "Sec-WebSocket-Extensions") {
				return "permessage-deflate; server_max_window_bits=99"
			}
			return ""
		},
		Now: func() int64 { return time.Now().UnixNano() }, Cut: func() bool { return false }}
	s := &transport.Session{WS: &rrpair.WebSocket{Messages: []rrpair.WSMessage{{From: rrpair.WSClient, Type: rrpair.WSText, Data: []byte("hi")}}}}
	var out result.Result
	Play(c, s, time.Now().UnixNano(), &out)
	if out.WSFail != result.WSRefused || out.WSSent != 0 {
		t.Errorf("session %v, %d sent; want refused, nothing sent", out.WSFail, out.WSSent)
	}
}

// TestPlayReadsWhileItWrites: a server that writes 16 MiB of messages and
// pings before it reads anything, to a client whose first message is 16
// MiB too, more than loopback's socket buffers hold. Each side's
// write then waits for the other to read: the session completes only if
// the client reads on while it writes (it used to stop after 16 messages,
// or at the first ping, whose pong waited for the client's own write,
// and the session failed after its timeout).
func TestPlayReadsWhileItWrites(t *testing.T) {
	const msgs, size, pingEvery = 64, 256 << 10, 8
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type seen struct {
		got   int // bytes of the client's message
		pongs int
		err   error
	}
	served := make(chan seen, 1)
	go func() {
		var s seen
		defer func() { served <- s }()
		nc, err := ln.Accept()
		if err != nil {
			s.err = err
			return
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		w := websocket.NewWriter(nc, websocket.Server)
		for i := range msgs { // all of it before a read
			if i%pingEvery == 0 {
				if s.err = w.WriteMessage(websocket.OpPing, []byte{byte(i)}); s.err != nil {
					return
				}
			}
			if s.err = w.WriteMessage(websocket.OpText, []byte(strings.Repeat("s", size))); s.err != nil {
				return
			}
		}
		rd := websocket.NewReader(nc, websocket.ReaderOptions{Sender: websocket.Client, MaxMessage: 32 << 20})
		for {
			m, err := rd.ReadMessage()
			if err != nil {
				s.err = err
				return
			}
			switch m.Opcode {
			case websocket.OpPong:
				s.pongs++
			case websocket.OpClose:
				w.WriteClose(websocket.CloseNormal, "")
				return
			default:
				s.got += len(m.Payload)
			}
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &Conn{NC: nc, R: bufio.NewReader(nc), Timeout: 5 * time.Second, MaxMessage: size,
		Get: func(string) string { return "" },
		Now: func() int64 { return time.Now().UnixNano() }, Cut: func() bool { return false }}
	big := strings.Repeat("c", 16<<20)
	rec := []rrpair.WSMessage{{From: rrpair.WSClient, Type: rrpair.WSText, Data: []byte(big)}}
	for range msgs {
		rec = append(rec, rrpair.WSMessage{From: rrpair.WSServer, Type: rrpair.WSText, Data: []byte("s")})
	}
	s := &transport.Session{WS: &rrpair.WebSocket{Messages: rec}}
	var out result.Result
	Play(c, s, time.Now().UnixNano(), &out)
	got := <-served
	if out.WSFail != result.WSOK || out.WSSent != 1 || out.WSReceived != msgs || out.WSPings != msgs/pingEvery {
		t.Errorf("session %v, %d sent, %d received, %d pings; want sound, 1 sent, %d received, %d pings", out.WSFail, out.WSSent, out.WSReceived, out.WSPings, msgs, msgs/pingEvery)
	}
	if got.got != len(big) || got.pongs != msgs/pingEvery || got.err != nil {
		t.Errorf("the server read %d bytes and %d pongs (%v); want %d and %d, the client's close last", got.got, got.pongs, got.err, len(big), msgs/pingEvery)
	}
}
