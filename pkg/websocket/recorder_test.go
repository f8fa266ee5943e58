package websocket_test

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/websocket"
)

// What the recorder relays is what came, byte for byte; what it keeps is
// the messages, inflated, with pings counted and oversize ones counted.
func TestRecorderRelaysAndRecords(t *testing.T) {
	c, s := websocket.Client, websocket.Server
	comp := deflateStream(t, true, "inflated "+strings.Repeat("x", 200))
	client := cat(
		frame(c, false, false, websocket.OpText, "hel"),
		frame(c, true, false, websocket.OpPing, ""),
		frame(c, true, false, websocket.OpContinuation, "lo"),
		frame(c, true, false, websocket.OpBinary, strings.Repeat("b", 300)), // over the bound of 256
		frame(c, true, false, websocket.OpClose, "\x03\xe8bye"),
	)
	server := cat(
		websocket.AppendFrame(nil, true, true, websocket.OpText, nil, comp[0]),
		frame(s, true, false, websocket.OpPing, "p"),
		frame(s, true, false, websocket.OpPong, ""),
		frame(s, true, false, websocket.OpClose, ""),
	)
	rec := websocket.NewRecorder(time.Now(), websocket.RecorderOptions{MaxMessage: 256, MaxSession: 4096, Deflate: websocket.Deflate{Enabled: true, ClientNoContextTakeover: true}})
	var toServer, toClient bytes.Buffer
	if err := rec.Relay(&toServer, bytes.NewReader(client), c); err != nil {
		t.Fatal(err)
	}
	if err := rec.Relay(&toClient, bytes.NewReader(server), s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(toServer.Bytes(), client) || !bytes.Equal(toClient.Bytes(), server) {
		t.Fatal("the relayed bytes differ from the bytes read")
	}
	ws := rec.Session()
	var seq []string
	for i, m := range ws.Messages {
		seq = append(seq, m.From.String()+" "+m.Type.String()+" "+string(m.Data)+m.Reason)
		if i > 0 && m.Offset < ws.Messages[i-1].Offset {
			t.Errorf("offsets go back at %d", i)
		}
	}
	want := []string{"client text hello", "client close bye", "server text inflated " + strings.Repeat("x", 200), "server close "}
	if strings.Join(seq, "|") != strings.Join(want, "|") {
		t.Errorf("messages %q, want %q", seq, want)
	}
	if ws.Messages[1].Code != 1000 || ws.Messages[3].Code != 0 {
		t.Errorf("close codes %d, %d", ws.Messages[1].Code, ws.Messages[3].Code)
	}
	if ws.Pings != (rrpair.WSCounts{Client: 1, Server: 1}) || ws.Oversize != (rrpair.WSCounts{Client: 1}) || ws.Error != "" {
		t.Errorf("pings %+v, oversize %+v, error %q", ws.Pings, ws.Oversize, ws.Error)
	}
}

// A frame the framer refuses ends the recording, not the relay.
func TestRecorderRelaysPastABadFrame(t *testing.T) {
	s := websocket.Server
	in := cat(frame(s, true, false, websocket.OpText, "ok"), []byte{0x83, 0x01, 'x'}, frame(s, true, false, websocket.OpText, "after"), bytes.Repeat([]byte("z"), 10000))
	rec := websocket.NewRecorder(time.Now(), websocket.RecorderOptions{})
	var out bytes.Buffer
	if err := rec.Relay(&out, bytes.NewReader(in), s); err != nil {
		t.Fatal(err)
	}
	ws := rec.Session()
	if !bytes.Equal(out.Bytes(), in) || len(ws.Messages) != 1 || !strings.Contains(ws.Error, "server: websocket: protocol error: reserved opcode 0x3") {
		t.Errorf("relayed %d of %d bytes; messages %+v, error %q", out.Len(), len(in), ws.Messages, ws.Error)
	}
}

// The messages kept together are bounded: past it they are counted.
func TestRecorderBoundsTheSession(t *testing.T) {
	s := websocket.Server
	var in []byte
	for range 100 {
		in = append(in, frame(s, true, false, websocket.OpBinary, strings.Repeat("m", 100))...)
	}
	rec := websocket.NewRecorder(time.Now(), websocket.RecorderOptions{MaxMessage: 1000, MaxSession: 1640})
	if err := rec.Relay(&bytes.Buffer{}, bytes.NewReader(in), s); err != nil {
		t.Fatal(err)
	}
	ws := rec.Session()
	if len(ws.Messages) != 10 || ws.Oversize.Server != 90 || !strings.Contains(ws.Error, "passed the bound of 1640 bytes together") {
		t.Errorf("kept %d, oversize %+v, error %q", len(ws.Messages), ws.Oversize, ws.Error)
	}
}

func TestIsUpgrade(t *testing.T) {
	for v, want := range map[string]bool{"websocket": true, "WebSocket": true, "h2c, websocket": true, "h2c": false, "": false, "websockets": false} {
		if websocket.IsUpgrade(v) != want {
			t.Errorf("IsUpgrade(%q) = %v", v, !want)
		}
	}
}

// TestRecorderSaysASideWasCut: a side that ends in the middle of a frame
// leaves the session saying so (Error), where it was written as if it had
// ended; a side the relay itself closed does not.
func TestRecorderSaysASideWasCut(t *testing.T) {
	c := websocket.Client
	whole := frame(c, true, false, websocket.OpText, "hello")
	cutShort := frame(c, true, false, websocket.OpText, "a longer message")
	rec := websocket.NewRecorder(time.Now(), websocket.RecorderOptions{MaxMessage: 256, MaxSession: 4096})
	var out bytes.Buffer
	err := rec.Relay(&out, bytes.NewReader(cat(whole, cutShort[:len(cutShort)-4])), c)
	if err == nil {
		t.Fatal("a side cut in a frame relayed as if it ended")
	}
	ws := rec.Session()
	if len(ws.Messages) != 1 || !strings.HasPrefix(ws.Error, "client: ") {
		t.Errorf("%d messages, error %q; want the whole one kept and the cut said", len(ws.Messages), ws.Error)
	}

	rec = websocket.NewRecorder(time.Now(), websocket.RecorderOptions{MaxMessage: 256, MaxSession: 4096})
	if err := rec.Relay(&out, closedReader{}, c); err == nil {
		t.Fatal("want the closed connection's error")
	}
	if ws := rec.Session(); ws.Error != "" {
		t.Errorf("a side the relay closed: error %q, want none", ws.Error)
	}
}

// closedReader reads as a connection the relay closed.
type closedReader struct{}

func (closedReader) Read([]byte) (int, error) { return 0, net.ErrClosed }
