package h2peer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// This file is the HTTP/2 half of the suite's fuzzed peer (the HTTP/1.1
// half, and what the two share, is internal/testutil/loopback's hostile.go): a
// cleartext HTTP/2 server that answers each request with a case drawn
// from a catalogue of answers RFC 9113 calls malformed, connection
// errors, storms and floods, each with the class a client must hold it
// to.

// H2Case is a hostile HTTP/2 answer, to the request on stream w.ID.
type H2Case = loopback.Case[*H2Writer]

// h2 is a case of the catalogue.
func h2(name string, class loopback.Class, weight int, answer func(w *H2Writer) bool) H2Case {
	return H2Case{Name: name, Class: class, Weight: weight, Answer: answer}
}

// H2Writer is where a case writes its answer: frames go into a buffer
// (Fr), and out in one write at Flush, or a few bytes at a time at
// Dribble.
type H2Writer struct {
	Conn net.Conn
	Fr   *http2.Framer // writes into the buffer; illegal writes allowed
	Ch   loopback.Chooser
	ID   uint32 // the request's stream
	out  bytes.Buffer
	enc  *hpack.Encoder
	hb   bytes.Buffer
	quit <-chan struct{}
	// shut: the case closed the connection's windows (no WINDOW_UPDATE
	// from the server from now on).
	shut bool
}

// Block is a header block of fields given as name, value pairs, encoded
// with the connection's HPACK encoder (which checks nothing: upper case,
// CR and LF go as given).
func (w *H2Writer) Block(kv ...string) []byte {
	w.hb.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		w.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return bytes.Clone(w.hb.Bytes())
}

// Headers frames block as one HEADERS frame on stream id.
func (w *H2Writer) Headers(id uint32, block []byte, end bool) {
	w.Fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true, EndStream: end})
}

// Data frames p as DATA on the request's stream.
func (w *H2Writer) Data(p string, end bool) { w.Fr.WriteData(w.ID, end, []byte(p)) }

// Flush writes what the frames made, in one write; false when it failed.
func (w *H2Writer) Flush() bool {
	_, err := w.Conn.Write(w.out.Bytes())
	w.out.Reset()
	return err == nil
}

// Dribble writes what the frames made 1 to 8 bytes at a time, a
// millisecond apart.
func (w *H2Writer) Dribble() bool {
	b := bytes.Clone(w.out.Bytes())
	w.out.Reset()
	for len(b) > 0 {
		n := min(len(b), 1+w.Ch.IntN(8))
		if _, err := w.Conn.Write(b[:n]); err != nil {
			return false
		}
		b = b[n:]
		select {
		case <-time.After(time.Millisecond):
		case <-w.quit:
			return false
		}
	}
	return true
}

// Reset flushes, then closes the connection with an RST.
func (w *H2Writer) Reset() bool {
	w.Flush()
	if tc, ok := w.Conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	return false
}

// ok is the answer "ok" with status and the extra fields kv.
func (w *H2Writer) ok(status string, kv ...string) bool {
	w.Headers(w.ID, w.Block(append([]string{":status", status, "content-type", "text/plain", "content-length", "2"}, kv...)...), false)
	w.Data("ok", true)
	return w.Flush()
}

// bad is a malformed answer: a header block of kv (the first field
// :status 299 unless kv says otherwise), then "ok" ending the stream.
func (w *H2Writer) bad(kv ...string) bool {
	w.Headers(w.ID, w.Block(kv...), false)
	w.Data("ok", true)
	return w.Flush()
}

const (
	good    = "200"
	lenient = "201"
	badS    = "299"
)

// sizeUpdate4096 is an HPACK dynamic table size update to 4096, the size
// the table has: it evicts nothing, so that the connection's encoder stays
// in step with the client's decoder.
var sizeUpdate4096 = []byte{0x3f, 0xe1, 0x1f}

// status299 is ":status: 299" as a literal without indexing (name: the
// static table's :status).
var status299 = []byte{0x08, 0x03, '2', '9', '9'}

