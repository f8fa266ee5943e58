package websocket_test

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/websocket"
)

var mask = &[4]byte{0x37, 0xfa, 0x21, 0x3d}

// frame is one frame as a client (masked) or a server writes it.
func frame(s websocket.Sender, fin, rsv1 bool, op websocket.Opcode, payload string) []byte {
	var m *[4]byte
	if s == websocket.Client {
		m = mask
	}
	return websocket.AppendFrame(nil, fin, rsv1, op, m, []byte(payload))
}

func cat(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

func reader(s websocket.Sender, b []byte, opts websocket.ReaderOptions) *websocket.Reader {
	opts.Sender = s
	return websocket.NewReader(bytes.NewReader(b), opts)
}

func TestAcceptKeyOfRFC6455(t *testing.T) {
	// RFC 6455 section 1.3's example.
	if got := websocket.AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Errorf("AcceptKey = %q", got)
	}
	if k := websocket.NewKey(); len(k) != 24 || k == websocket.NewKey() {
		t.Errorf("NewKey = %q: want 24 characters, fresh each time", k)
	}
}

func TestMaskInPieces(t *testing.T) {
	key := [4]byte{1, 2, 3, 4}
	src := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 5))
	want := bytes.Clone(src)
	for i := range want {
		want[i] ^= key[i%4]
	}
	for _, cut := range []int{0, 1, 3, 7, 9, 60, len(src)} {
		b := bytes.Clone(src)
		pos := websocket.Mask(key, 0, b[:cut])
		websocket.Mask(key, pos, b[cut:])
		if !bytes.Equal(b, want) {
			t.Errorf("masked in pieces cut at %d: differs from the byte-by-byte mask", cut)
		}
	}
}

func TestReadRFC6455Examples(t *testing.T) {
	// RFC 6455 section 5.7: "Hello" unmasked, masked, fragmented, and a
	// ping.
	cases := []struct {
		name   string
		sender websocket.Sender
		in     []byte
		op     websocket.Opcode
		want   string
		frames int
	}{
		{"unmasked", websocket.Server, []byte{0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}, websocket.OpText, "Hello", 1},
		{"masked", websocket.Client, []byte{0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}, websocket.OpText, "Hello", 1},
		{"fragmented", websocket.Server, []byte{0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f}, websocket.OpText, "Hello", 2},
		{"ping", websocket.Server, []byte{0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}, websocket.OpPing, "Hello", 1},
	}
	for _, c := range cases {
		m, err := reader(c.sender, c.in, websocket.ReaderOptions{}).ReadMessage()
		if err != nil || m.Opcode != c.op || string(m.Payload) != c.want || m.Frames != c.frames {
			t.Errorf("%s: %v %q in %d frames, %v", c.name, m.Opcode, m.Payload, m.Frames, err)
		}
	}
	// What AppendFrame writes is those bytes.
	if got := frame(websocket.Client, true, false, websocket.OpText, "Hello"); !bytes.Equal(got, cases[1].in) {
		t.Errorf("AppendFrame masked = % x", got)
	}
}

func TestControlFramesBetweenFragments(t *testing.T) {
	c := websocket.Client
	in := cat(
		frame(c, false, false, websocket.OpText, "a"),
		frame(c, true, false, websocket.OpPing, "p1"),
		frame(c, false, false, websocket.OpContinuation, "b"),
		frame(c, true, false, websocket.OpPong, ""),
		frame(c, true, false, websocket.OpContinuation, "c"),
		frame(c, true, false, websocket.OpClose, "\x03\xe8bye"),
		frame(c, true, false, websocket.OpClose, ""),
	)
	r := reader(c, in, websocket.ReaderOptions{})
	var seq []string
	for {
		m, err := r.ReadMessage()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		s := m.Opcode.String() + ":" + string(m.Payload)
		if m.Opcode == websocket.OpClose {
			s = m.Opcode.String() + ":" + string(rune('0'+m.Code/1000)) + string(m.Reason)
			if m.Code == websocket.CloseNoStatus {
				s = "close:none"
			}
		}
		seq = append(seq, s)
	}
	want := "ping:p1 pong: text:abc close:1bye close:none"
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("read %q, want %q", got, want)
	}
}

