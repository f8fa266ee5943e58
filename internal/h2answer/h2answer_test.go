package h2answer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// testLimit is the test handler's limit on a request body.
const testLimit = 1024

// bigBody is the answer to /big.
var bigBody = bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16*4) // 256 KiB

// testHandler answers by path: /small, /big, /trailers, /echo (the
// body), /reset, /hold (once hold is closed, from a goroutine), /wait
// (from a goroutine at once); a body over testLimit gets 413.
type testHandler struct {
	hold chan struct{}
	gone chan string // /ctx: the path, once the stream's Context is done
}

// uploadLimit is the test handler's limit on the body of /upload.
const uploadLimit = 2 << 20

func (h *testHandler) Limit(st *Stream) int {
	if string(st.Path) == "/upload" {
		return uploadLimit
	}
	return testLimit
}

func (h *testHandler) Serve(st *Stream) {
	if st.Over {
		st.Answer(413, nil, []byte("over"), nil)
		return
	}
	switch string(st.Path) {
	case "/small":
		st.Answer(200, []Field{{[]byte("X-Answer"), []byte("small")}}, []byte("hello"), nil)
	case "/big":
		st.Answer(200, nil, bigBody, nil)
	case "/trailers":
		st.Answer(200, []Field{{[]byte("content-type"), []byte("application/grpc")}}, []byte("body"),
			[]Field{{[]byte("grpc-status"), []byte("0")}})
	case "/echo":
		st.Answer(200, nil, st.Body, nil)
	case "/upload":
		st.Answer(200, nil, strconv.AppendInt(nil, int64(len(st.Body)), 10), nil)
	case "/reset":
		st.Reset()
	case "/hold":
		go func() {
			<-h.hold
			st.Answer(200, nil, []byte("held"), nil)
		}()
	case "/wait":
		go st.Answer(200, nil, []byte("waited"), nil)
	case "/ctx", "/ctx2":
		ctx, path := st.Context(), string(st.Path)
		go func() {
			<-ctx.Done()
			h.gone <- path
			st.Answer(200, nil, []byte("too late"), nil)
		}()
	default:
		st.Answer(404, nil, nil, nil)
	}
}

// testServer is a Server on a loopback listener of its own; ended
// receives once for each connection whose Serve returned.
type testServer struct {
	s     *Server
	h     *testHandler
	addr  string
	ended chan struct{}
}

func serveTest(t testing.TB, lim Limits) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &testHandler{hold: make(chan struct{}), gone: make(chan string, 4)}
	ts := &testServer{s: New(h, lim), h: h, addr: ln.Addr().String(), ended: make(chan struct{}, 100)}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ts.s.Serve(c, "conn value")
				ts.ended <- struct{}{}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		select {
		case <-h.hold:
		default:
			close(h.hold)
		}
		ts.s.Close()
		wg.Wait()
	})
	return ts
}

// waitEnded waits for a connection's Serve to return, at most 20s.
func (ts *testServer) waitEnded(t *testing.T) {
	t.Helper()
	select {
	case <-ts.ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the connection was not ended")
	}
}

func h2cClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http2.Transport{AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}}
}

func get(t *testing.T, c *http.Client, method, url, body string) (*http.Response, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, r)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp, string(b)
}

