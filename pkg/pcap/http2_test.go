package pcap

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2w writes the frames of one side of an HTTP/2 connection, its header
// blocks encoded with its own HPACK encoder (whose dynamic table the
// importer has to follow).
type h2w struct {
	t    testing.TB
	out  bytes.Buffer
	fr   *http2.Framer
	hbuf bytes.Buffer
	enc  *hpack.Encoder
}

func newH2W(t testing.TB) *h2w {
	w := &h2w{t: t}
	w.fr = http2.NewFramer(&w.out, nil)
	w.enc = hpack.NewEncoder(&w.hbuf)
	return w
}

// take returns what was written since the last take.
func (w *h2w) take() string {
	s := w.out.String()
	w.out.Reset()
	return s
}

// block encodes fields (name, value, name, value...).
func (w *h2w) block(fields ...string) []byte {
	w.hbuf.Reset()
	for i := 0; i < len(fields); i += 2 {
		if err := w.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}); err != nil {
			w.t.Fatal(err)
		}
	}
	return bytes.Clone(w.hbuf.Bytes())
}

// headers writes a HEADERS frame (split into CONTINUATION frames of at
// most split bytes when split > 0).
func (w *h2w) headers(id uint32, end bool, split int, fields ...string) string {
	b := w.block(fields...)
	first := b
	if split > 0 && len(b) > split {
		first = b[:split]
	}
	if err := w.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: end, EndHeaders: len(first) == len(b)}); err != nil {
		w.t.Fatal(err)
	}
	for b = b[len(first):]; len(b) > 0; {
		n := min(len(b), split)
		if err := w.fr.WriteContinuation(id, n == len(b), b[:n]); err != nil {
			w.t.Fatal(err)
		}
		b = b[n:]
	}
	return w.take()
}

func (w *h2w) data(id uint32, end bool, b string) string {
	if err := w.fr.WriteData(id, end, []byte(b)); err != nil {
		w.t.Fatal(err)
	}
	return w.take()
}

func (w *h2w) settings(s ...http2.Setting) string {
	if err := w.fr.WriteSettings(s...); err != nil {
		w.t.Fatal(err)
	}
	return w.take()
}

func (w *h2w) settingsAck() string {
	if err := w.fr.WriteSettingsAck(); err != nil {
		w.t.Fatal(err)
	}
	return w.take()
}

func (w *h2w) rst(id uint32, code http2.ErrCode) string {
	if err := w.fr.WriteRSTStream(id, code); err != nil {
		w.t.Fatal(err)
	}
	return w.take()
}

// grpcMsg frames a gRPC message.
func grpcMsg(payload string) string {
	m := make([]byte, 5)
	binary.BigEndian.PutUint32(m[1:], uint32(len(payload)))
	return string(m) + payload
}

// reqFields are the fields of a request to api.example:8080.
func reqFields(method, path string, more ...string) []string {
	return append([]string{":method", method, ":scheme", "http", ":authority", "api.example:8080", ":path", path}, more...)
}