func TestProtocolErrors(t *testing.T) {
	c, s := websocket.Client, websocket.Server
	long := strings.Repeat("x", 126)
	cases := []struct {
		name   string
		sender websocket.Sender
		in     []byte
		opts   websocket.ReaderOptions
		reason string
		code   uint16
	}{
		{"RSV1 without deflate", s, frame(s, true, true, websocket.OpText, "x"), websocket.ReaderOptions{}, "RSV1 set without permessage-deflate", 1002},
		{"RSV2", s, []byte{0xa1, 0x01, 'x'}, websocket.ReaderOptions{}, "RSV2/RSV3", 1002},
		{"RSV3", s, []byte{0x91, 0x01, 'x'}, websocket.ReaderOptions{}, "RSV2/RSV3", 1002},
		{"RSV1 on a ping with deflate", s, frame(s, true, true, websocket.OpPing, ""), websocket.ReaderOptions{Deflate: websocket.Deflate{Enabled: true}}, "RSV1 set on a ping", 1002},
		{"RSV1 on a continuation", s, cat(frame(s, false, true, websocket.OpText, ""), frame(s, true, true, websocket.OpContinuation, "")), websocket.ReaderOptions{Deflate: websocket.Deflate{Enabled: true}}, "continuation", 1002},
		{"reserved data opcode", s, []byte{0x83, 0x00}, websocket.ReaderOptions{}, "reserved opcode 0x3", 1002},
		{"reserved control opcode", s, []byte{0x8b, 0x00}, websocket.ReaderOptions{}, "reserved opcode 0xb", 1002},
		{"control over 125", s, frame(s, true, false, websocket.OpPing, long), websocket.ReaderOptions{}, "over the 125", 1002},
		{"fragmented control", s, frame(s, false, false, websocket.OpPong, ""), websocket.ReaderOptions{}, "pong frame fragmented", 1002},
		{"continuation alone", s, frame(s, true, false, websocket.OpContinuation, "x"), websocket.ReaderOptions{}, "no message begun", 1002},
		{"data inside a message", s, cat(frame(s, false, false, websocket.OpText, "a"), frame(s, true, false, websocket.OpBinary, "b")), websocket.ReaderOptions{}, "under way", 1002},
		{"client unmasked", c, frame(s, true, false, websocket.OpText, "x"), websocket.ReaderOptions{}, "not masked", 1002},
		{"server masked", s, frame(c, true, false, websocket.OpText, "x"), websocket.ReaderOptions{}, "server's frame is masked", 1002},
		{"length MSB", s, []byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1}, websocket.ReaderOptions{}, "most significant bit", 1002},
		{"close of 1 byte", s, frame(s, true, false, websocket.OpClose, "\x03"), websocket.ReaderOptions{}, "payload of 1 byte", 1002},
		{"close code 1005", s, frame(s, true, false, websocket.OpClose, "\x03\xed"), websocket.ReaderOptions{}, "close code 1005", 1002},
		{"close code 999", s, frame(s, true, false, websocket.OpClose, "\x03\xe7"), websocket.ReaderOptions{}, "close code 999", 1002},
		{"bad UTF-8 text", s, frame(s, true, false, websocket.OpText, "\xff\xfe"), websocket.ReaderOptions{}, "UTF-8", 1007},
		{"bad UTF-8 reason", s, frame(s, true, false, websocket.OpClose, "\x03\xe8\xff"), websocket.ReaderOptions{}, "UTF-8", 1007},
		{"bad deflate", s, frame(s, true, true, websocket.OpBinary, "\xff\xff\xff"), websocket.ReaderOptions{Deflate: websocket.Deflate{Enabled: true}}, "does not inflate", 1007},
	}
	for _, tc := range cases {
		r := reader(tc.sender, tc.in, tc.opts)
		var err error
		for range 3 {
			if _, err = r.ReadMessage(); err != nil {
				break
			}
		}
		var pe *websocket.ProtocolError
		if !errors.As(err, &pe) || !errors.Is(err, websocket.ErrProtocol) || !strings.Contains(pe.Reason, tc.reason) || pe.Code != tc.code {
			t.Errorf("%s: %v; want a protocol error (%d) saying %q", tc.name, err, tc.code, tc.reason)
			continue
		}
		// The error ends the direction.
		if _, again := r.ReadMessage(); again != err {
			t.Errorf("%s: next read %v; want the same error", tc.name, again)
		}
	}
	// Not checking UTF-8 lets bad text through.
	if m, err := reader(s, frame(s, true, false, websocket.OpText, "\xff"), websocket.ReaderOptions{NoUTF8Check: true}).ReadMessage(); err != nil || string(m.Payload) != "\xff" {
		t.Errorf("NoUTF8Check: %q, %v", m.Payload, err)
	}
}

