package websocket_test

import (
	"bufio"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/websocket"
)

func TestHandshakeHelpers(t *testing.T) {
	const key = "dGhlIHNhbXBsZSBub25jZQ=="
	req := http.Header{"Upgrade": {"websocket"}, "Connection": {"keep-alive, Upgrade"}, "Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {key}}
	if got, err := websocket.CheckRequest(req.Get); err != nil || got != key {
		t.Fatalf("CheckRequest: %q, %v", got, err)
	}
	for name, want := range map[string]string{"Upgrade": "Upgrade \"\"; want websocket", "Sec-Websocket-Version": "want 13", "Sec-Websocket-Key": "want 16 bytes in base64"} {
		bad := req.Clone()
		bad.Del(name)
		var he *websocket.HandshakeError
		if _, err := websocket.CheckRequest(bad.Get); !errors.As(err, &he) || !strings.Contains(err.Error(), want) {
			t.Errorf("without %s: %v; want %q", name, err, want)
		}
	}

	head := websocket.AppendAnswer(nil, key, "Sec-WebSocket-Protocol: chat")
	res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(head))), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, head)
	}
	if err := websocket.CheckAnswer(res.StatusCode, res.Header.Get, key); err != nil || res.Header.Get("Sec-WebSocket-Protocol") != "chat" {
		t.Errorf("CheckAnswer of AppendAnswer: %v\n%s", err, head)
	}
	if err := websocket.CheckAnswer(res.StatusCode, res.Header.Get, websocket.NewKey()); err == nil || !strings.Contains(err.Error(), "does not answer the key") {
		t.Errorf("another key: %v", err)
	}
	var he *websocket.HandshakeError
	if err := websocket.CheckAnswer(403, res.Header.Get, key); !errors.As(err, &he) || he.Status != 403 || err.Error() != "websocket: upgrade refused: 403" {
		t.Errorf("a refusal: %v", err)
	}
}
