package http2

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/loopback"
	"github.com/replay-dev/replay/internal/replaytest"
	"github.com/replay-dev/replay/internal/transport/http1"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// pairLine builds an RRPair line: version "" leaves http.req.version out;
// headers is a raw JSON object (its key order is the order sent); body is
// sent as base64.
func pairLine(method, uri, version, headers string, body []byte) string {
	req := map[string]any{"method": method, "uri": uri, "host": "recorded.example:8080"}
	if version != "" {
		req["version"] = version
	}
	if body != nil {
		req["bodyBase64"] = base64.StdEncoding.EncodeToString(body)
	}
	raw, _ := json.Marshal(map[string]any{"http": map[string]any{"req": req}})
	if headers == "" {
		return string(raw)
	}
	return strings.Replace(string(raw), `"host":`, `"headers":`+headers+`,"host":`, 1)
}

// runPool runs the pairs of lines once over vus VUs with o (a 5s timeout
// unless it says), as a run does.
func runPool(t testing.TB, vus int, o Options, lines ...string) (*replaytest.Collect, error) {
	t.Helper()
	f := replaytest.OpenLines(t, lines...)
	if o.HTTP1.Timeout == 0 {
		o.HTTP1.Timeout = 5 * time.Second
	}
	tr, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	cfg := vu.Config{Load: schedule.Load{VUs: vus}, Log: zerolog.Nop()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sink := &replaytest.Collect{}
	p := &vu.Pool{File: f, Config: cfg, Sink: sink, Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = p.Run(ctx)
	return sink, err
}

// seen is what a Go net/http server saw.
type seen struct {
	mu     sync.Mutex
	protos map[int]int
	uris   map[string]int
	bodies map[string]string
	hdrs   map[string]http.Header
	conns  atomic.Int64
}

func newSeen() *seen {
	return &seen{protos: map[int]int{}, uris: map[string]int{}, bodies: map[string]string{}, hdrs: map[string]http.Header{}}
}

func (s *seen) handler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.protos[r.ProtoMajor]++
	s.uris[r.RequestURI]++
	s.bodies[r.RequestURI] = string(body)
	h := r.Header.Clone()
	h.Set("Host", r.Host)
	s.hdrs[r.RequestURI] = h
	s.mu.Unlock()
	w.Header().Set("X-Len", fmt.Sprint(len(body)))
	io.WriteString(w, "ok:"+r.RequestURI)
}

func (s *seen) connState(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		s.conns.Add(1)
	}
}

// h2cServer is a Go net/http server that speaks cleartext HTTP/2 only.
func h2cServer(t *testing.T, s *seen) string {
	return serveH2C(t, &http.Server{Handler: http.HandlerFunc(s.handler), ConnState: s.connState})
}

// serveH2C serves srv, set to speak cleartext HTTP/2 only, on loopback
// until the test ends, and returns its URL.
func serveH2C(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv.Protocols = &p
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// tlsServer is an httptest TLS server, offering h2 or not.
func tlsServer(t *testing.T, s *seen, h2 bool) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(s.handler))
	srv.EnableHTTP2 = h2
	srv.Config.ConnState = s.connState
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// bigHeader is a header value longer than two HTTP/2 frames.
var bigHeader = strings.Repeat("abcdefgh", 5000)

func TestH2CAgainstNetHTTP(t *testing.T) {
	s := newSeen()
	target := h2cServer(t, s)
	big := []byte(strings.Repeat("0123456789abcdef", 300<<10/16)) // 300 kB: past the default windows
	var lines []string
	for i := range 24 {
		body := []byte(fmt.Sprintf(`{"n":%d}`, i))
		if i == 5 {
			body = big
		}
		headers := `{"Host":["orig.example"],"Content-Type":["application/json"],"X-Trace":["t1","t2"],"Connection":["keep-alive"],"Transfer-Encoding":["chunked"],"TE":["gzip"],"Content-Length":["999"]}`
		if i == 7 { // a header block past one frame: CONTINUATION
			headers = `{"X-Big":["` + bigHeader + `"]}`
		}
		lines = append(lines, pairLine("POST", fmt.Sprintf("/items/%d?q=a%%20b", i), "2", headers, body))
	}
	sink, err := runPool(t, 3, Options{HTTP1: http1.Options{Target: target}, H2C: true}, lines...)
	if err != nil {
		t.Fatal(err)
	}
	res := sink.Results()
	if len(res) != 24 {
		t.Fatalf("%d results, want 24", len(res))
	}
	for _, r := range res {
		if r.Err != result.ErrNone || r.Status != 200 || r.Proto != result.ProtoHTTP2 || r.Upgraded || r.Downgraded {
			t.Errorf("result %+v: want 200 over HTTP/2, neither upgraded nor downgraded", r)
		}
	}
	if got := s.conns.Load(); got != 3 {
		t.Errorf("server saw %d connections, want 3 (one per VU)", got)
	}
	if s.protos[2] != 24 || len(s.protos) != 1 {
		t.Errorf("server saw protocols %v, want 24 requests over HTTP/2", s.protos)
	}
	for i := range 24 {
		uri := fmt.Sprintf("/items/%d?q=a%%20b", i)
		if s.uris[uri] != 1 {
			t.Errorf("%s seen %d times, want once", uri, s.uris[uri])
		}
	}
	if got := s.bodies["/items/5?q=a%20b"]; got != string(big) {
		t.Errorf("large body: got %d bytes, want %d as recorded", len(got), len(big))
	}
	if got := s.hdrs["/items/7?q=a%20b"].Get("X-Big"); got != bigHeader {
		t.Errorf("a 40 kB header arrived as %d bytes, want it whole", len(got))
	}
	h := s.hdrs["/items/1?q=a%20b"]
	host := strings.TrimPrefix(target, "http://")
	if h.Get("Host") != host || h.Get("Content-Type") != "application/json" || strings.Join(h.Values("X-Trace"), ",") != "t1,t2" ||
		h.Get("Content-Length") != "7" || h.Get("Connection") != "" || h.Get("Transfer-Encoding") != "" || h.Get("Te") != "" {
		t.Errorf("headers as seen: %v; want :authority %s, content-type, both x-trace, content-length 7, no connection headers", h, host)
	}
}