func TestTruncatedFrames(t *testing.T) {
	s := websocket.Server
	full := frame(s, true, false, websocket.OpBinary, strings.Repeat("z", 300))
	for _, n := range []int{1, 2, 3, 10} {
		_, err := reader(s, full[:n], websocket.ReaderOptions{}).ReadMessage()
		if err != io.ErrUnexpectedEOF {
			t.Errorf("cut at %d: %v; want io.ErrUnexpectedEOF", n, err)
		}
	}
	if _, err := reader(s, nil, websocket.ReaderOptions{}).ReadMessage(); err != io.EOF {
		t.Errorf("empty: %v; want io.EOF", err)
	}
}

func TestOversizeMessagesAreSkipped(t *testing.T) {
	s := websocket.Server
	in := cat(
		frame(s, true, false, websocket.OpText, "small"),
		// One frame over the bound of 10.
		frame(s, true, false, websocket.OpBinary, strings.Repeat("b", 11)),
		frame(s, true, false, websocket.OpText, "next"),
		// Fragments passing the bound, a ping among them.
		frame(s, false, false, websocket.OpText, "123456"),
		frame(s, false, false, websocket.OpContinuation, "789012"),
		frame(s, true, false, websocket.OpPing, "p"),
		frame(s, false, false, websocket.OpContinuation, "345678"),
		frame(s, true, false, websocket.OpContinuation, "9"),
		frame(s, true, false, websocket.OpText, "after"),
	)
	r := reader(s, in, websocket.ReaderOptions{MaxMessage: 10})
	var seq []string
	for range 20 {
		m, err := r.ReadMessage()
		if err == io.EOF {
			break
		}
		var tl *websocket.TooLargeError
		switch {
		case errors.As(err, &tl) && errors.Is(err, websocket.ErrTooLarge):
			seq = append(seq, "too large "+tl.Opcode.String())
			if tl.Limit != 10 || tl.Size <= 10 {
				t.Errorf("%v: size and limit", tl)
			}
		case err != nil:
			t.Fatal(err)
		default:
			seq = append(seq, string(m.Payload))
		}
	}
	want := "small|too large binary|next|too large text|p|after"
	if got := strings.Join(seq, "|"); got != want {
		t.Errorf("read %q, want %q", got, want)
	}
}

// deflateStream compresses messages as a side that keeps its context: one
// compressor, flushed after each message, the 4 bytes of the flush's empty
// block cut (RFC 7692 section 7.2.1).
func deflateStream(t *testing.T, takeover bool, msgs ...string) [][]byte {
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, flate.BestCompression)
	var out [][]byte
	for _, m := range msgs {
		if !takeover {
			fw.Reset(&buf)
		}
		io.WriteString(fw, m)
		if err := fw.Flush(); err != nil {
			t.Fatal(err)
		}
		b := bytes.Clone(buf.Bytes())
		if !bytes.HasSuffix(b, []byte{0, 0, 0xff, 0xff}) {
			t.Fatal("flush did not end in an empty stored block")
		}
		out = append(out, b[:len(b)-4])
		buf.Reset()
	}
	return out
}