// H2Cases is the catalogue of hostile HTTP/2 answers: RFC 9113's
// malformed answers (§8.1.1, §8.2, §8.3), :status 101 and 1xx with
// END_STREAM, frames past the advertised size and windows, pushes, bad
// frames and header blocks, GOAWAY and REFUSED_STREAM, floods, windows
// that close, resets, dribbles.
var H2Cases = []H2Case{
	// Well-formed answers.
	h2("ok", loopback.Good, 4, func(w *H2Writer) bool { return w.ok(good) }),
	h2("ok-no-length", loopback.Good, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", good), false)
		w.Data("o", false)
		w.Data("k", true)
		return w.Flush()
	}),
	h2("ok-trailers", loopback.Good, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", good, "content-length", "2"), false)
		w.Data("ok", false)
		w.Headers(w.ID, w.Block("x-trailer", "1"), true)
		return w.Flush()
	}),
	h2("ok-interim", loopback.Good, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", "103", "link", "</a.css>"), false)
		return w.ok(good)
	}),
	h2("ok-100-interim", loopback.Good, 1, func(w *H2Writer) bool {
		for range 100 {
			w.Headers(w.ID, w.Block(":status", "103"), false)
		}
		return w.ok(good)
	}),
	h2("ok-padded", loopback.Good, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", good, "content-length", "2"), false)
		w.Fr.WriteDataPadded(w.ID, true, []byte("ok"), make([]byte, 1+w.Ch.IntN(200)))
		return w.Flush()
	}),
	h2("ok-continuation", loopback.Good, 2, func(w *H2Writer) bool {
		// in three fragments (the block is short once HPACK indexed it)
		b := w.Block(":status", good, "content-length", "2", "x-long", strings.Repeat("v", 100))
		n := len(b)
		w.Fr.WriteHeaders(http2.HeadersFrameParam{StreamID: w.ID, BlockFragment: b[:n/3]})
		w.Fr.WriteContinuation(w.ID, false, b[n/3:2*n/3])
		w.Fr.WriteContinuation(w.ID, true, b[2*n/3:])
		w.Data("ok", true)
		return w.Flush()
	}),
	h2("ok-end-on-headers", loopback.Good, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", good, "content-length", "0"), true)
		return w.Flush()
	}),
	h2("ok-304-length", loopback.Good, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", "304", "content-length", "10"), true)
		return w.Flush()
	}),
	h2("ok-table-size-first", loopback.Good, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, append(bytes.Clone(sizeUpdate4096), 0x88), false) // size update, then :status 200
		w.Data("ok", true)
		return w.Flush()
	}),
	h2("ok-te-trailers", loopback.Good, 1, func(w *H2Writer) bool { return w.ok(lenient, "te", "trailers") }),
	h2("ok-settings-ping", loopback.Good, 2, func(w *H2Writer) bool {
		w.Fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 10})
		w.Fr.WritePing(false, [8]byte{1})
		w.Fr.WriteWindowUpdate(0, 1000)
		return w.ok(good)
	}),
	h2("ok-ping-flood", loopback.Good, 1, func(w *H2Writer) bool {
		for i := range 200 {
			w.Fr.WritePing(false, [8]byte{byte(i)})
		}
		return w.ok(good)
	}),
	h2("ok-dribble", loopback.Good, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", good, "content-length", "2"), false)
		w.Data("ok", true)
		return w.Dribble()
	}),
	h2("ok-then-rst", loopback.Good, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", good, "content-length", "2"), false)
		w.Data("ok", true)
		w.Fr.WriteRSTStream(w.ID, http2.ErrCodeNo)
		return w.Flush()
	}),
	h2("ok-then-goaway", loopback.Good, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", good, "content-length", "2"), false)
		w.Data("ok", true)
		w.Fr.WriteGoAway(w.ID, http2.ErrCodeNo, nil)
		w.Flush()
		return false
	}),
	h2("ok-then-close-window", loopback.Good, 1, func(w *H2Writer) bool {
		w.Fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		w.shut = true // bodies on this connection wait, then fail as flow_control
		return w.ok(good)
	}),
	// Racy: a complete answer, then a reset that may overtake it.
	h2("answer-then-tcp-reset", loopback.Racy, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", lenient, "content-length", "2"), false)
		w.Data("ok", true)
		return w.Reset()
	}),
	// Malformed answers (RFC 9113 §8.1.1, §8.2, §8.3, §8.6): a stream error.
	h2("length-longer", loopback.Bad, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", badS, "content-length", "2"), false)
		w.Data("okok", true)
		return w.Flush()
	}),
	h2("length-shorter", loopback.Bad, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", badS, "content-length", "10"), false)
		w.Data("ok", true)
		return w.Flush()
	}),
	h2("length-shorter-trailers", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", badS, "content-length", "10"), false)
		w.Data("ok", false)
		w.Headers(w.ID, w.Block("x-trailer", "1"), true)
		return w.Flush()
	}),
	h2("length-not-a-number", loopback.Bad, 1, func(w *H2Writer) bool { return w.bad(":status", badS, "content-length", "2, 2") }),
	h2("two-lengths", loopback.Bad, 1, func(w *H2Writer) bool {
		return w.bad(":status", badS, "content-length", "2", "content-length", "2")
	}),
	h2("upper-case-name", loopback.Bad, 2, func(w *H2Writer) bool { return w.bad(":status", badS, "Content-Type", "text/plain") }),
	h2("space-in-name", loopback.Bad, 1, func(w *H2Writer) bool { return w.bad(":status", badS, "x odd", "1") }),
	h2("crlf-in-value", loopback.Bad, 2, func(w *H2Writer) bool { return w.bad(":status", badS, "x-a", "a\r\nx-b: b") }),
	h2("nul-in-value", loopback.Bad, 1, func(w *H2Writer) bool { return w.bad(":status", badS, "x-a", "a\x00b") }),
	h2("space-around-value", loopback.Bad, 1, func(w *H2Writer) bool { return w.bad(":status", badS, "x-a", " a") }),
	h2("connection-field", loopback.Bad, 2, func(w *H2Writer) bool { return w.bad(":status", badS, "connection", "keep-alive") }),
	h2("transfer-encoding", loopback.Bad, 2, func(w *H2Writer) bool {
		return w.bad(":status", badS, "transfer-encoding", "chunked")
	}),
	h2("te-not-trailers", loopback.Bad, 1, func(w *H2Writer) bool { return w.bad(":status", badS, "te", "gzip") }),
	h2("pseudo-after-regular", loopback.Bad, 2, func(w *H2Writer) bool { return w.bad("content-type", "text/plain", ":status", badS) }),
	h2("pseudo-unknown", loopback.Bad, 1, func(w *H2Writer) bool { return w.bad(":status", badS, ":foo", "bar") }),
	h2("pseudo-request", loopback.Bad, 1, func(w *H2Writer) bool { return w.bad(":status", badS, ":path", "/") }),
	h2("two-status", loopback.Bad, 2, func(w *H2Writer) bool { return w.bad(":status", "500", ":status", badS) }),
	h2("status-not-3-digits", loopback.Bad, 1, func(w *H2Writer) bool { return w.bad(":status", "2990") }),
	h2("no-status", loopback.Bad, 1, func(w *H2Writer) bool { return w.bad("content-type", "text/plain") }),
	h2("status-101", loopback.Bad, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", "101"), false)
		return w.bad(":status", badS)
	}),
	h2("interim-end-stream", loopback.Bad, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", "103"), true)
		return w.Flush()
	}),
	h2("trailers-without-end", loopback.Bad, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", badS), false)
		w.Data("ok", false)
		w.Headers(w.ID, w.Block("x-trailer", "1"), false)
		w.Data("", true)
		return w.Flush()
	}),
	h2("second-block-without-end", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", badS), false)
		w.Headers(w.ID, w.Block(":status", badS), false)
		w.Data("ok", true)
		return w.Flush()
	}),
	h2("pseudo-in-trailers", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", badS), false)
		w.Data("ok", false)
		w.Headers(w.ID, w.Block(":status", badS), true)
		return w.Flush()
	}),
	h2("data-before-headers", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Data("ok", false)
		w.Headers(w.ID, w.Block(":status", badS), true)
		return w.Flush()
	}),
	h2("data-in-204", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", "204"), false)
		w.Data("ok", true)
		return w.Flush()
	}),
	h2("interim-storm", loopback.Bad, 1, func(w *H2Writer) bool {
		for range 101 {
			w.Headers(w.ID, w.Block(":status", "103"), false)
		}
		return w.bad(":status", badS)
	}),
	// Connection errors (RFC 9113 §4.2, §4.3, §5.1, §6.9, §8.4).
	h2("table-size-after-field", loopback.Bad, 2, func(w *H2Writer) bool {
		w.Headers(w.ID, append(bytes.Clone(status299), sizeUpdate4096...), false)
		w.Data("ok", true)
		return w.Flush()
	}),
	h2("hpack-garbage", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, true)
		return w.Flush()
	}),
	h2("frame-16mib", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Headers(w.ID, w.Block(":status", badS), false)
		var h [9]byte
		n := 1<<24 - 1
		h[0], h[1], h[2] = byte(n>>16), byte(n>>8), byte(n)
		binary.BigEndian.PutUint32(h[5:], w.ID) // DATA, no flags
		w.out.Write(h[:])
		if !w.Flush() {
			return false
		}
		w.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		zeros := make([]byte, 64<<10)
		for n > 0 { // the client refuses at the frame's header: writes fail
			k, err := w.Conn.Write(zeros[:min(n, len(zeros))])
			if err != nil {
				return false
			}
			n -= k
		}
		return false
	}),
	h2("push-promise", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Fr.WritePushPromise(http2.PushPromiseParam{StreamID: w.ID, PromiseID: 2, BlockFragment: w.Block(":method", "GET", ":path", "/p", ":scheme", "http", ":authority", "x"), EndHeaders: true})
		return w.ok(badS)
	}),
	h2("idle-stream", loopback.Bad, 1, func(w *H2Writer) bool {
		// Far above the request's stream: VUs that share the connection
		// (--streams) have theirs open beside it, just above.
		w.Headers(w.ID+idleAbove, w.Block(":status", badS), true)
		return w.ok(badS)
	}),
	h2("data-on-stream-0", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Fr.WriteData(0, false, []byte("x"))
		return w.ok(badS)
	}),
	h2("window-overflow", loopback.Bad, 1, func(w *H2Writer) bool {
		w.Fr.WriteWindowUpdate(0, 1<<31-1)
		return w.ok(badS)
	}),
	h2("continuation-flood", loopback.Bad, 1, func(w *H2Writer) bool {
		b := w.Block(":status", badS)
		w.Fr.WriteHeaders(http2.HeadersFrameParam{StreamID: w.ID, BlockFragment: b})
		for range 1000 {
			w.Fr.WriteContinuation(w.ID, false, nil)
		}
		w.Fr.WriteContinuation(w.ID, true, nil)
		w.Data("ok", true)
		return w.Flush()
	}),
	// No answer: resets, GOAWAY, closes, silence.
	h2("refused-stream", loopback.NoAnswer, 2, func(w *H2Writer) bool {
		w.Fr.WriteRSTStream(w.ID, http2.ErrCodeRefusedStream)
		return w.Flush()
	}),
	h2("rst-internal", loopback.NoAnswer, 2, func(w *H2Writer) bool {
		w.Fr.WriteRSTStream(w.ID, http2.ErrCodeInternal)
		return w.Flush()
	}),
	h2("goaway-below", loopback.NoAnswer, 2, func(w *H2Writer) bool {
		w.Fr.WriteGoAway(w.ID-2, http2.ErrCodeNo, nil)
		w.Flush()
		return false
	}),
	h2("goaway-at", loopback.NoAnswer, 1, func(w *H2Writer) bool {
		w.Fr.WriteGoAway(w.ID, http2.ErrCodeInternal, nil)
		w.Flush()
		return false
	}),
	h2("tcp-reset", loopback.NoAnswer, 1, func(w *H2Writer) bool { return w.Reset() }),
	h2("tcp-close", loopback.NoAnswer, 1, func(w *H2Writer) bool { return false }),
	h2("silent", loopback.NoAnswer, 1, func(w *H2Writer) bool { return true }),
}

