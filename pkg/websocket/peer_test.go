package websocket_test

// The framer against an independent peer: gorilla/websocket's client and
// server on loopback sockets. What gorilla writes, the Reader reads; what
// the Writer writes, gorilla reads and echoes.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"

	"github.com/replay-dev/replay/pkg/websocket"
)

// got is one message as a test keeps it (the Reader's payload is reused).
type got struct {
	op      websocket.Opcode
	payload string
	frames  int
	code    uint16
	reason  string
	comp    bool
}

func keep(m websocket.Message) got {
	return got{op: m.Opcode, payload: string(m.Payload), frames: m.Frames, code: m.Code, reason: string(m.Reason), comp: m.Compressed}
}

// framerServer accepts one connection on loopback, answers the handshake
// with the framer's accept key (and the extensions answer when the client
// offered permessage-deflate), then reads the client's messages with the
// Reader and echoes them with the Writer: data messages as they came, a
// ping with a pong, a close with a close, after which it sends the
// messages it read on the channel.
func framerServer(t *testing.T, extensions string) (addr string, read <-chan []got) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan []got, 1)
	go func() {
		var msgs []got
		defer func() { out <- msgs }()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			t.Error(err)
			return
		}
		key, err := websocket.CheckRequest(req.Header.Get)
		if err != nil {
			t.Error(err)
			return
		}
		var d websocket.Deflate
		var extra []string
		if extensions != "" && strings.Contains(req.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate") {
			extra = append(extra, "Sec-WebSocket-Extensions: "+extensions)
			if d, err = websocket.ParseExtensions(extensions); err != nil {
				t.Error(err)
				return
			}
		}
		if _, err := c.Write(websocket.AppendAnswer(nil, key, extra...)); err != nil {
			t.Error(err)
			return
		}
		r := websocket.NewReader(br, websocket.ReaderOptions{Sender: websocket.Client, Deflate: d})
		w := websocket.NewWriter(c, websocket.Server)
		for range 100 {
			m, err := r.ReadMessage()
			if err != nil {
				t.Errorf("server read: %v", err)
				return
			}
			msgs = append(msgs, keep(m))
			switch m.Opcode {
			case websocket.OpPing:
				err = w.WriteMessage(websocket.OpPong, m.Payload)
			case websocket.OpPong:
			case websocket.OpClose:
				w.WriteClose(m.Code, string(m.Reason))
				return
			default:
				err = w.WriteMessage(m.Opcode, m.Payload)
			}
			if err != nil {
				t.Errorf("server write: %v", err)
				return
			}
		}
	}()
	return ln.Addr().String(), out
}