// TestAnswers: x/net's client gets the answers as given: status, fields
// (in lower case, Content-Length the length sent, nothing else added),
// bodies large and small, none on HEAD, trailers, an echoed body, and a
// reset; a stream answered later does not hold the others.
func TestAnswers(t *testing.T) {
	ts := serveTest(t, Limits{})
	c := h2cClient()
	u := "http://" + ts.addr
	resp, body := get(t, c, "GET", u+"/small", "")
	if resp.StatusCode != 200 || body != "hello" || resp.Header.Get("X-Answer") != "small" || resp.ContentLength != 5 || len(resp.Header) != 2 {
		t.Errorf("/small: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = get(t, c, "HEAD", u+"/small", "")
	if resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Length") != "" {
		t.Errorf("HEAD /small: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, body = get(t, c, "GET", u+"/big", ""); resp.StatusCode != 200 || body != string(bigBody) {
		t.Errorf("/big: %d, %d bytes, want %d", resp.StatusCode, len(body), len(bigBody))
	}
	resp, body = get(t, c, "GET", u+"/trailers", "")
	if body != "body" || resp.Trailer.Get("Grpc-Status") != "0" {
		t.Errorf("/trailers: %q, trailers %v", body, resp.Trailer)
	}
	if resp, body = get(t, c, "POST", u+"/echo", "ping pong"); body != "ping pong" {
		t.Errorf("/echo: %d %q", resp.StatusCode, body)
	}
	if resp, body = get(t, c, "POST", u+"/echo", strings.Repeat("x", testLimit+1)); resp.StatusCode != 413 || body != "over" {
		t.Errorf("a body over the limit: %d %q, want 413", resp.StatusCode, body)
	}
	if resp, body = get(t, c, "GET", u+"/wait", ""); body != "waited" {
		t.Errorf("/wait: %d %q", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", u+"/reset", nil)
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("/reset: answered %d, want the stream reset", resp.StatusCode)
	}
	held := make(chan string)
	go func() {
		req, _ := http.NewRequest("GET", u+"/hold", nil)
		resp, err := c.Do(req)
		if err != nil {
			held <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		held <- string(b)
	}()
	for range 5 { // the held stream does not hold the connection's others
		if _, body := get(t, c, "GET", u+"/small", ""); body != "hello" {
			t.Fatalf("/small beside a held stream: %q", body)
		}
	}
	close(ts.h.hold)
	if got := <-held; got != "held" {
		t.Errorf("/hold: %q", got)
	}
}

// rawClient speaks frames to the server.
type rawClient struct {
	t   testing.TB
	c   net.Conn
	fr  *http2.Framer
	bw  *bufio.Writer
	enc *hpack.Encoder
	hb  bytes.Buffer
}

// dial opens a connection, sends the preface and settings (with no
// settings, the defaults) and reads the server's SETTINGS.
func dial(t testing.TB, addr string, settings ...http2.Setting) (*rawClient, http2.SettingsFrame) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawClient{t: t, c: c, bw: bufio.NewWriter(c)}
	rc.fr = http2.NewFramer(rc.bw, bufio.NewReader(c))
	rc.fr.SetMaxReadFrameSize(1 << 20)
	rc.enc = hpack.NewEncoder(&rc.hb)
	rc.bw.WriteString(http2.ClientPreface)
	rc.fr.WriteSettings(settings...)
	rc.flush()
	f := rc.read()
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		t.Fatalf("first frame: %v, want the server's SETTINGS", f)
	}
	return rc, *sf
}

func (rc *rawClient) flush() {
	if err := rc.bw.Flush(); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// read reads the next frame, at most 10s.
func (rc *rawClient) read() http2.Frame {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := rc.fr.ReadFrame()
	if err != nil {
		rc.t.Fatalf("read: %v", err)
	}
	return f
}

// block encodes a request's header block with extra fields.
func (rc *rawClient) block(method, path string, extra ...string) []byte {
	rc.hb.Reset()
	rc.enc.WriteField(hpack.HeaderField{Name: ":method", Value: method})
	rc.enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "http"})
	rc.enc.WriteField(hpack.HeaderField{Name: ":authority", Value: "test"})
	rc.enc.WriteField(hpack.HeaderField{Name: ":path", Value: path})
	for i := 0; i+1 < len(extra); i += 2 {
		rc.enc.WriteField(hpack.HeaderField{Name: extra[i], Value: extra[i+1]})
	}
	return append([]byte(nil), rc.hb.Bytes()...)
}

// pieces sends a request's header block in pieces: HEADERS, then
// CONTINUATION frames.
func (rc *rawClient) pieces(id uint32, blk []byte) {
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: blk[:8000], EndStream: true})
	for blk = blk[8000:]; len(blk) > 8000; blk = blk[8000:] {
		rc.fr.WriteContinuation(id, false, blk[:8000])
	}
	rc.fr.WriteContinuation(id, true, blk)
	rc.flush()
}