func TestDeflateContextTakeover(t *testing.T) {
	s := websocket.Server
	first := strings.Repeat("the quick brown fox jumps over the lazy dog ", 20)
	second := first + "again"
	comp := deflateStream(t, true, first, second)
	if len(comp[1]) > len(second)/4 {
		t.Fatalf("second message compressed to %d bytes: not referring back to the first", len(comp[1]))
	}
	in := cat(
		websocket.AppendFrame(nil, true, true, websocket.OpText, nil, comp[0]),
		frame(s, true, false, websocket.OpText, "plain"),
		// The second message in two frames, RSV1 on the first only.
		websocket.AppendFrame(nil, false, true, websocket.OpText, nil, comp[1][:3]),
		websocket.AppendFrame(nil, true, false, websocket.OpContinuation, nil, comp[1][3:]),
	)
	d := websocket.Deflate{Enabled: true, ClientNoContextTakeover: true}
	r := reader(s, in, websocket.ReaderOptions{Deflate: d})
	for i, want := range []string{first, "plain", second} {
		m, err := r.ReadMessage()
		if err != nil || string(m.Payload) != want || m.Compressed != (i != 1) {
			t.Fatalf("message %d: %v, compressed %v, %q", i, err, m.Compressed, m.Payload)
		}
	}

	// The same bytes read as a server without takeover: the second message
	// refers to bytes the inflater no longer has.
	d.ServerNoContextTakeover = true
	r = reader(s, in, websocket.ReaderOptions{Deflate: d})
	r.ReadMessage()
	r.ReadMessage()
	if _, err := r.ReadMessage(); !errors.Is(err, websocket.ErrProtocol) {
		t.Errorf("without takeover: %v; want a protocol error", err)
	}

	// Without takeover each message inflates alone.
	comp = deflateStream(t, false, first, second)
	in = cat(websocket.AppendFrame(nil, true, true, websocket.OpText, nil, comp[0]), websocket.AppendFrame(nil, true, true, websocket.OpText, nil, comp[1]))
	r = reader(s, in, websocket.ReaderOptions{Deflate: d})
	for i, want := range []string{first, second} {
		if m, err := r.ReadMessage(); err != nil || string(m.Payload) != want {
			t.Errorf("no takeover, message %d: %v", i, err)
		}
	}
}

func TestDeflateBound(t *testing.T) {
	s := websocket.Server
	bomb := strings.Repeat("a", 100000)
	after := "a small one, " + strings.Repeat("a", 50)
	comp := deflateStream(t, true, bomb, after)
	in := cat(
		websocket.AppendFrame(nil, true, true, websocket.OpBinary, nil, comp[0]),
		websocket.AppendFrame(nil, true, true, websocket.OpText, nil, comp[1]),
	)
	r := reader(s, in, websocket.ReaderOptions{MaxMessage: 1000, Deflate: websocket.Deflate{Enabled: true}})
	_, err := r.ReadMessage()
	var tl *websocket.TooLargeError
	if !errors.As(err, &tl) || !tl.Inflated || tl.Size != 100000 {
		t.Fatalf("bomb: %v; want too large once inflated, its whole size", err)
	}
	// The context followed the skipped message: the next one inflates.
	if m, err := r.ReadMessage(); err != nil || string(m.Payload) != after {
		t.Errorf("after the bomb: %v %q", err, m.Payload)
	}

	// A compressed message skipped unread (its frames over the bound)
	// loses the context of a side that keeps it.
	big := deflateStream(t, true, randomText(3000), "x")
	in = cat(
		websocket.AppendFrame(nil, true, true, websocket.OpBinary, nil, big[0]),
		websocket.AppendFrame(nil, true, true, websocket.OpText, nil, big[1]),
		frame(s, true, false, websocket.OpText, "plain"),
	)
	r = reader(s, in, websocket.ReaderOptions{MaxMessage: 1000, Deflate: websocket.Deflate{Enabled: true}})
	if _, err := r.ReadMessage(); !errors.As(err, &tl) || tl.Inflated {
		t.Fatalf("compressed frames over the bound: %v", err)
	}
	if _, err := r.ReadMessage(); err != websocket.ErrContextLost {
		t.Errorf("after a skipped compressed message: %v; want ErrContextLost", err)
	}
	if m, err := r.ReadMessage(); err != nil || string(m.Payload) != "plain" {
		t.Errorf("an uncompressed message after: %v %q", err, m.Payload)
	}
}

// randomText is text that does not compress.
func randomText(n int) string {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}