func TestTLSChoosesByALPN(t *testing.T) {
	plain := pairLine("GET", "/plain", "1.1", `{"Accept":["*/*"]}`, nil)
	recorded2 := pairLine("GET", "/h2", "2", `{"Accept":["*/*"]}`, nil)
	for _, tc := range []struct {
		name         string
		h2server     bool
		mode         string
		lines        []string
		wantProto    uint8
		wantUpgraded int
	}{
		{"auto with HTTP/2 pairs", true, Auto, []string{recorded2, recorded2, plain}, result.ProtoHTTP2, 1},
		{"auto without HTTP/2 pairs", true, Auto, []string{plain, plain}, result.ProtoHTTP1, 0},
		{"on with HTTP/1.1 pairs", true, On, []string{plain, plain}, result.ProtoHTTP2, 2},
		{"off with HTTP/2 pairs", true, Off, []string{recorded2, recorded2}, result.ProtoHTTP1, 0},
		{"on, the SUT without h2", false, On, []string{plain, recorded2}, result.ProtoHTTP1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSeen()
			target := tlsServer(t, s, tc.h2server)
			sink, err := runPool(t, 1, Options{HTTP1: http1.Options{Target: target, Insecure: true}, HTTP2: tc.mode}, tc.lines...)
			if err != nil {
				t.Fatal(err)
			}
			upgraded := 0
			for _, r := range sink.Results() {
				if r.Err != result.ErrNone || r.Status != 200 || r.Proto != tc.wantProto {
					t.Errorf("result %+v: want 200 over protocol %d", r, tc.wantProto)
				}
				if r.Upgraded {
					upgraded++
				}
			}
			if upgraded != tc.wantUpgraded {
				t.Errorf("%d upgraded, want %d", upgraded, tc.wantUpgraded)
			}
			if got := s.conns.Load(); got != 1 {
				t.Errorf("server saw %d connections, want 1", got)
			}
			if s.protos[int(tc.wantProto)] != len(tc.lines) {
				t.Errorf("server saw protocols %v, want %d requests over HTTP/%d", s.protos, len(tc.lines), tc.wantProto)
			}
		})
	}
}

func TestGRPCRefusedWithoutHTTP2(t *testing.T) {
	grpcLine := pairLine("POST", "/pkg.Svc/Call", "2", `{"Content-Type":["application/grpc"],"TE":["trailers"]}`, []byte{0, 0, 0, 0, 0})
	for _, tc := range []struct {
		name, target, mode, want string
		h2c                      bool
	}{
		{"--http2 off", "https://127.0.0.1:1", Off, "--http2 off", false},
		{"cleartext without --h2c", "http://127.0.0.1:1", Auto, "--h2c", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runPool(t, 1, Options{HTTP1: http1.Options{Target: tc.target}, HTTP2: tc.mode, H2C: tc.h2c}, grpcLine)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ":1:") {
				t.Errorf("Run: %v, want a refusal naming %s and the line", err, tc.want)
			}
		})
	}
}

func TestGRPCOverHTTP1FailsAsNoHTTP2(t *testing.T) {
	s := newSeen()
	target := tlsServer(t, s, false)
	grpcLine := pairLine("POST", "/pkg.Svc/Call", "2", `{"Content-Type":["application/grpc"],"TE":["trailers"]}`, []byte{0, 0, 0, 0, 0})
	plain := pairLine("GET", "/plain", "", "", nil)
	sink, err := runPool(t, 1, Options{HTTP1: http1.Options{Target: target, Insecure: true}}, grpcLine, plain)
	if err != nil {
		t.Fatal(err)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrNoHTTP2 }); n != 1 {
		t.Errorf("%d results failed as no_http2, want 1: %+v", n, sink.Results())
	}
	if n := sink.Count(func(r result.Result) bool { return r.Status == 200 && r.Proto == result.ProtoHTTP1 }); n != 1 {
		t.Errorf("%d plain results answered over HTTP/1.1, want 1: %+v", n, sink.Results())
	}
	if s.uris["/pkg.Svc/Call"] != 0 || s.conns.Load() != 1 {
		t.Errorf("server saw %v over %d connections; want only /plain, over one", s.uris, s.conns.Load())
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{HTTP2: "maybe"}, {HTTP2: Off, H2C: true}} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", o)
		}
	}
	if err := (&Options{HTTP2: On, H2C: true}).Validate(); err != nil {
		t.Errorf("Validate(on, h2c) = %v, want nil", err)
	}
}