// idleAbove is how far above a request's stream the idle-stream case
// answers: past the streams of the VUs of a test sharing a connection.
const idleAbove = 2 << 10

// HostileH2 is the fuzzed HTTP/2 peer: a cleartext HTTP/2 server (prior
// knowledge) that answers the nth request it reads with a case of Cases
// drawn by Source, and tallies what it did.
type HostileH2 struct {
	Cases  []H2Case
	Source loopback.Source
	Tally  loopback.Tally
	addr   string
	conns  *atomic.Int64
	mu     sync.Mutex // guards got
	got    []string   // the client's RST_STREAM and GOAWAY frames, as "RST_STREAM PROTOCOL_ERROR"
}

// NewHostileH2 starts a hostile HTTP/2 server answering with cases drawn
// from src, closed when the test ends.
func NewHostileH2(t testing.TB, cases []H2Case, src loopback.Source) *HostileH2 {
	t.Helper()
	s := &HostileH2{Cases: cases, Source: src}
	s.addr, s.conns = loopback.ServeClosing(t, s.serve)
	return s
}

// URL is "http://127.0.0.1:PORT".
func (s *HostileH2) URL() string { return "http://" + s.addr }

// Conns counts the connections accepted.
func (s *HostileH2) Conns() int64 { return s.conns.Load() }

