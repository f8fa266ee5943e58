package http1

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// The helpers shared with the other engine tests (internal/testutil/fixture).
type collect = fixture.Collect

var (
	openLines = fixture.OpenLines
	line      = fixture.Line
)

// runPool runs f with cfg (one VU unless it says) over a transport with o
// (a 5s timeout unless it says), as a run does: validated first.
func runPool(t testing.TB, f *rrpair.File, cfg vu.Config, o Options) (*collect, result.Counters) {
	t.Helper()
	sink := &collect{}
	if cfg.VUs == 0 {
		cfg.VUs = 1
	}
	if o.Conn.Timeout == 0 {
		o.Conn.Timeout = 5 * time.Second
	}
	cfg.Log = zerolog.Nop()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := &vu.Pool{File: f, Config: cfg, Sink: sink, Transport: newTransport(t, o)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := p.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sink, st
}

func TestWireFidelity(t *testing.T) {
	host := "127.0.0.1:PORT"                             // each server's, below
	big := strings.Repeat("0123456789abcdef", 70<<10/16) // 70 kB: written after the head, from the mapping
	binary := []byte{0, 1, 2, 0xff, 0xfe, '\r', '\n', 0}
	tests := []struct {
		name string
		line string
		want string
	}{
		{"awkward path and repeated lower-case headers",
			line("GET", "//double/slash/%2F?q=a%20b&q=&x", `{"accept":["*/*"],"X-Dup":["1","2"],"x-dup":["3"]}`, nil),
			"GET //double/slash/%2F?q=a%20b&q=&x HTTP/1.1\r\nHost: " + host + "\r\naccept: */*\r\nX-Dup: 1\r\nX-Dup: 2\r\nx-dup: 3\r\n\r\n"},
		{"host in place, length replaced, hop-by-hop dropped",
			line("POST", "/events", `{"User-Agent":["app/1"],"host":["orig.example"],"Content-Length":["999"],"Transfer-Encoding":["chunked"],"Connection":["keep-alive"],"Keep-Alive":["timeout=5"],"Content-Type":["application/json"]}`, `{"a":1}`),
			"POST /events HTTP/1.1\r\nUser-Agent: app/1\r\nhost: " + host + "\r\nContent-Length: 7\r\nContent-Type: application/json\r\n\r\n{\"a\":1}"},
		{"binary body, length added last",
			line("PUT", "/blob", `{"Content-Type":["application/octet-stream"]}`, binary),
			"PUT /blob HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/octet-stream\r\nContent-Length: 8\r\n\r\n" + string(binary)},
		{"empty body with recorded length",
			line("POST", "/empty", `{"Content-Length":["12"]}`, ""),
			"POST /empty HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 0\r\n\r\n"},
		{"no headers at all",
			line("DELETE", "/items/7", "", nil),
			"DELETE /items/7 HTTP/1.1\r\nHost: " + host + "\r\n\r\n"},
		{"70 kB body",
			line("PATCH", "/big", `{"content-length":["1"]}`, big),
			"PATCH /big HTTP/1.1\r\nHost: " + host + "\r\ncontent-length: " + itoa(len(big)) + "\r\n\r\n" + big},
		{"HTTP/2 pseudo-headers dropped",
			line("GET", "/h2", `{":authority":["x"],":path":["/h2"],"accept":["a"]}`, nil),
			"GET /h2 HTTP/1.1\r\nHost: " + host + "\r\naccept: a\r\n\r\n"},
		{"split cookie fields joined in one line where the first stands",
			line("GET", "/c", `{"accept":["a"],"cookie":["a=1","b=2"],"x-after":["z"],"Cookie":["c=3"]}`, nil),
			"GET /c HTTP/1.1\r\nHost: " + host + "\r\naccept: a\r\ncookie: a=1; b=2; c=3\r\nx-after: z\r\n\r\n"},
		{"one cookie field as recorded", line("GET", "/c1", `{"Cookie":["a=1; b=2"]}`, nil),
			"GET /c1 HTTP/1.1\r\nHost: " + host + "\r\nCookie: a=1; b=2\r\n\r\n"},
		{"OPTIONS *", line("OPTIONS", "*", "", nil), "OPTIONS * HTTP/1.1\r\nHost: " + host + "\r\n\r\n"},
		{"HEAD", line("HEAD", "/h", "", nil), "HEAD /h HTTP/1.1\r\nHost: " + host + "\r\n\r\n"},
		{"PUT text", line("PUT", "/t", "", "é"), "PUT /t HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 2\r\n\r\né"},
	}
	lines := make([]string, len(tests))
	for i, tt := range tests {
		lines[i] = tt.line
	}
	// Both connection modes: with --no-connection-reuse every request goes
	// out on a new connection, written early by the dialer (whose early
	// write conn's TestDialConn checks), the rest and a large body after it.
	for _, noReuse := range []bool{false, true} {
		srv := loopback.NewRaw(t, nil)
		sink, _ := runPool(t, openLines(t, lines...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL(), NoConnectionReuse: noReuse}})
		srv.Close()
		got := srv.Requests()
		if len(got) != len(tests) {
			t.Fatalf("no reuse %v: server read %d requests, want %d", noReuse, len(got), len(tests))
		}
		results := sink.Results()
		for i, tt := range tests {
			t.Run(fmt.Sprintf("%s/no reuse %v", tt.name, noReuse), func(t *testing.T) {
				want := strings.ReplaceAll(tt.want, host, srv.Addr())
				if noReuse {
					want = strings.Replace(want, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1)
				}
				if string(got[i]) != want {
					t.Errorf("on the wire:\n%q\nwant:\n%q", clip(got[i]), clip([]byte(want)))
				}
				r := results[i]
				if r.Err != result.ErrNone || r.Status != 200 || r.BytesOut != int64(len(want)) || r.Sent == 0 || r.Sent > r.End {
					t.Errorf("result %+v, want a 200 with %d bytes out, sent before it ended", r, len(want))
				}
			})
		}
	}
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func itoa(n int) string { return jsonNum(n) }

func jsonNum(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestKeepHostAndRecordedHost(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	f := openLines(t,
		line("GET", "/a", `{"Host":["orig.example"]}`, nil),
		line("GET", "/b", "", nil),
	)
	runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL(), KeepHost: true}})
	got := srv.Requests()
	want := []string{
		"GET /a HTTP/1.1\r\nHost: orig.example\r\n\r\n",
		"GET /b HTTP/1.1\r\nHost: recorded.example:8080\r\n\r\n",
	}
	for i := range want {
		if i >= len(got) || string(got[i]) != want[i] {
			t.Errorf("request %d: got %q, want %q", i, got, want[i])
		}
	}

	// Without --target, the recorded host is dialed and sent.
	addr := srv.Addr()
	f = openLines(t, `{"l7protocol":"http","http":{"req":{"method":"GET","uri":"/c","host":"`+addr+`"}}}`)
	sink, _ := runPool(t, f, vu.Config{}, Options{})
	got = srv.Requests()
	if last := string(got[len(got)-1]); last != "GET /c HTTP/1.1\r\nHost: "+addr+"\r\n\r\n" {
		t.Errorf("got %q", last)
	}
	if r := sink.Results()[0]; r.Status != 200 {
		t.Errorf("got %+v", r)
	}
}

