package conn

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// testLine is a Line to a loopback server that handles each connection
// with handle, on a clock the test moves (clock, in Unix ns), with o's
// other options. It returns the Line, the Route of a request and the
// count of connections the server accepted.
func testLine(t *testing.T, handle func(net.Conn), o Options) (*Line, Route, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	addr, conns := loopback.Serve(t, handle)
	o.Target = "http://" + addr
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	clock := &atomic.Int64{}
	clock.Store(time.Now().UnixNano())
	l := d.NewLine(clock.Load)
	t.Cleanup(l.Close) // before the server waits for its handlers
	return l, l.Route(&rrpair.Request{Method: []byte("GET"), URI: []byte("/")}), conns, clock
}

// quiet keeps a connection open and silent until the client closes it.
func quiet(c net.Conn) { io.Copy(io.Discard, c) }

// connect is l.Connect that must succeed.
func connect(t *testing.T, l *Line, dst *Route, p *Protocols, res *result.Result) *Conn {
	t.Helper()
	cn, _, kind := l.Connect(dst, res, p, nil)
	if kind != result.ErrNone || cn == nil {
		addr, err := l.Failure()
		t.Fatalf("Connect to %s: %v (%v)", addr, kind, err)
	}
	return cn
}

// A Line keeps its connection from request to request, and counts a new
// one after it dropped the last as a reconnect; Failure says why it was
// dropped.
func TestLineKeepsAndCounts(t *testing.T) {
	l, dst, conns, _ := testLine(t, quiet, Options{})
	var none Protocols
	var res result.Result
	first := connect(t, l, &dst, &none, &res)
	if !res.Connected || res.Reconnect || first.Addr != dst.Addr || first.HTTPS || first.Proto != "" {
		t.Errorf("first: %+v, conn %+v; want a new connection, no reconnect", res, first)
	}
	res = result.Result{}
	if cn := connect(t, l, &dst, &none, &res); cn != first || res.Connected {
		t.Errorf("second: %+v; want the kept connection", res)
	}
	broken := errors.New("broken")
	l.Drop(broken)
	if addr, err := l.Failure(); addr != dst.Addr || err != broken {
		t.Errorf("Failure after Drop: %s, %v; want %s, the error dropped with", addr, err, dst.Addr)
	}
	res = result.Result{}
	if cn := connect(t, l, &dst, &none, &res); cn == first || !res.Connected || !res.Reconnect {
		t.Errorf("after Drop: %+v; want a new connection, a reconnect", res)
	}
	if _, err := l.Failure(); err != nil {
		t.Errorf("Failure after a good Connect: %v, want nil", err)
	}
	for deadline := time.Now().Add(5 * time.Second); conns.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the server accepts after the handshake
	}
	if got := conns.Load(); got != 2 {
		t.Errorf("server saw %d connections, want 2", got)
	}
}

// Protocols do not share a cleartext connection: one spoken by prior
// knowledge is closed for a request that wants another.
func TestLineCleartextProtocols(t *testing.T) {
	l, dst, _, _ := testLine(t, quiet, Options{})
	var res result.Result
	prior := Protocols{Cleartext: "x"}
	cn := connect(t, l, &dst, &prior, &res)
	if cn.Proto != "x" {
		t.Errorf("proto %q, want x by prior knowledge", cn.Proto)
	}
	if again := connect(t, l, &dst, &prior, &res); again != cn {
		t.Error("the same protocol did not keep the connection")
	}
	var none Protocols
	if other := connect(t, l, &dst, &none, &res); other == cn || other.Proto != "" {
		t.Errorf("another protocol got %+v, want a new connection without a protocol", other)
	}
}

// A kept connection that sat idle is probed before it is used again: one
// the SUT closed, or sent on unasked, is replaced (Unsolicited for
// bytes); a busy one is not probed, nor one whose protocol settles it
// itself (Protocols.Settles), which Waiting then shows.
func TestLineIdleProbe(t *testing.T) {
	for _, tc := range []struct {
		name        string
		handle      func(net.Conn)
		settles     bool
		idle        bool
		replaced    bool
		unsolicited bool
	}{
		{"closed by the SUT", func(net.Conn) {}, false, true, true, false},
		{"bytes unasked", func(c net.Conn) { c.Write([]byte("HTTP/1.1 200 OK\r\n\r\n")); quiet(c) }, false, true, true, true},
		{"alive", quiet, false, true, false, false},
		{"busy, not probed", func(net.Conn) {}, false, false, false, false},
		{"settled by its protocol", func(net.Conn) {}, true, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, dst, _, clock := testLine(t, tc.handle, Options{})
			p := Protocols{Cleartext: "x"}
			if tc.settles {
				p.Settles = "x"
			}
			var res result.Result
			cn := connect(t, l, &dst, &p, &res)
			l.Idle(clock.Load())
			time.Sleep(50 * time.Millisecond) // the server's close or bytes arrive
			if tc.idle {
				clock.Add(int64(idleProbe))
			}
			res = result.Result{}
			again := connect(t, l, &dst, &p, &res)
			if (again != cn) != tc.replaced || res.Unsolicited != tc.unsolicited || res.Reconnect != tc.replaced {
				t.Errorf("replaced %v, %+v; want replaced %v, unsolicited %v, a reconnect when replaced", again != cn, res, tc.replaced, tc.unsolicited)
			}
			if tc.settles && !l.Waiting() {
				t.Error("Waiting: false on a connection the SUT closed")
			}
		})
	}
}