func (rc *rawClient) request(id uint32, method, path string, end bool, extra ...string) {
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.block(method, path, extra...), EndStream: end, EndHeaders: true})
	rc.flush()
}

// until reads frames until match says a frame is the one awaited, and
// returns it; the server's SETTINGS ack and WINDOW_UPDATEs pass by.
func (rc *rawClient) until(what string, match func(http2.Frame) bool) http2.Frame {
	rc.t.Helper()
	for range 10000 {
		f := rc.read()
		if match(f) {
			return f
		}
	}
	rc.t.Fatalf("no %s", what)
	return nil
}

func rstOf(id uint32) func(http2.Frame) bool {
	return func(f http2.Frame) bool { r, ok := f.(*http2.RSTStreamFrame); return ok && r.StreamID == id }
}

func isGoAway(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok }

// statusOf decodes the :status of a HEADERS frame.
func statusOf(f *http2.HeadersFrame) string {
	var st string
	hpack.NewDecoder(4096, func(hf hpack.HeaderField) {
		if hf.Name == ":status" {
			st = hf.Value
		}
	}).Write(f.HeaderBlockFragment())
	return st
}

// TestStreamsBounded: the server advertises 100 streams at once and
// refuses the 101st (REFUSED_STREAM) while 100 are held; once they are
// answered, a new stream is served.
func TestStreamsBounded(t *testing.T) {
	ts := serveTest(t, Limits{})
	rc, sf := dial(t, ts.addr)
	if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); !ok || v != 100 {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS %d (%v), want 100", v, ok)
	}
	for i := range 101 {
		rc.request(uint32(2*i+1), "GET", "/hold", true)
	}
	f := rc.until("RST_STREAM of stream 201", func(f http2.Frame) bool {
		_, ok := f.(*http2.RSTStreamFrame)
		return ok
	}).(*http2.RSTStreamFrame)
	if f.StreamID != 201 || f.ErrCode != http2.ErrCodeRefusedStream {
		t.Fatalf("RST_STREAM %d %v, want 201 REFUSED_STREAM", f.StreamID, f.ErrCode)
	}
	close(ts.h.hold)
	answered := 0
	rc.until("the 100 held answers", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok && d.StreamEnded() {
			answered++
		}
		return answered == 100
	})
	rc.request(203, "GET", "/small", true)
	h := rc.until("HEADERS of stream 203", func(f http2.Frame) bool { h, ok := f.(*http2.HeadersFrame); return ok && h.StreamID == 203 })
	if st := statusOf(h.(*http2.HeadersFrame)); st != "200" {
		t.Errorf("stream 203: %s, want 200", st)
	}
}