// newTransport is a transport with o.
func newTransport(t testing.TB, o Options) *Transport {
	t.Helper()
	tr, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func manyLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = line("GET", "/p/"+jsonNum(i), "", nil)
	}
	return lines
}

func TestNoConnectionReuse(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	sink, _ := runPool(t, openLines(t, manyLines(20)...), vu.Config{Load: schedule.Load{VUs: 2}}, Options{Conn: conn.Options{NoConnectionReuse: true, Target: srv.URL()}})
	srv.Close()
	if got := srv.Conns(); got != 20 {
		t.Errorf("server saw %d connections, want one per request (20)", got)
	}
	for _, req := range srv.Requests() {
		if !strings.HasSuffix(string(req), "Connection: close\r\n\r\n") {
			t.Errorf("request without Connection: close: %q", req)
		}
	}
	if n := sink.Count(func(r result.Result) bool { return r.Reconnect }); n != 0 {
		t.Errorf("got %d reconnects with --no-connection-reuse, want 0", n)
	}
}

func TestServerClosingConnectionsCountsReconnects(t *testing.T) {
	srv := loopback.NewRaw(t, func(n int64, _ []byte) loopback.Action {
		return loopback.Action{Status: 200, Body: "ok", Close: n%3 == 0}
	})
	sink, _ := runPool(t, openLines(t, manyLines(12)...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL()}})
	srv.Close()
	if got := srv.Conns(); got != 4 {
		t.Errorf("server saw %d connections, want 4", got)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Reconnect }); n != 3 {
		t.Errorf("got %d reconnects, want 3", n)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Status == 200 }); n != 12 {
		t.Errorf("got %d answers, want 12", n)
	}
}

func TestAccounting(t *testing.T) {
	srv := loopback.NewRaw(t, func(n int64, _ []byte) loopback.Action {
		switch n % 6 {
		case 1:
			return loopback.Action{Status: 500, Body: "boom"}
		case 2:
			return loopback.Action{Stall: 400 * time.Millisecond, Status: 200}
		case 3:
			return loopback.Action{Reset: true}
		case 4:
			return loopback.Action{Hangup: true}
		case 5:
			return loopback.Action{Status: 404}
		}
		return loopback.Action{Status: 202}
	})
	sink, _ := runPool(t, openLines(t, manyLines(18)...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL(), Timeout: 150 * time.Millisecond}})
	srv.Close()
	res := sink.Results()
	if len(res) != 18 {
		t.Fatalf("got %d results, want 18", len(res))
	}
	kinds := map[result.ErrorKind]int{}
	status := map[uint16]int{}
	for _, r := range res {
		kinds[r.Err]++
		if r.Err == result.ErrNone {
			status[r.Status]++
		}
		if !r.Written {
			t.Errorf("result %+v: not written", r)
		}
	}
	want := map[result.ErrorKind]int{result.ErrNone: 9, result.ErrTimeout: 3, result.ErrReset: 3, result.ErrEOF: 3}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%v: got %d, want %d (all: %v)", k, kinds[k], n, kinds)
		}
	}
	if status[500] != 3 || status[404] != 3 || status[202] != 3 {
		t.Errorf("status: got %v", status)
	}
	if got := srv.Count(); got != int64(len(res)-kinds[result.ErrConnect]) {
		t.Errorf("server read %d requests, want requests − connect errors = %d", got, len(res)-kinds[result.ErrConnect])
	}
}

func TestServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	sink, _ := runPool(t, openLines(t, manyLines(5)...), vu.Config{Load: schedule.Load{VUs: 2}}, Options{Conn: conn.Options{Target: url}})
	if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrConnect && !r.Written }); n != 5 {
		t.Errorf("got %d connect errors, want 5: %+v", n, sink.Results())
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	f := openLines(t, manyLines(3)...)
	sink, _ := runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL, Insecure: true}})
	if n := sink.Count(func(r result.Result) bool { return r.Status == 202 }); n != 3 {
		t.Errorf("with --insecure: got %+v, want 3 answers", sink.Results())
	}
	sink, _ = runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL}})
	if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrTLS }); n != 3 {
		t.Errorf("self-signed certificate without --insecure: got %+v, want 3 tls errors", sink.Results())
	}
}