// Got are the RST_STREAM and GOAWAY frames the client sent, in order, as
// "RST_STREAM PROTOCOL_ERROR", "GOAWAY FRAME_SIZE_ERROR".
func (s *HostileH2) Got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func (s *HostileH2) note(frame string, code http2.ErrCode) {
	s.mu.Lock()
	s.got = append(s.got, frame+" "+code.String())
	s.mu.Unlock()
}

func (s *HostileH2) serve(c net.Conn, quit <-chan struct{}) {
	br := bufio.NewReader(c)
	if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	w := &H2Writer{Conn: c, quit: quit}
	w.Fr = http2.NewFramer(&w.out, br)
	w.Fr.AllowIllegalWrites = true
	w.enc = hpack.NewEncoder(&w.hb)
	w.Fr.WriteSettings()
	if !w.Flush() {
		return
	}
	hc := &hostileConn{s: s, w: w, dec: hpack.NewDecoder(4096, func(hpack.HeaderField) {})}
	for {
		f, err := w.Fr.ReadFrame()
		if err != nil {
			return
		}
		if !hc.frame(f) || !w.Flush() {
			return
		}
	}
}

// hostileConn is one connection HostileH2 serves.
type hostileConn struct {
	s          *HostileH2
	w          *H2Writer
	dec        *hpack.Decoder
	endOnBlock bool
}