// TestHeaderListBounded: a header list over the bound advertised is
// answered 431 (decoded, not kept), the connection going on; one field
// longer than the bound is a compression error (GOAWAY).
func TestHeaderListBounded(t *testing.T) {
	ts := serveTest(t, Limits{HeaderList: 16 << 10})
	rc, sf := dial(t, ts.addr)
	if v, _ := sf.Value(http2.SettingMaxHeaderListSize); v != 16<<10 {
		t.Errorf("SETTINGS_MAX_HEADER_LIST_SIZE %d, want %d", v, 16<<10)
	}
	var extra []string
	for i := range 40 {
		extra = append(extra, "x-field-"+strings.Repeat("n", i), strings.Repeat("v", 1000))
	}
	rc.pieces(1, rc.block("GET", "/small", extra...))
	h := rc.until("HEADERS of stream 1", func(f http2.Frame) bool { _, ok := f.(*http2.HeadersFrame); return ok })
	if st := statusOf(h.(*http2.HeadersFrame)); st != "431" {
		t.Errorf("a header list over the bound: %s, want 431", st)
	}
	rc.request(3, "GET", "/small", true) // the dynamic table still agrees
	h = rc.until("HEADERS of stream 3", func(f http2.Frame) bool { h, ok := f.(*http2.HeadersFrame); return ok && h.StreamID == 3 })
	if st := statusOf(h.(*http2.HeadersFrame)); st != "200" {
		t.Errorf("the next stream: %s, want 200", st)
	}
	rc.pieces(5, rc.block("GET", "/small", "x-huge", strings.Repeat("v", 20<<10)))
	g := rc.until("GOAWAY", isGoAway).(*http2.GoAwayFrame)
	if g.ErrCode != http2.ErrCodeCompression {
		t.Errorf("one field over the bound: GOAWAY %v, want COMPRESSION_ERROR", g.ErrCode)
	}
	ts.waitEnded(t)
}

// TestBodyOverLimit: a body past the handler's limit is answered (413)
// and its stream reset (NO_ERROR), the rest unread; one announced
// longer is answered before a byte is sent. The connection goes on.
func TestBodyOverLimit(t *testing.T) {
	ts := serveTest(t, Limits{})
	rc, _ := dial(t, ts.addr)
	rc.request(1, "POST", "/echo", false)
	rc.fr.WriteData(1, false, make([]byte, testLimit+100))
	rc.flush()
	h := rc.until("HEADERS of stream 1", func(f http2.Frame) bool { _, ok := f.(*http2.HeadersFrame); return ok })
	if st := statusOf(h.(*http2.HeadersFrame)); st != "413" {
		t.Errorf("a body over its limit: %s, want 413", st)
	}
	if r := rc.until("RST_STREAM of stream 1", rstOf(1)).(*http2.RSTStreamFrame); r.ErrCode != http2.ErrCodeNo {
		t.Errorf("RST_STREAM %v, want NO_ERROR", r.ErrCode)
	}
	rc.fr.WriteData(1, true, make([]byte, 100)) // already on its way: dropped
	rc.request(3, "POST", "/echo", false, "content-length", "5000")
	h = rc.until("HEADERS of stream 3", func(f http2.Frame) bool { h, ok := f.(*http2.HeadersFrame); return ok && h.StreamID == 3 })
	if st := statusOf(h.(*http2.HeadersFrame)); st != "413" {
		t.Errorf("a length announced over the limit: %s, want 413", st)
	}
	rc.request(5, "POST", "/echo", false)
	rc.fr.WriteData(5, true, []byte("fits"))
	rc.flush()
	d := rc.until("DATA of stream 5", func(f http2.Frame) bool { d, ok := f.(*http2.DataFrame); return ok && d.StreamID == 5 })
	if got := string(d.(*http2.DataFrame).Data()); got != "fits" {
		t.Errorf("echo after the refused bodies: %q", got)
	}
}

// TestSmallWindow: with the client's windows small the answer goes as
// they open, never past them, whole in the end.
func TestSmallWindow(t *testing.T) {
	ts := serveTest(t, Limits{})
	const win = 1000
	rc, _ := dial(t, ts.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: win})
	rc.request(1, "GET", "/big", true)
	var got []byte
	allowed := win // the stream's window (the connection's is 65535 and larger)
	connAllowed := 65535
	for range 100000 {
		f := rc.read()
		d, ok := f.(*http2.DataFrame)
		if !ok {
			continue
		}
		got = append(got, d.Data()...)
		allowed -= len(d.Data())
		connAllowed -= len(d.Data())
		if allowed < 0 || connAllowed < 0 {
			t.Fatalf("DATA past the window: %d bytes over the stream's, %d over the connection's", -allowed, -connAllowed)
		}
		if d.StreamEnded() {
			break
		}
		if allowed == 0 { // open it a little, as a slow reader does
			rc.fr.WriteWindowUpdate(1, 3000)
			rc.fr.WriteWindowUpdate(0, 3000)
			rc.flush()
			allowed += 3000
			connAllowed += 3000
		}
	}
	if !bytes.Equal(got, bigBody) {
		t.Fatalf("got %d bytes, want %d", len(got), len(bigBody))
	}
}

