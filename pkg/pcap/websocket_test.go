package pcap

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/websocket"
)

// wsFrame is a frame as its side writes it: a client's masked.
func wsFrame(client, fin bool, op websocket.Opcode, payload string) string {
	var mask *[4]byte
	if client {
		mask = &[4]byte{1, 2, 3, 4}
	}
	return string(websocket.AppendFrame(nil, fin, false, op, mask, []byte(payload)))
}

// sessionsOf reads the sessions of the pairs an import wrote, by URI.
func sessionsOf(t *testing.T, out string) map[string]*rrpair.WebSocket {
	t.Helper()
	got := map[string]*rrpair.WebSocket{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var v struct {
			WebSocket json.RawMessage `json:"websocket"`
			HTTP      struct{ Req struct{ URI string } }
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		if v.WebSocket != nil {
			ws, err := rrpair.DecodeWebSocket(v.WebSocket)
			if err != nil {
				t.Fatal(err)
			}
			got[v.HTTP.Req.URI] = ws
		}
	}
	return got
}

// TestWebSocketSessions: with Options.WebSockets, the frames after a 101
// are read, in segments that split them anywhere, into the upgrade pair's
// session; without it, the connection is passed over from the upgrade
// on, as before.
func TestWebSocketSessions(t *testing.T) {
	c := newCapture(t)
	k := c.conn("10.0.0.1:40021", "10.0.0.2:8080")
	k.handshake()
	k.send(true, get("/before"))
	k.send(false, ok("before"))
	k.send(true, "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	k.send(false, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"+wsFrame(false, true, websocket.OpText, "welcome"))
	// A fragmented text message with a ping between its fragments, its
	// bytes split across segments in the middle of frames.
	msg := wsFrame(true, false, websocket.OpText, "hel") + wsFrame(true, true, websocket.OpPing, "") + wsFrame(true, true, websocket.OpContinuation, "lo "+strings.Repeat("x", 3000))
	k.mss = 7
	k.send(true, msg[:40])
	k.mss = 1400
	k.send(true, msg[40:])
	k.send(false, wsFrame(false, true, websocket.OpBinary, "\x00\x01\x02"))
	k.send(true, wsFrame(true, true, websocket.OpClose, "\x03\xe8bye"))
	k.send(false, wsFrame(false, true, websocket.OpClose, "\x03\xe8"))
	k.close()
	capture := c.pcap(layers.LinkTypeEthernet)

	r := importCaptures(t, Options{WebSockets: true}, "capture.pcap", capture)
	if r.err != nil || len(r.pairs) != 2 || r.pairs[1].String() != "GET /ws -> 101" || r.st.WebSockets != 1 || len(r.skips) != 0 {
		t.Fatalf("%v: pairs %q, skips %q, %s", r.err, shorts(r.pairs), r.skips, r.st.Summary())
	}
	ws := sessionsOf(t, r.out)["/ws"]
	var seq []string
	for _, m := range ws.Messages {
		seq = append(seq, m.From.String()+" "+m.Type.String()+" "+string(m.Data)+m.Reason)
	}
	want := []string{"server text welcome", "client text hello " + strings.Repeat("x", 3000), "server binary \x00\x01\x02", "client close bye", "server close "}
	if strings.Join(seq, "|") != strings.Join(want, "|") || ws.Pings.Client != 1 || ws.Error != "" {
		t.Errorf("session %q, pings %+v, error %q", seq, ws.Pings, ws.Error)
	}
	for i := 1; i < len(ws.Messages); i++ {
		if ws.Messages[i].Offset <= ws.Messages[i-1].Offset {
			t.Errorf("offsets %v then %v: the capture's times", ws.Messages[i-1].Offset, ws.Messages[i].Offset)
		}
	}
	if !strings.Contains(r.st.Summary(), "1 WebSocket session kept with its messages") {
		t.Errorf("summary: %s", r.st.Summary())
	}

	r = importCaptures(t, Options{}, "capture.pcap", capture)
	if len(r.pairs) != 1 || len(r.skips) != 1 || !strings.Contains(r.skips[0], "upgrade: GET /ws (an upgrade to websocket)") {
		t.Errorf("without the option: pairs %q, skips %q", shorts(r.pairs), r.skips)
	}
}

// TestWebSocketSessionGap: a gap in one side's bytes ends the reading of
// its messages, said in the session; what came before is kept.
func TestWebSocketSessionGap(t *testing.T) {
	c := newCapture(t)
	k := c.conn("10.0.0.1:40022", "10.0.0.2:8080")
	k.handshake()
	k.send(true, "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	k.send(false, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	k.send(true, wsFrame(true, true, websocket.OpText, "kept"))
	lost := k.send(true, wsFrame(true, true, websocket.OpText, "lost"))
	k.send(true, wsFrame(true, true, websocket.OpText, "after"))
	k.send(false, wsFrame(false, true, websocket.OpText, "server goes on"))
	c.drop(lost...)
	k.close()
	r := importCaptures(t, Options{WebSockets: true}, "capture.pcap", c.pcap(layers.LinkTypeEthernet))
	ws := sessionsOf(t, r.out)["/ws"]
	if ws == nil || len(ws.Messages) != 2 || string(ws.Messages[0].Data) != "kept" || string(ws.Messages[1].Data) != "server goes on" || !strings.HasPrefix(ws.Error, "client: ") {
		t.Fatalf("session %+v; skips %q", ws, r.skips)
	}
}