func TestParseExtensions(t *testing.T) {
	ok := []struct {
		in   []string
		want websocket.Deflate
	}{
		{nil, websocket.Deflate{}},
		{[]string{"x-webkit-other"}, websocket.Deflate{}},
		{[]string{"permessage-deflate"}, websocket.Deflate{Enabled: true}},
		{[]string{"permessage-deflate; client_no_context_takeover; server_no_context_takeover"},
			websocket.Deflate{Enabled: true, ClientNoContextTakeover: true, ServerNoContextTakeover: true}},
		{[]string{"foo, Permessage-Deflate ; server_max_window_bits=10; client_max_window_bits"},
			websocket.Deflate{Enabled: true, ServerMaxWindowBits: 10, ClientMaxWindowBits: 15}},
		{[]string{"foo", `permessage-deflate; client_max_window_bits="9"`},
			websocket.Deflate{Enabled: true, ClientMaxWindowBits: 9}},
	}
	for _, c := range ok {
		got, err := websocket.ParseExtensions(c.in...)
		if err != nil || got != c.want {
			t.Errorf("ParseExtensions(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	if s := (websocket.Deflate{Enabled: true, ServerNoContextTakeover: true, ClientMaxWindowBits: 12}).String(); s != "permessage-deflate; server_no_context_takeover; client_max_window_bits=12" {
		t.Errorf("String = %q", s)
	}
	bad := map[string]string{
		"permessage-deflate; server_max_window_bits=7":                               "server_max_window_bits=\"7\"; expected a number of 8 to 15",
		"permessage-deflate; server_max_window_bits":                                 "has no value",
		"permessage-deflate; client_no_context_takeover=1":                           "expected none",
		"permessage-deflate; mystery":                                                `unknown permessage-deflate parameter "mystery"`,
		"permessage-deflate; server_no_context_takeover; server_no_context_takeover": "given twice",
		"permessage-deflate, permessage-deflate":                                     "accepted twice",
	}
	for in, want := range bad {
		if _, err := websocket.ParseExtensions(in); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "Sec-WebSocket-Extensions: ") {
			t.Errorf("ParseExtensions(%q) = %v; want an error naming the header and saying %q", in, err, want)
		}
	}
}

// loop reads the same bytes again and again.
type loop struct {
	b   []byte
	off int
}

func (l *loop) Read(p []byte) (int, error) {
	n := copy(p, l.b[l.off:])
	l.off = (l.off + n) % len(l.b)
	return n, nil
}

func TestNoAllocationPerMessage(t *testing.T) {
	c := websocket.Client
	in := cat(
		frame(c, true, false, websocket.OpText, strings.Repeat("t", 300)),
		frame(c, false, false, websocket.OpBinary, strings.Repeat("b", 2000)),
		frame(c, true, false, websocket.OpPing, "p"),
		frame(c, true, false, websocket.OpContinuation, strings.Repeat("b", 70000)),
	)
	r := websocket.NewReader(&loop{b: in}, websocket.ReaderOptions{Sender: c})
	w := websocket.NewWriter(io.Discard, c)
	payload := []byte(strings.Repeat("w", 1000))
	for range 8 { // buffers grown
		r.ReadMessage()
		w.WriteMessage(websocket.OpText, payload)
	}
	allocs := testing.AllocsPerRun(100, func() {
		for range 3 {
			if _, err := r.ReadMessage(); err != nil {
				t.Fatal(err)
			}
		}
		w.WriteMessage(websocket.OpText, payload)
		w.WriteClose(websocket.CloseNormal, "bye")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per round of reads and writes; want none", allocs)
	}
}

// FuzzReader: whatever the bytes, the Reader neither panics nor returns a
// message over its bound, and ends within as many reads as there are
// bytes.
func FuzzReader(f *testing.F) {
	c, s := websocket.Client, websocket.Server
	f.Add(cat(frame(c, false, false, websocket.OpText, "a"), frame(c, true, false, websocket.OpPing, "p"), frame(c, true, false, websocket.OpContinuation, "b")))
	f.Add(frame(s, true, true, websocket.OpBinary, "\xff\xff"))
	f.Add(frame(s, true, false, websocket.OpClose, "\x03\xe8bye"))
	f.Add([]byte{0x82, 127, 0, 0, 0, 0, 0, 0, 1, 0})
	comp := websocket.AppendFrame(nil, true, true, websocket.OpText, nil, []byte{0x4a, 0x4c, 0x04, 0x00})
	f.Add(comp)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, sender := range []websocket.Sender{c, s} {
			for _, d := range []websocket.Deflate{{}, {Enabled: true}, {Enabled: true, ClientNoContextTakeover: true, ServerNoContextTakeover: true}} {
				r := websocket.NewReader(bytes.NewReader(b), websocket.ReaderOptions{Sender: sender, MaxMessage: 300, Deflate: d})
				for range len(b) + 2 {
					m, err := r.ReadMessage()
					if int64(len(m.Payload)) > 300 {
						t.Fatalf("a message of %d bytes, over the bound", len(m.Payload))
					}
					if err != nil && !errors.Is(err, websocket.ErrTooLarge) && err != websocket.ErrContextLost {
						break
					}
				}
			}
		}
	})
}