// TestClientThatDoesNotRead: a client that opens its windows wide, asks
// for large answers and reads nothing is cut after the idle timeout of a
// blocked write; a PING flood of a client that reads nothing leaves the
// buffered output bounded and is cut the same way.
func TestClientThatDoesNotRead(t *testing.T) {
	var mu sync.Mutex
	most := 0
	flushHook = func(n int) {
		mu.Lock()
		most = max(most, n)
		mu.Unlock()
	}
	t.Cleanup(func() { flushHook = nil })
	ts := serveTest(t, Limits{Idle: 300 * time.Millisecond})
	rc, _ := dial(t, ts.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	rc.fr.WriteWindowUpdate(0, 1<<31-1-65535)
	for i := range 100 {
		rc.request(uint32(2*i+1), "GET", "/big", true) // 25 MiB in all
	}
	ts.waitEnded(t)

	fl, _ := dial(t, ts.addr)
	go func() {
		var data [8]byte
		for range 2_000_000 {
			if fl.fr.WritePing(false, data) != nil {
				return
			}
		}
		fl.bw.Flush()
	}()
	ts.waitEnded(t)
	mu.Lock()
	defer mu.Unlock()
	if most > flushAt+64<<10 {
		t.Errorf("%d bytes buffered at once, want at most about %d", most, flushAt)
	}
}

// TestTimeouts: a connection with no stream open is closed after the
// idle timeout (GOAWAY NO_ERROR); a stream whose body stops coming is
// reset (CANCEL).
func TestTimeouts(t *testing.T) {
	ts := serveTest(t, Limits{Idle: 300 * time.Millisecond})
	rc, _ := dial(t, ts.addr)
	rc.request(1, "POST", "/echo", false)
	rc.fr.WriteData(1, false, []byte("part"))
	rc.flush()
	if r := rc.until("RST_STREAM of stream 1", rstOf(1)).(*http2.RSTStreamFrame); r.ErrCode != http2.ErrCodeCancel {
		t.Errorf("a body that stops: RST_STREAM %v, want CANCEL", r.ErrCode)
	}
	g := rc.until("GOAWAY", isGoAway).(*http2.GoAwayFrame)
	if g.ErrCode != http2.ErrCodeNo || g.LastStreamID != 1 {
		t.Errorf("idle: GOAWAY %v last %d, want NO_ERROR last 1", g.ErrCode, g.LastStreamID)
	}
	ts.waitEnded(t)
}

// TestProtocolErrors: what breaks the protocol gets GOAWAY with its
// code, and the connection ends.
func TestProtocolErrors(t *testing.T) {
	ts := serveTest(t, Limits{})
	for _, tt := range []struct {
		name string
		send func(rc *rawClient)
		want http2.ErrCode
	}{
		{"a stream of the server's", func(rc *rawClient) { rc.request(2, "GET", "/small", true) }, http2.ErrCodeProtocol},
		{"DATA on an idle stream", func(rc *rawClient) { rc.fr.WriteData(7, true, []byte("x")); rc.flush() }, http2.ErrCodeProtocol},
		{"a frame over the size", func(rc *rawClient) {
			rc.request(1, "POST", "/echo", false)
			rc.fr.WriteData(1, true, make([]byte, 20000))
			rc.flush()
		}, http2.ErrCodeFrameSize},
		{"a broken header block", func(rc *rawClient) {
			rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EndStream: true, EndHeaders: true})
			rc.flush()
		}, http2.ErrCodeCompression},
		{"a window past 2^31-1", func(rc *rawClient) { rc.fr.WriteWindowUpdate(0, 1<<31-1); rc.flush() }, http2.ErrCodeFlowControl},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc, _ := dial(t, ts.addr)
			tt.send(rc)
			if g := rc.until("GOAWAY", isGoAway).(*http2.GoAwayFrame); g.ErrCode != tt.want {
				t.Errorf("GOAWAY %v, want %v", g.ErrCode, tt.want)
			}
			ts.waitEnded(t)
		})
	}
}