// --max-conn-duration replaces a connection once it is that old.
func TestLineMaxConnDuration(t *testing.T) {
	l, dst, _, clock := testLine(t, quiet, Options{MaxConnDuration: time.Second})
	var none Protocols
	var res result.Result
	cn := connect(t, l, &dst, &none, &res)
	clock.Add(int64(999 * time.Millisecond))
	if again := connect(t, l, &dst, &none, &res); again != cn {
		t.Error("replaced before --max-conn-duration")
	}
	clock.Add(int64(time.Millisecond))
	res = result.Result{}
	if again := connect(t, l, &dst, &none, &res); again == cn || !res.Reconnect {
		t.Errorf("at --max-conn-duration: %+v; want a new connection, a reconnect", res)
	}
}

// Arm bounds a read by --timeout; after Interrupt, a read on the
// connection, and on one made after, fails at once, as a cancellation.
func TestLineArmAndInterrupt(t *testing.T) {
	l, dst, _, _ := testLine(t, quiet, Options{Timeout: 50 * time.Millisecond})
	var none Protocols
	var res result.Result
	cn := connect(t, l, &dst, &none, &res)
	l.Arm()
	start := time.Now()
	_, err := cn.NC.Read(make([]byte, 1))
	if k := l.Kind(err); k != result.ErrTimeout || time.Since(start) > 5*time.Second {
		t.Errorf("read of a silent SUT: %v (%v); want a timeout", err, k)
	}
	l.Interrupt()
	if _, err := cn.NC.Read(make([]byte, 1)); l.Kind(err) != result.ErrCancelled || !l.Cut() {
		t.Errorf("read after Interrupt: %v, kind %v; want cancelled", err, l.Kind(err))
	}
	l.Drop(nil)
	cn = connect(t, l, &dst, &none, &res)
	l.Arm()
	if _, err := cn.NC.Read(make([]byte, 1)); l.Kind(err) != result.ErrCancelled {
		t.Errorf("read on a connection made after Interrupt: %v; want it cut at once", err)
	}
}

// Route: where a request goes and the Host it carries, by --target,
// --host-map and --keep-host, a transform's Host, or the recorded host.
func TestRoute(t *testing.T) {
	recordedHost := rrpair.Header{Name: []byte("Host"), Value: []byte("orig.example")}
	for _, tc := range []struct {
		name  string
		o     Options
		req   rrpair.Request
		https bool
		addr  string
		host  string
	}{
		{"target", Options{Target: "https://api.test"}, rrpair.Request{Host: []byte("rec:8080")}, true, "api.test:443", "api.test"},
		{"target with --keep-host", Options{Target: "http://api.test:81", KeepHost: true},
			rrpair.Request{Host: []byte("rec:8080"), Headers: []rrpair.Header{recordedHost}}, false, "api.test:81", "orig.example"},
		{"--keep-host without a recorded Host header", Options{Target: "http://api.test:81", KeepHost: true},
			rrpair.Request{Host: []byte("rec:8080")}, false, "api.test:81", "rec:8080"},
		{"host map", Options{Target: "http://api.test", HostMap: map[string]string{"rec:8080": "https://mapped.test:8443"}},
			rrpair.Request{Host: []byte("rec:8080")}, true, "mapped.test:8443", "mapped.test:8443"},
		{"a transform's Host", Options{Target: "http://api.test"}, rrpair.Request{Host: []byte("rec"), HostHeader: []byte("set.test")}, false, "api.test:80", "set.test"},
		{"the recorded host", Options{}, rrpair.Request{Scheme: []byte("https"), Host: []byte("rec.test"), Headers: []rrpair.Header{recordedHost}}, true, "rec.test:443", "orig.example"},
		{"the recorded host, IPv6", Options{}, rrpair.Request{Scheme: []byte("http"), Host: []byte("[::1]")}, false, "[::1]:80", "[::1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []Route{d.Route(&tc.req), d.NewLine(nil).Route(&tc.req)} {
				if r.HTTPS != tc.https || r.Addr != tc.addr || string(r.Host) != tc.host {
					t.Errorf("got https %v, %s, Host %q; want %v, %s, %q", r.HTTPS, r.Addr, r.Host, tc.https, tc.addr, tc.host)
				}
			}
		})
	}
}