func TestReaderReadsGorillaClient(t *testing.T) {
	addr, read := framerServer(t, "")
	// A small write buffer makes gorilla fragment a long message.
	d := gorilla.Dialer{WriteBufferSize: 16, HandshakeTimeout: 5 * time.Second}
	c, _, err := d.Dial("ws://"+addr+"/chat", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	pongs := make(chan string, 4)
	c.SetPongHandler(func(s string) error { pongs <- s; return nil })

	long := strings.Repeat("fragmented-", 10)
	if err := c.WriteMessage(gorilla.TextMessage, []byte(`{"op":"sub"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(gorilla.BinaryMessage, []byte{0, 1, 2, 0xff}); err != nil {
		t.Fatal(err)
	}
	// A ping between the fragments of a text message.
	wr, err := c.NextWriter(gorilla.TextMessage)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(wr, long[:50])
	if err := c.WriteControl(gorilla.PingMessage, []byte("mid"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	io.WriteString(wr, long[50:])
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}

	for i, want := range []string{`{"op":"sub"}`, "\x00\x01\x02\xff", long} {
		_, p, err := c.ReadMessage()
		if err != nil || string(p) != want {
			t.Fatalf("echo %d = %q, %v; want %q", i, p, err, want)
		}
	}
	if p := <-pongs; p != "mid" {
		t.Errorf("pong = %q, want mid", p)
	}
	c.WriteMessage(gorilla.CloseMessage, gorilla.FormatCloseMessage(1000, "bye"))
	_, _, err = c.ReadMessage()
	var ce *gorilla.CloseError
	if !errors.As(err, &ce) || ce.Code != 1000 || ce.Text != "bye" {
		t.Errorf("after close: %v; want the server's close 1000 bye", err)
	}

	msgs := <-read
	if len(msgs) != 5 {
		t.Fatalf("server read %d messages: %+v", len(msgs), msgs)
	}
	// The ping came while the text message was under way, so it is read
	// first; the message is whole after it.
	checks := []got{
		{op: websocket.OpText, payload: `{"op":"sub"}`, frames: 1},
		{op: websocket.OpBinary, payload: "\x00\x01\x02\xff", frames: 1},
		{op: websocket.OpPing, payload: "mid", frames: 1},
		{op: websocket.OpText, payload: long},
		{op: websocket.OpClose, payload: "\x03\xe8bye", frames: 1, code: 1000, reason: "bye"},
	}
	for i, want := range checks {
		g := msgs[i]
		if i == 3 {
			if g.frames < 3 {
				t.Errorf("long message came in %d frames; the test wants it fragmented", g.frames)
			}
			g.frames = 0
		}
		if g != want {
			t.Errorf("message %d = %+v, want %+v", i, g, want)
		}
	}
}

// gorillaEcho is a gorilla server echoing every data message, its pings
// answered by gorilla itself, its close answered by gorilla's close.
func gorillaEcho(t *testing.T, compress bool) string {
	up := gorilla.Upgrader{EnableCompression: compress, WriteBufferSize: 1024}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			op, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			// Through NextWriter, which writes a long message in frames.
			w, err := c.NextWriter(op)
			if err != nil {
				return
			}
			w.Write(p)
			if err := w.Close(); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// dialFramer opens a connection with the framer's own handshake and
// returns it, its reader (over the buffered answer) and the negotiated
// deflate.
func dialFramer(t *testing.T, addr, extensions string) (net.Conn, *bufio.Reader, websocket.Deflate) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	key := websocket.NewKey()
	req := "GET /echo HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n"
	if extensions != "" {
		req += "Sec-WebSocket-Extensions: " + extensions + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := websocket.CheckAnswer(res.StatusCode, res.Header.Get, key); err != nil {
		t.Fatal(err)
	}
	d, err := websocket.ParseExtensions(res.Header.Values("Sec-WebSocket-Extensions")...)
	if err != nil {
		t.Fatal(err)
	}
	return c, br, d
}

func TestWriterTalksToGorillaServer(t *testing.T) {
	c, br, d := dialFramer(t, gorillaEcho(t, false), "")
	w := websocket.NewWriter(c, websocket.Client)
	r := websocket.NewReader(br, websocket.ReaderOptions{Sender: websocket.Server, Deflate: d})

	// A text message in three fragments with a ping between them.
	steps := []func() error{
		func() error { return w.WriteFrame(false, websocket.OpText, []byte("one ")) },
		func() error { return w.WriteFrame(false, websocket.OpContinuation, []byte("two ")) },
		func() error { return w.WriteMessage(websocket.OpPing, []byte("hi")) },
		func() error { return w.WriteFrame(true, websocket.OpContinuation, []byte("three")) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	// A binary message over 65535 bytes: the 8-byte length; gorilla
	// echoes it in frames of its write buffer.
	big := bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6}, 10000)
	if err := w.WriteMessage(websocket.OpBinary, big); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteClose(websocket.CloseGoingAway, "done"); err != nil {
		t.Fatal(err)
	}

	var msgs []got
	for range 10 {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatalf("after %d messages: %v", len(msgs), err)
		}
		msgs = append(msgs, keep(m))
		if m.Opcode == websocket.OpClose {
			break
		}
	}
	if len(msgs) != 4 {
		t.Fatalf("read %d messages, want pong, text, binary, close: %+v", len(msgs), msgs)
	}
	if g := msgs[0]; g.op != websocket.OpPong || g.payload != "hi" {
		t.Errorf("first = %+v, want the pong of hi", g)
	}
	if g := msgs[1]; g.op != websocket.OpText || g.payload != "one two three" {
		t.Errorf("second = %+v, want the text echoed", g)
	}
	if g := msgs[2]; g.op != websocket.OpBinary || g.payload != string(big) || g.frames < 2 {
		t.Errorf("third = %v, %d bytes in %d frames; want the binary echoed whole, in several frames", g.op, len(g.payload), g.frames)
	}
	if g := msgs[3]; g.op != websocket.OpClose || g.code != websocket.CloseGoingAway {
		t.Errorf("last = %+v, want gorilla's close 1001", g)
	}
}

func TestDeflateWithGorilla(t *testing.T) {
	text := strings.Repeat(`{"price":101.25,"symbol":"ACME"} `, 40)

	t.Run("client compresses", func(t *testing.T) {
		// gorilla compresses without context takeover.
		addr, read := framerServer(t, "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
		c, res, err := (&gorilla.Dialer{EnableCompression: true}).Dial("ws://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if res.Header.Get("Sec-WebSocket-Extensions") == "" {
			t.Fatal("no extension negotiated")
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for i := range 3 {
			msg := fmt.Sprintf("%d %s", i, text)
			if err := c.WriteMessage(gorilla.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			if _, p, err := c.ReadMessage(); err != nil || string(p) != msg {
				t.Fatalf("echo %d: %v", i, err)
			}
		}
		c.WriteMessage(gorilla.CloseMessage, gorilla.FormatCloseMessage(1000, ""))
		msgs := <-read
		if len(msgs) != 4 {
			t.Fatalf("server read %d messages", len(msgs))
		}
		for i, g := range msgs[:3] {
			if !g.comp || g.payload != fmt.Sprintf("%d %s", i, text) {
				t.Errorf("message %d: compressed %v, %d bytes; want compressed, inflated to the text", i, g.comp, len(g.payload))
			}
		}
	})

	t.Run("server compresses", func(t *testing.T) {
		c, br, d := dialFramer(t, gorillaEcho(t, true), "permessage-deflate; client_max_window_bits")
		if !d.Enabled || !d.ServerNoContextTakeover {
			t.Fatalf("negotiated %+v; gorilla answers server_no_context_takeover", d)
		}
		w := websocket.NewWriter(c, websocket.Client)
		r := websocket.NewReader(br, websocket.ReaderOptions{Sender: websocket.Server, Deflate: d})
		for i := range 3 {
			msg := fmt.Sprintf("%d %s", i, text)
			if err := w.WriteMessage(websocket.OpText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			m, err := r.ReadMessage()
			if err != nil || !m.Compressed || string(m.Payload) != msg {
				t.Fatalf("echo %d: %v, compressed %v, %d bytes", i, err, m.Compressed, len(m.Payload))
			}
		}
	})
}
