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