var h2Scenarios = []scenario{
	{name: "h2c prior knowledge, streams interleaved", clean: true,
		pairs: []string{"GET /a -> 200", "POST /b -> 201", "GET /c -> 404"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:41001", "10.0.0.2:8080")
			k.handshake()
			cw, sw := newH2W(c.t), newH2W(c.t)
			k.send(true, preface+cw.settings(http2.Setting{ID: http2.SettingHeaderTableSize, Val: 8192}))
			k.send(false, sw.settings()+sw.settingsAck())
			k.send(true, cw.settingsAck()+
				cw.headers(1, true, 0, reqFields("GET", "/a", "user-agent", "test/2", "accept", "*/*")...)+
				cw.headers(3, false, 0, reqFields("POST", "/b", "user-agent", "test/2", "content-type", "application/json")...))
			k.send(true, cw.data(3, false, `{"b":`)+cw.headers(5, true, 12, reqFields("GET", "/c", "user-agent", "test/2", "cookie", "a=1", "cookie", "b=2", "x-long", strings.Repeat("l", 100))...))
			k.send(false, sw.headers(3, false, 0, ":status", "201", "content-type", "application/json")+sw.data(3, true, `{"id":1}`))
			k.send(true, cw.data(3, true, `1}`))
			k.send(false, sw.headers(5, true, 0, ":status", "404")+sw.headers(1, false, 0, ":status", "200", "content-type", "text/plain")+sw.data(1, false, "hel")+sw.data(1, true, "lo"))
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) != 3 {
				return
			}
			a, b, cc := r.pairs[0], r.pairs[1], r.pairs[2]
			wantFields(t, "GET /a", a.Headers, "user-agent: test/2", "accept: */*")
			if a.Version != "2" || a.Host != "api.example:8080" || a.ResBody != "hello" || a.Session != "c-1" || b.Session != "c-1" {
				t.Errorf("GET /a: %+v", a)
			}
			if b.Body != `{"b":1}` || b.ResBody != `{"id":1}` {
				t.Errorf("POST /b: %+v", b)
			}
			wantFields(t, "GET /c (its block in CONTINUATION frames)", cc.Headers, "user-agent: test/2", "cookie: a=1", "cookie: b=2", "x-long: "+strings.Repeat("l", 100))
			if r.st.Kinds["HTTP/2 IN"] != 3 {
				t.Errorf("%s", r.st.Summary())
			}
		}},
	{name: "h2c by Upgrade", clean: true, pairs: []string{"GET /up -> 200", "GET /then -> 200"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:41002", "10.0.0.2:8080")
			k.handshake()
			cw, sw := newH2W(c.t), newH2W(c.t)
			k.send(true, "GET /up HTTP/1.1\r\nHost: api.example:8080\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nAccept: */*\r\n\r\n")
			k.send(false, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"+sw.settings()+
				sw.headers(1, false, 0, ":status", "200", "content-type", "text/plain")+sw.data(1, true, "upgraded"))
			k.send(true, preface+cw.settings()+cw.settingsAck()+cw.headers(3, true, 0, reqFields("GET", "/then")...))
			k.send(false, sw.settingsAck()+sw.headers(3, true, 0, ":status", "200"))
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) != 2 {
				return
			}
			up := r.pairs[0]
			wantFields(t, "the upgrade request (Upgrade and HTTP2-Settings are the connection's)", up.Headers, "Host: api.example:8080", "Accept: */*")
			if up.Version != "1.1" || up.ResBody != "upgraded" || r.pairs[1].Version != "2" {
				t.Errorf("%+v", r.pairs)
			}
		}},
	{name: "gRPC unary, streaming, trailers-only", clean: true,
		pairs: []string{"POST /grpc.health.v1.Health/Check -> 200", "POST /test.Raw/Server -> 200", "POST /test.Raw/Client -> 200", "POST /test.Raw/Missing -> 200"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:41003", "10.0.0.2:50051")
			k.handshake()
			cw, sw := newH2W(c.t), newH2W(c.t)
			g := func(path string) []string {
				return reqFields("POST", path, "content-type", "application/grpc", "te", "trailers", "grpc-timeout", "5S")
			}
			k.send(false, sw.settings()) // grpc-go's server speaks first
			k.send(true, preface+cw.settings()+cw.headers(1, false, 0, g("/grpc.health.v1.Health/Check")...)+cw.data(1, true, grpcMsg("\x0a\x03svc")))
			k.send(false, sw.settingsAck()+sw.headers(1, false, 0, ":status", "200", "content-type", "application/grpc")+
				sw.data(1, false, grpcMsg("\x08\x01"))+sw.headers(1, true, 0, "grpc-status", "0", "grpc-message", ""))
			k.send(true, cw.settingsAck()+cw.headers(3, false, 0, g("/test.Raw/Server")...)+cw.data(3, true, grpcMsg("in")))
			k.send(false, sw.headers(3, false, 0, ":status", "200", "content-type", "application/grpc")+sw.data(3, false, grpcMsg("in-0"))+
				sw.data(3, false, grpcMsg("in-1")+grpcMsg("in-2"))+sw.headers(3, true, 0, "grpc-status", "0"))
			k.send(true, cw.headers(5, false, 0, g("/test.Raw/Client")...)+cw.data(5, false, grpcMsg("a"))+cw.data(5, false, grpcMsg("b")))
			k.send(true, cw.data(5, true, grpcMsg("c")))
			k.send(false, sw.headers(5, false, 0, ":status", "200", "content-type", "application/grpc")+sw.data(5, false, grpcMsg("3"))+sw.headers(5, true, 0, "grpc-status", "0"))
			k.send(true, cw.headers(7, true, 0, g("/test.Raw/Missing")...))
			k.send(false, sw.headers(7, true, 0, ":status", "200", "content-type", "application/grpc", "grpc-status", "12", "grpc-message", "unknown method"))
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) != 4 {
				return
			}
			h, s, cl, miss := r.pairs[0], r.pairs[1], r.pairs[2], r.pairs[3]
			if h.Body != grpcMsg("\x0a\x03svc") || h.ResBody != grpcMsg("\x08\x01") {
				t.Errorf("unary: %q -> %q", h.Body, h.ResBody)
			}
			wantFields(t, "unary trailers", h.ResTrailers, "grpc-status: 0", "grpc-message: ")
			if s.ResBody != grpcMsg("in-0")+grpcMsg("in-1")+grpcMsg("in-2") || cl.Body != grpcMsg("a")+grpcMsg("b")+grpcMsg("c") {
				t.Errorf("streaming: %q, %q", s.ResBody, cl.Body)
			}
			wantFields(t, "trailers-only", miss.ResHeaders, "content-type: application/grpc", "grpc-status: 12", "grpc-message: unknown method")
			if r.st.Kinds["gRPC IN"] != 4 {
				t.Errorf("%s", r.st.Summary())
			}
		}},
	{name: "HTTP/2 joined mid-connection",
		skips: []string{"h2-joined: HTTP/2 frames on a connection to 10.0.0.2:8080 the capture joined mid-connection"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:41004", "10.0.0.2:8080")
			k.handshake()
			cw, sw := newH2W(c.t), newH2W(c.t)
			k.send(true, preface+cw.settings()+cw.headers(1, true, 0, reqFields("GET", "/a")...))
			k.send(false, sw.settings()+sw.headers(1, true, 0, ":status", "200"))
			mark := len(c.segs)
			k.send(true, cw.headers(3, true, 0, reqFields("GET", "/b")...))
			k.send(false, sw.headers(3, true, 0, ":status", "200"))
			c.segs = c.segs[mark:]
		}},
	{name: "HTTP/2 with a loss", pairs: []string{"GET /a -> 200", "GET /b -> none", "GET /c -> none"},
		skips: []string{"h2-lost: HTTP/2 from the server of a connection to 10.0.0.2:8080: 12 bytes the capture lost, before packet 11"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:41005", "10.0.0.2:8080")
			k.handshake()
			cw, sw := newH2W(c.t), newH2W(c.t)
			k.send(true, preface+cw.settings()+cw.headers(1, true, 0, reqFields("GET", "/a")...))
			k.send(false, sw.settings()+sw.headers(1, true, 0, ":status", "200"))
			k.send(true, cw.headers(3, true, 0, reqFields("GET", "/b")...))
			k.mss = 12
			lost := k.send(false, sw.headers(3, false, 0, ":status", "200")+sw.data(3, true, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbb"))
			c.drop(lost[1])
			k.mss = 1400
			k.send(true, cw.headers(5, true, 0, reqFields("GET", "/c")...))
			k.send(false, sw.headers(5, true, 0, ":status", "200"))
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if r.st.AnswerLost != 2 {
				t.Errorf("%s: want 2 answers lost in the capture", r.st.Summary())
			}
		}},
	{name: "HTTP/2 streams reset", pairs: []string{"GET /slow -> none"},
		skips: []string{"reset: stream 3 (POST /upload) to 10.0.0.2:8080 was reset by the client (error code 8) before its request was whole"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:41006", "10.0.0.2:8080")
			k.handshake()
			cw, sw := newH2W(c.t), newH2W(c.t)
			k.send(true, preface+cw.settings()+cw.headers(1, true, 0, reqFields("GET", "/slow")...)+cw.headers(3, false, 0, reqFields("POST", "/upload")...)+cw.data(3, false, "part"))
			k.send(false, sw.settings())
			k.send(true, cw.rst(1, http2.ErrCodeCancel)+cw.rst(3, http2.ErrCodeCancel))
			k.close()
		}},
}

// TestHTTP2 imports captures of cleartext HTTP/2 and gRPC.
func TestHTTP2(t *testing.T) { runScenarios(t, h2Scenarios) }