// frame takes one frame of the client's. false: close.
func (hc *hostileConn) frame(f http2.Frame) bool {
	w := hc.w
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			w.Fr.WriteSettingsAck()
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			w.Fr.WritePing(true, f.Data)
		}
	case *http2.HeadersFrame:
		hc.endOnBlock = f.StreamEnded()
		return hc.block(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame:
		return hc.block(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.DataFrame:
		if f.Length > 0 && !w.shut {
			w.Fr.WriteWindowUpdate(0, f.Length)
			w.Fr.WriteWindowUpdate(f.StreamID, f.Length)
		}
		return !f.StreamEnded() || hc.respond(f.StreamID)
	case *http2.RSTStreamFrame:
		hc.s.note("RST_STREAM", f.ErrCode)
	case *http2.GoAwayFrame:
		hc.s.note("GOAWAY", f.ErrCode)
		return false
	}
	return true
}

// block decodes a fragment of a header block; at its end a request
// without a body is answered. false: close.
func (hc *hostileConn) block(id uint32, frag []byte, end bool) bool {
	if _, err := hc.dec.Write(frag); err != nil {
		return false
	}
	return !end || !hc.endOnBlock || hc.respond(id)
}

// respond answers stream id with the next case drawn. false: close.
func (hc *hostileConn) respond(id uint32) bool {
	s, w := hc.s, hc.w
	var k H2Case
	k, w.Ch = loopback.Draw(s.Cases, s.Source, &s.Tally, s.Tally.Read.Add(1))
	w.ID = id
	return k.Answer(w)
}
