package negotiate

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

// runPool runs the pairs of lines once over vus VUs with o (a 5s timeout
// unless it says), as a run does.
func runPool(t testing.TB, vus int, o Options, lines ...string) (*fixture.Collect, error) {
	t.Helper()
	if o.Conn.Timeout == 0 {
		o.Conn.Timeout = 5 * time.Second
	}
	tr, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return h2peer.RunPool(t, tr, vus, lines...)
}

func TestTLSChoosesByALPN(t *testing.T) {
	plain := h2peer.PairLine("GET", "/plain", "1.1", `{"Accept":["*/*"]}`, nil)
	recorded2 := h2peer.PairLine("GET", "/h2", "2", `{"Accept":["*/*"]}`, nil)
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
			s := h2peer.NewSeen()
			target := h2peer.TLSServer(t, s, tc.h2server)
			sink, err := runPool(t, 1, Options{Conn: conn.Options{Target: target, Insecure: true}, HTTP2: tc.mode}, tc.lines...)
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
			if got := s.Conns.Load(); got != 1 {
				t.Errorf("server saw %d connections, want 1", got)
			}
			if s.Protos[int(tc.wantProto)] != len(tc.lines) {
				t.Errorf("server saw protocols %v, want %d requests over HTTP/%d", s.Protos, len(tc.lines), tc.wantProto)
			}
		})
	}
}

func TestGRPCRefusedWithoutHTTP2(t *testing.T) {
	grpcLine := h2peer.PairLine("POST", "/pkg.Svc/Call", "2", `{"Content-Type":["application/grpc"],"TE":["trailers"]}`, []byte{0, 0, 0, 0, 0})
	for _, tc := range []struct {
		name, target, mode, want string
		h2c                      bool
	}{
		{"--http2 off", "https://127.0.0.1:1", Off, "--http2 off", false},
		{"cleartext without --h2c", "http://127.0.0.1:1", Auto, "--h2c", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runPool(t, 1, Options{Conn: conn.Options{Target: tc.target}, HTTP2: tc.mode, H2C: tc.h2c}, grpcLine)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ":1:") {
				t.Errorf("Run: %v, want a refusal naming %s and the line", err, tc.want)
			}
		})
	}
}

func TestGRPCOverHTTP1FailsAsNoHTTP2(t *testing.T) {
	s := h2peer.NewSeen()
	target := h2peer.TLSServer(t, s, false)
	grpcLine := h2peer.PairLine("POST", "/pkg.Svc/Call", "2", `{"Content-Type":["application/grpc"],"TE":["trailers"]}`, []byte{0, 0, 0, 0, 0})
	plain := h2peer.PairLine("GET", "/plain", "", "", nil)
	sink, err := runPool(t, 1, Options{Conn: conn.Options{Target: target, Insecure: true}}, grpcLine, plain)
	if err != nil {
		t.Fatal(err)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrNoHTTP2 }); n != 1 {
		t.Errorf("%d results failed as no_http2, want 1: %+v", n, sink.Results())
	}
	if n := sink.Count(func(r result.Result) bool { return r.Status == 200 && r.Proto == result.ProtoHTTP1 }); n != 1 {
		t.Errorf("%d plain results answered over HTTP/1.1, want 1: %+v", n, sink.Results())
	}
	if s.URIs["/pkg.Svc/Call"] != 0 || s.Conns.Load() != 1 {
		t.Errorf("server saw %v over %d connections; want only /plain, over one", s.URIs, s.Conns.Load())
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
	tr, err := New(Options{Conn: conn.Options{Target: "http://127.0.0.1:9"}, H2C: true})
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
	// Where nothing may go as HTTP/2, the request is shown as HTTP/1.1
	// writes it (here with --no-connection-reuse's Connection: close).
	tr, err = New(Options{Conn: conn.Options{Target: "http://127.0.0.1:9", NoConnectionReuse: true}})
	if err != nil {
		t.Fatal(err)
	}
	addr, wire = tr.AppendWire(nil, req)
	want = "POST /a?b HTTP/1.1\r\nUser-Agent: x/1\r\nHost: 127.0.0.1:9\r\nTE: trailers\r\nUpgrade: h2c\r\nX-A: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
	if addr != "127.0.0.1:9" || string(wire) != want {
		t.Errorf("AppendWire over HTTP/1.1 = %s, %q; want 127.0.0.1:9, %q", addr, wire, want)
	}
}

func TestIdleGoAwayReconnectsWithoutRetry(t *testing.T) {
	s := h2peer.NewSeen()
	// The server closes a connection idle for 50ms with a GOAWAY.
	target := h2peer.ServeH2C(t, &http.Server{Handler: http.HandlerFunc(s.Handler), ConnState: s.ConnState, IdleTimeout: 50 * time.Millisecond})
	tr, err := New(Options{Conn: conn.Options{Target: target, Timeout: 5 * time.Second}, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture.OpenLines(t, h2peer.PairLine("GET", "/a", "", "", nil), h2peer.PairLine("GET", "/b", "", "", nil))
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
	if got := s.Conns.Load(); got != 2 {
		t.Errorf("server saw %d connections, want 2", got)
	}
}

// TestThroughProxy: HTTP/2 over TLS through a CONNECT proxy: the dial, the
// tunnel and the handshake are HTTP/1.1's, ALPN chooses h2 inside.
func TestThroughProxy(t *testing.T) {
	s := h2peer.NewSeen()
	target := h2peer.TLSServer(t, s, true)
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
	line := h2peer.PairLine("GET", "/via", "2", "", nil)
	sink, err := runPool(t, 1, Options{Conn: conn.Options{Target: target, Insecure: true, Proxy: "http://" + proxyAddr}}, line, line)
	if err != nil {
		t.Fatal(err)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Status == 200 && r.Proto == result.ProtoHTTP2 }); n != 2 {
		t.Errorf("%d answers over HTTP/2, want 2: %+v", n, sink.Results())
	}
	if tunnels.Load() != 1 || s.Protos[2] != 2 {
		t.Errorf("%d tunnels, the server saw %v; want 1 tunnel and 2 requests over HTTP/2", tunnels.Load(), s.Protos)
	}
}