func TestAppendWire(t *testing.T) {
	tr, err := New(Options{HTTP1: http1.Options{Target: "http://127.0.0.1:9"}, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	req := &rrpair.Request{Method: []byte("POST"), URI: []byte("/a?b"), Body: []byte("hi"), Headers: []rrpair.Header{
		{Name: []byte("User-Agent"), Value: []byte("x/1")}, {Name: []byte("Host"), Value: []byte("orig")},
		{Name: []byte("Connection"), Value: []byte("close")}, {Name: []byte("TE"), Value: []byte("trailers")},
		{Name: []byte("Upgrade"), Value: []byte("h2c")}, {Name: []byte("X-A"), Value: []byte("1")},
	}}
	addr, wire := tr.AppendWire(nil, req)
	want := ":method: POST\n:scheme: http\n:authority: 127.0.0.1:9\n:path: /a?b\nuser-agent: x/1\nte: trailers\nx-a: 1\ncontent-length: 2\n\nhi"
	if addr != "127.0.0.1:9" || string(wire) != want {
		t.Errorf("AppendWire = %s, %q; want 127.0.0.1:9, %q", addr, wire, want)
	}
}

func TestIdleGoAwayReconnectsWithoutRetry(t *testing.T) {
	s := newSeen()
	// The server closes a connection idle for 50ms with a GOAWAY.
	target := serveH2C(t, &http.Server{Handler: http.HandlerFunc(s.handler), ConnState: s.connState, IdleTimeout: 50 * time.Millisecond})
	tr, err := New(Options{HTTP1: http1.Options{Target: target, Timeout: 5 * time.Second}, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	f := replaytest.OpenLines(t, pairLine("GET", "/a", "", "", nil), pairLine("GET", "/b", "", "", nil))
	if err := tr.Check(f); err != nil {
		t.Fatal(err)
	}
	c := tr.NewClient(0, func() int64 { return time.Now().UnixNano() })
	defer c.Close()
	cur := f.NewCursor()
	for i := range 2 {
		var pair rrpair.Pair
		if err := cur.Decode(i, &pair); err != nil {
			t.Fatal(err)
		}
		var res result.Result
		c.Do(&pair.Req, &pair, &res)
		if res.Err != result.ErrNone || res.Status != 200 || res.Retried || res.Reconnect != (i == 1) {
			t.Errorf("request %d: %+v; want 200, not retried, a reconnect for the second", i, res)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if got := s.conns.Load(); got != 2 {
		t.Errorf("server saw %d connections, want 2", got)
	}
}

func TestNoConnectionReuse(t *testing.T) {
	s := newSeen()
	target := h2cServer(t, s)
	lines := []string{pairLine("GET", "/1", "", "", nil), pairLine("GET", "/2", "", "", nil), pairLine("GET", "/3", "", "", nil)}
	sink, err := runPool(t, 1, Options{HTTP1: http1.Options{Target: target, NoConnectionReuse: true}, H2C: true}, lines...)
	if err != nil {
		t.Fatal(err)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Status == 200 && r.Connected && r.Proto == result.ProtoHTTP2 }); n != 3 {
		t.Errorf("%d answers on a new HTTP/2 connection, want 3: %+v", n, sink.Results())
	}
	if got := s.conns.Load(); got != 3 {
		t.Errorf("server saw %d connections, want 3", got)
	}
}

// TestThroughProxy: HTTP/2 over TLS through a CONNECT proxy: the dial, the
// tunnel and the handshake are HTTP/1.1's, ALPN chooses h2 inside.
func TestThroughProxy(t *testing.T) {
	s := newSeen()
	target := tlsServer(t, s, true)
	var tunnels atomic.Int64
	proxyAddr, _ := loopback.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil || req.Method != "CONNECT" {
			return
		}
		up, err := net.Dial("tcp", req.Host)
		if err != nil {
			return
		}
		defer up.Close()
		tunnels.Add(1)
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { io.Copy(up, br); up.Close() }()
		io.Copy(c, up)
	})
	line := pairLine("GET", "/via", "2", "", nil)
	sink, err := runPool(t, 1, Options{HTTP1: http1.Options{Target: target, Insecure: true, Proxy: "http://" + proxyAddr}}, line, line)
	if err != nil {
		t.Fatal(err)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Status == 200 && r.Proto == result.ProtoHTTP2 }); n != 2 {
		t.Errorf("%d answers over HTTP/2, want 2: %+v", n, sink.Results())
	}
	if tunnels.Load() != 1 || s.protos[2] != 2 {
		t.Errorf("%d tunnels, the server saw %v; want 1 tunnel and 2 requests over HTTP/2", tunnels.Load(), s.protos)
	}
}