// TestShutdown: Shutdown sends GOAWAY, lets the stream in flight be
// answered, then closes the connection and returns.
func TestShutdown(t *testing.T) {
	ts := serveTest(t, Limits{})
	rc, _ := dial(t, ts.addr)
	rc.request(1, "GET", "/hold", true)
	rc.request(3, "GET", "/small", true)
	rc.until("the answer to stream 3", func(f http2.Frame) bool { d, ok := f.(*http2.DataFrame); return ok && d.StreamID == 3 })
	done := make(chan error, 1)
	go func() { done <- ts.s.Shutdown(context.Background()) }()
	if g := rc.until("GOAWAY", isGoAway).(*http2.GoAwayFrame); g.ErrCode != http2.ErrCodeNo || g.LastStreamID != 3 {
		t.Errorf("GOAWAY %v last %d, want NO_ERROR last 3", g.ErrCode, g.LastStreamID)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) with a stream in flight", err)
	default:
	}
	close(ts.h.hold)
	d := rc.until("the held answer", func(f http2.Frame) bool { d, ok := f.(*http2.DataFrame); return ok && d.StreamID == 1 })
	if string(d.(*http2.DataFrame).Data()) != "held" {
		t.Errorf("held: %q", d.(*http2.DataFrame).Data())
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	ts.waitEnded(t)
}

// BenchmarkAnswer: a request (one stream, END_STREAM on its HEADERS,
// its fields indexed) and its small answer over a loopback connection,
// the client's frames prepared once and read with reused frames. x/net's
// framer allocates each HEADERS frame it reads: one allocation an answer
// is the server's, one the client's.
func BenchmarkAnswer(b *testing.B) {
	ts := serveTest(b, Limits{})
	rc, _ := dial(b, ts.addr)
	rc.fr.SetReuseFrames()
	rc.fr.WriteWindowUpdate(0, 1<<31-1-65535) // the answers' bytes are not given back
	rc.c.SetReadDeadline(time.Time{})
	rc.request(1, "GET", "/small", true) // its fields enter both dynamic tables
	rc.until("the first answer", func(f http2.Frame) bool { d, ok := f.(*http2.DataFrame); return ok && d.StreamEnded() })
	rc.c.SetReadDeadline(time.Time{})
	blk := rc.block("GET", "/small") // indexed from now on
	b.ReportAllocs()
	b.ResetTimer()
	id := uint32(3)
	for range b.N {
		rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: blk, EndStream: true, EndHeaders: true})
		rc.bw.Flush()
		for {
			f, err := rc.fr.ReadFrame()
			if err != nil {
				b.Fatal(err)
			}
			if d, ok := f.(*http2.DataFrame); ok && d.StreamEnded() {
				break
			}
		}
		id += 2
	}
}

// TestStreamError: a frame that breaks a stream only (a WINDOW_UPDATE of
// 0 on it) resets that stream (PROTOCOL_ERROR); the connection goes on.
func TestStreamError(t *testing.T) {
	ts := serveTest(t, Limits{})
	rc, _ := dial(t, ts.addr)
	rc.request(1, "GET", "/hold", true)
	rc.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, 1, []byte{0, 0, 0, 0})
	rc.flush()
	if r := rc.until("RST_STREAM of stream 1", rstOf(1)).(*http2.RSTStreamFrame); r.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("RST_STREAM %v, want PROTOCOL_ERROR", r.ErrCode)
	}
	rc.request(3, "GET", "/small", true)
	d := rc.until("DATA of stream 3", func(f http2.Frame) bool { d, ok := f.(*http2.DataFrame); return ok && d.StreamID == 3 })
	if got := string(d.(*http2.DataFrame).Data()); got != "hello" {
		t.Errorf("the next stream: %q", got)
	}
}