func TestFrameSize(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		size int64
		fin  bool
		op   websocket.Opcode
	}{
		{frame(websocket.Client, true, false, websocket.OpText, "Hello"), 11, true, websocket.OpText},
		{frame(websocket.Server, false, false, websocket.OpBinary, strings.Repeat("x", 300)), 304, false, websocket.OpBinary},
		{frame(websocket.Client, true, false, websocket.OpContinuation, strings.Repeat("x", 70000)), 70014, true, websocket.OpContinuation},
		{[]byte{0x89, 0x00}, 2, true, websocket.OpPing},
	} {
		for cut := 0; cut < min(len(c.b), 14); cut++ {
			_, _, _, ok := websocket.FrameSize(c.b[:cut])
			if hdr := 2 + map[bool]int{true: 4}[c.b[1]&0x80 != 0]; ok && cut < 2 || !ok && cut >= hdr+8 {
				t.Errorf("FrameSize of %d bytes of a %d-byte frame: ok %v", cut, len(c.b), ok)
			}
		}
		size, fin, op, ok := websocket.FrameSize(c.b)
		if !ok || size != c.size || int(size) != len(c.b) || fin != c.fin || op != c.op {
			t.Errorf("FrameSize = %d %v %v %v; want %d %v %v", size, fin, op, ok, c.size, c.fin, c.op)
		}
	}
	if size, _, _, ok := websocket.FrameSize([]byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1}); !ok || size != math.MaxInt64 {
		t.Errorf("a forbidden length: %d %v", size, ok)
	}
}

// endless is a reader of prefix, then of one byte forever, counting what
// was read after prefix.
type endless struct {
	prefix []byte
	after  int64
}

func (e *endless) Read(b []byte) (int, error) {
	if len(e.prefix) > 0 {
		n := copy(b, e.prefix)
		e.prefix = e.prefix[n:]
		return n, nil
	}
	for i := range b {
		b[i] = 'a'
	}
	e.after += int64(len(b))
	if e.after > 64<<20 {
		return 0, io.EOF // the bound did not hold: stop the test's peer
	}
	return len(b), nil
}

// TestLengthNearMaxInt64: a continuation frame declaring a length near
// 2^63 after a message's first bytes is over the bound at once. Adding
// the length to the bytes held wrapped negative and passed the bound, and
// the reader then read whatever the peer kept sending.
func TestLengthNearMaxInt64(t *testing.T) {
	frames := []byte{0x01, 0x01, 'a', 0x80, 0x7f, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	src := &endless{prefix: frames}
	r := websocket.NewReader(src, websocket.ReaderOptions{Sender: websocket.Server, MaxMessage: 1 << 20})
	_, err := r.ReadMessage()
	if !errors.Is(err, websocket.ErrTooLarge) {
		t.Fatalf("got %v, want a message over the bound", err)
	}
	if src.after > 1<<20 {
		t.Errorf("read %d bytes past the frame's header before refusing it, want none to speak of", src.after)
	}
}

// TestWriteCloseStaysValid: a recorded close whose code no close frame
// may carry (1006, 1015, a reserved 2000) goes as a close without a
// payload, and a long reason is cut at a character's start: our own
// Reader, as strict as a browser, takes each close, where the code or
// the cut character had it fail the connection.
func TestWriteCloseStaysValid(t *testing.T) {
	long := strings.Repeat("a", 122) + "é" + "tail"
	for _, tc := range []struct {
		code       uint16
		reason     string
		wantCode   uint16
		wantReason string
	}{
		{1006, "abnormal", websocket.CloseNoStatus, ""},
		{1015, "tls", websocket.CloseNoStatus, ""},
		{2000, "reserved", websocket.CloseNoStatus, ""},
		{1000, long, 1000, strings.Repeat("a", 122)},
		{4000, "app", 4000, "app"},
	} {
		var buf bytes.Buffer
		if err := websocket.NewWriter(&buf, websocket.Server).WriteClose(tc.code, tc.reason); err != nil {
			t.Fatal(err)
		}
		m, err := websocket.NewReader(&buf, websocket.ReaderOptions{Sender: websocket.Server}).ReadMessage()
		if err != nil || m.Opcode != websocket.OpClose || m.Code != tc.wantCode || string(m.Reason) != tc.wantReason {
			t.Errorf("close %d %q: read %v %d %q, %v; want a close %d %q", tc.code, tc.reason, m.Opcode, m.Code, m.Reason, err, tc.wantCode, tc.wantReason)
		}
	}
}