// TestContextEnds: a stream's Context ends when the client resets the
// stream, and when its connection ends, so that a handler waiting on a
// call elsewhere can cut it short; the stream beside it is not touched.
func TestContextEnds(t *testing.T) {
	ts := serveTest(t, Limits{})
	rc, _ := dial(t, ts.addr)
	rc.request(1, "GET", "/ctx", true)
	rc.request(3, "GET", "/ctx2", true)
	rc.flush()
	rc.fr.WriteRSTStream(1, http2.ErrCodeCancel)
	rc.flush()
	ts.contextEnds(t, "/ctx", "reset")
	select {
	case p := <-ts.h.gone:
		t.Fatalf("%s's context ended with its connection still up", p)
	case <-time.After(100 * time.Millisecond):
	}
	rc.c.Close()
	ts.contextEnds(t, "/ctx2", "its connection closed")
	ts.waitEnded(t)
}

// contextEnds waits, at most 10s, for the next stream whose Context
// ended, which must be path's (why says why it should).
func (ts *testServer) contextEnds(t *testing.T, path, why string) {
	t.Helper()
	select {
	case p := <-ts.h.gone:
		if p != path {
			t.Fatalf("%s's context ended, want %s's (%s)", p, path, why)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s's context did not end (%s)", path, why)
	}
}

// flowSender sends request bodies within the windows the server gives,
// and keeps the answers' bodies.
type flowSender struct {
	rc      *rawClient
	conn    int64
	streams map[uint32]int64 // the stream windows (the default until moved)
	answers map[uint32]string
	zeros   [16384]byte
}

func newFlowSender(rc *rawClient) *flowSender {
	return &flowSender{rc: rc, conn: 65535, streams: map[uint32]int64{}, answers: map[uint32]string{}}
}

func (fs *flowSender) window(id uint32) int64 {
	if _, ok := fs.streams[id]; !ok {
		fs.streams[id] = 65535
	}
	return fs.streams[id]
}

// send sends n bytes of stream id's body (END_STREAM with the last when
// end), waiting for the server's windows; it gives up when they stay
// shut for patience, and returns how much went.
func (fs *flowSender) send(id uint32, n int64, end bool, patience time.Duration) int64 {
	sent := int64(0)
	for sent < n {
		w := min(fs.conn, fs.window(id), int64(len(fs.zeros)), n-sent)
		if w <= 0 {
			if !fs.await(patience) {
				return sent
			}
			continue
		}
		fs.rc.fr.WriteData(id, end && sent+w == n, fs.zeros[:w])
		fs.rc.flush()
		fs.conn -= w
		fs.streams[id] -= w
		sent += w
	}
	if end && n == 0 {
		fs.rc.fr.WriteData(id, true, nil)
		fs.rc.flush()
	}
	return sent
}

// await reads one frame, at most patience: false when none came.
func (fs *flowSender) await(patience time.Duration) bool {
	fs.rc.t.Helper()
	fs.rc.c.SetReadDeadline(time.Now().Add(patience))
	f, err := fs.rc.fr.ReadFrame()
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	if err != nil {
		fs.rc.t.Fatalf("read: %v", err)
	}
	switch f := f.(type) {
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			fs.conn += int64(f.Increment)
		} else {
			fs.streams[f.StreamID] = fs.window(f.StreamID) + int64(f.Increment)
		}
	case *http2.DataFrame:
		fs.answers[f.StreamID] += string(f.Data())
	case *http2.RSTStreamFrame:
		fs.rc.t.Fatalf("stream %d reset: %v", f.StreamID, f.ErrCode)
	case *http2.GoAwayFrame:
		fs.rc.t.Fatalf("GOAWAY: %v", f.ErrCode)
	}
	return true
}

// answer waits for stream id's answer body, at most 10s.
func (fs *flowSender) answer(id uint32, want string) {
	fs.rc.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for fs.answers[id] != want && time.Now().Before(deadline) {
		fs.await(100 * time.Millisecond)
	}
	if got := fs.answers[id]; got != want {
		fs.rc.t.Fatalf("stream %d's answer: %q, want %q", id, got, want)
	}
}

// TestBodiesHeldBounded: the request bodies a connection's streams hold
// at once are bounded (Limits.Bodies): past it only the stream opened
// first gets its window back, so a client that opens streams and sends
// each its body's first part holds no more than the bound and the
// windows it had, not a body limit a stream; and every body still
// arrives whole, one stream after another.
func TestBodiesHeldBounded(t *testing.T) {
	const bound = 100 << 10
	const body = 1 << 20
	ts := serveTest(t, Limits{Bodies: bound})
	rc, _ := dial(t, ts.addr)
	fs := newFlowSender(rc)
	rc.request(1, "POST", "/upload", false)
	others := []uint32{3, 5, 7, 9}
	for _, id := range others {
		rc.request(id, "POST", "/upload", false)
	}
	sent := map[uint32]int64{}
	var held int64
	for _, id := range others {
		sent[id] = fs.send(id, body, false, 300*time.Millisecond)
		held += sent[id]
	}
	// The bound, with the windows the streams had when it was passed.
	if most := int64(bound + len(others)*2*65535); held > most {
		t.Errorf("the other streams sent %d bytes of bodies while the first sent none; at most %d should be let in", held, most)
	}
	if got := fs.send(1, 300<<10, false, 5*time.Second); got != 300<<10 {
		t.Fatalf("the stream opened first sent %d of 300 KiB: it must read on past the bound", got)
	}
	fs.send(1, 0, true, 5*time.Second)
	fs.answer(1, strconv.Itoa(300<<10))
	for _, id := range others {
		if got := fs.send(id, body-sent[id], true, 5*time.Second); got != body-sent[id] {
			t.Fatalf("stream %d sent %d of the %d left once the streams before it were answered", id, got, body-sent[id])
		}
		fs.answer(id, strconv.Itoa(body))
	}
}

// TestBodyPastItsLength: a body longer than the content-length its
// request announced is malformed (RFC 9113 §8.1.1): its stream is reset
// as soon as it passes the length, not at its end, and so is one that
// ends short of it; the connection goes on.
func TestBodyPastItsLength(t *testing.T) {
	ts := serveTest(t, Limits{})
	rc, _ := dial(t, ts.addr)
	rc.request(1, "POST", "/echo", false, "content-length", "5")
	rc.fr.WriteData(1, false, []byte("0123456789")) // past 5, and not ended
	rc.flush()
	if r := rc.until("RST_STREAM of stream 1", rstOf(1)).(*http2.RSTStreamFrame); r.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("a body past its length: RST_STREAM %v, want PROTOCOL_ERROR", r.ErrCode)
	}
	rc.request(3, "POST", "/echo", false, "content-length", "5")
	rc.fr.WriteData(3, true, []byte("012"))
	rc.flush()
	if r := rc.until("RST_STREAM of stream 3", rstOf(3)).(*http2.RSTStreamFrame); r.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("a body short of its length: RST_STREAM %v, want PROTOCOL_ERROR", r.ErrCode)
	}
	rc.request(5, "POST", "/echo", false, "content-length", "5")
	rc.fr.WriteData(5, true, []byte("01234"))
	rc.flush()
	d := rc.until("DATA of stream 5", func(f http2.Frame) bool { d, ok := f.(*http2.DataFrame); return ok && d.StreamID == 5 })
	if got := string(d.(*http2.DataFrame).Data()); got != "01234" {
		t.Errorf("a body of its length: echo %q", got)
	}
}
