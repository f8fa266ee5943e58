package vu

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/rs/zerolog"
)

// collect is a Sink that keeps every result.
type collect struct {
	mu  sync.Mutex // guards res
	res []result.Result
}

func (c *collect) Record(r result.Result) {
	c.mu.Lock()
	c.res = append(c.res, r)
	c.mu.Unlock()
}

func (c *collect) results() []result.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]result.Result(nil), c.res...)
}

func (c *collect) count(f func(result.Result) bool) int {
	n := 0
	for _, r := range c.results() {
		if f(r) {
			n++
		}
	}
	return n
}

func openLines(t testing.TB, lines ...string) *rrpair.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := rrpair.Open(path, rrpair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// line builds an RRPair line; headers is a raw JSON object so that its key
// order is exactly as written.
func line(method, uri, headers string, body any) string {
	req := map[string]any{"method": method, "uri": uri, "host": "recorded.example:8080"}
	switch b := body.(type) {
	case string:
		req["body"] = b
	case []byte:
		req["bodyBase64"] = base64.StdEncoding.EncodeToString(b)
	}
	raw, _ := json.Marshal(map[string]any{"http": map[string]any{"req": req}})
	if headers == "" {
		return string(raw)
	}
	return strings.Replace(string(raw), `"host":`, `"headers":`+headers+`,"host":`, 1)
}

func runPool(t testing.TB, f *rrpair.File, cfg Config) (*collect, result.Counters) {
	t.Helper()
	sink := &collect{}
	if cfg.VUs == 0 {
		cfg.VUs = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	cfg.Log = zerolog.Nop()
	p := &Pool{File: f, Config: cfg, Sink: sink}
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
	// write TestDialConn checks), the rest and a large body after it.
	for _, noReuse := range []bool{false, true} {
		srv := newRawServer(t, nil)
		sink, _ := runPool(t, openLines(t, lines...), Config{Target: srv.url(), NoConnectionReuse: noReuse})
		srv.close()
		got := srv.requests()
		if len(got) != len(tests) {
			t.Fatalf("no reuse %v: server read %d requests, want %d", noReuse, len(got), len(tests))
		}
		results := sink.results()
		for i, tt := range tests {
			t.Run(fmt.Sprintf("%s/no reuse %v", tt.name, noReuse), func(t *testing.T) {
				want := strings.ReplaceAll(tt.want, host, srv.ln.Addr().String())
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
	srv := newRawServer(t, nil)
	f := openLines(t,
		line("GET", "/a", `{"Host":["orig.example"]}`, nil),
		line("GET", "/b", "", nil),
	)
	runPool(t, f, Config{Target: srv.url(), KeepHost: true})
	got := srv.requests()
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
	addr := srv.ln.Addr().String()
	f = openLines(t, `{"l7protocol":"http","http":{"req":{"method":"GET","uri":"/c","host":"`+addr+`"}}}`)
	sink, _ := runPool(t, f, Config{})
	got = srv.requests()
	if last := string(got[len(got)-1]); last != "GET /c HTTP/1.1\r\nHost: "+addr+"\r\n\r\n" {
		t.Errorf("got %q", last)
	}
	if r := sink.results()[0]; r.Status != 200 {
		t.Errorf("got %+v", r)
	}
}

func manyLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = line("GET", "/p/"+jsonNum(i), "", nil)
	}
	return lines
}

func TestOneConnectionPerVU(t *testing.T) {
	srv := newRawServer(t, func(n int64, _ []byte) action { return action{status: 200, body: "ok", stall: time.Millisecond} })
	const vus = 5
	sink, st := runPool(t, openLines(t, manyLines(10)...), Config{VUs: vus, Walk: Loop, Iterations: 300, Target: srv.url()})
	if st.Iterations != 300 || len(sink.results()) != 300 {
		t.Fatalf("got %d iterations, %d results; want 300", st.Iterations, len(sink.results()))
	}
	srv.close()
	if got := srv.conns.Load(); got != vus {
		t.Errorf("server saw %d connections, want %d", got, vus)
	}
	if n := sink.count(func(r result.Result) bool { return r.Connected }); n != vus {
		t.Errorf("results opened %d connections, want %d", n, vus)
	}
	if n := sink.count(func(r result.Result) bool { return r.Reconnect }); n != 0 {
		t.Errorf("got %d reconnects, want 0", n)
	}
}

func TestNoConnectionReuse(t *testing.T) {
	srv := newRawServer(t, nil)
	sink, _ := runPool(t, openLines(t, manyLines(20)...), Config{VUs: 2, NoConnectionReuse: true, Target: srv.url()})
	srv.close()
	if got := srv.conns.Load(); got != 20 {
		t.Errorf("server saw %d connections, want one per request (20)", got)
	}
	for _, req := range srv.requests() {
		if !strings.HasSuffix(string(req), "Connection: close\r\n\r\n") {
			t.Errorf("request without Connection: close: %q", req)
		}
	}
	if n := sink.count(func(r result.Result) bool { return r.Reconnect }); n != 0 {
		t.Errorf("got %d reconnects with --no-connection-reuse, want 0", n)
	}
}

func TestServerClosingConnectionsCountsReconnects(t *testing.T) {
	srv := newRawServer(t, func(n int64, _ []byte) action {
		return action{status: 200, body: "ok", close: n%3 == 0}
	})
	sink, _ := runPool(t, openLines(t, manyLines(12)...), Config{Target: srv.url()})
	srv.close()
	if got := srv.conns.Load(); got != 4 {
		t.Errorf("server saw %d connections, want 4", got)
	}
	if n := sink.count(func(r result.Result) bool { return r.Reconnect }); n != 3 {
		t.Errorf("got %d reconnects, want 3", n)
	}
	if n := sink.count(func(r result.Result) bool { return r.Status == 200 }); n != 12 {
		t.Errorf("got %d answers, want 12", n)
	}
}

func TestAccounting(t *testing.T) {
	srv := newRawServer(t, func(n int64, _ []byte) action {
		switch n % 6 {
		case 1:
			return action{status: 500, body: "boom"}
		case 2:
			return action{stall: 400 * time.Millisecond, status: 200}
		case 3:
			return action{reset: true}
		case 4:
			return action{hangup: true}
		case 5:
			return action{status: 404}
		}
		return action{status: 202}
	})
	sink, _ := runPool(t, openLines(t, manyLines(18)...), Config{Target: srv.url(), Timeout: 150 * time.Millisecond})
	srv.close()
	res := sink.results()
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
	if got := srv.count.Load(); got != int64(len(res)-kinds[result.ErrConnect]) {
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
	sink, _ := runPool(t, openLines(t, manyLines(5)...), Config{Target: url, VUs: 2})
	if n := sink.count(func(r result.Result) bool { return r.Err == result.ErrConnect && !r.Written }); n != 5 {
		t.Errorf("got %d connect errors, want 5: %+v", n, sink.results())
	}
}

func TestOnceRunsEveryIterationOnce(t *testing.T) {
	srv := newRawServer(t, nil)
	lines := manyLines(40)
	lines[3] = `{"tags":{"session":"s"},` + lines[3][1:]
	lines[30] = `{"tags":{"session":"s"},` + lines[30][1:]
	sink, st := runPool(t, openLines(t, lines...), Config{VUs: 4, Target: srv.url()})
	if st.Iterations != 39 {
		t.Errorf("got %d iterations, want 39", st.Iterations)
	}
	seen := map[string]int{}
	for _, req := range srv.requests() {
		seen[strings.Fields(string(req))[1]]++
	}
	if len(seen) != 40 || len(sink.results()) != 40 {
		t.Errorf("got %d distinct requests, %d results; want 40", len(seen), len(sink.results()))
	}
	for uri, n := range seen {
		if n != 1 {
			t.Errorf("%s sent %d times", uri, n)
		}
	}
}

func TestLoopDurationStops(t *testing.T) {
	srv := newRawServer(t, nil)
	start := time.Now()
	sink, st := runPool(t, openLines(t, manyLines(3)...), Config{VUs: 2, Walk: Loop, Duration: 300 * time.Millisecond, Target: srv.url()})
	took := time.Since(start)
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("run took %v, want about 300ms", took)
	}
	if n := len(sink.results()); n < 3 {
		t.Errorf("got %d results, want the file walked at least once", n)
	}
	if issued := st.Stopped.Sub(st.Started); issued < 300*time.Millisecond {
		t.Errorf("issuing stopped after %v, want ≥ 300ms", issued)
	}
}

func TestStopLetsInFlightFinishThenCancels(t *testing.T) {
	srv := newRawServer(t, func(n int64, _ []byte) action {
		if n == 1 {
			return action{status: 200, stall: 100 * time.Millisecond} // finishes within the grace
		}
		return action{status: 200, stall: 10 * time.Second} // does not
	})
	f := openLines(t, manyLines(4)...)
	sink := &collect{}
	p := &Pool{File: f, Sink: sink, Config: Config{VUs: 2, Walk: Loop, Target: srv.url(), Grace: 300 * time.Millisecond, Timeout: 20 * time.Second, Log: zerolog.Nop()}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	st, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %v, want about the grace", took)
	}
	if !st.Interrupted {
		t.Error("Interrupted is false")
	}
	res := sink.results()
	if len(res) != 2 {
		t.Fatalf("got %d results, want the 2 in flight: %+v", len(res), res)
	}
	if n := sink.count(func(r result.Result) bool { return r.Err == result.ErrCancelled }); n != 1 {
		t.Errorf("got %d cancelled, want 1: %+v", n, res)
	}
	if n := sink.count(func(r result.Result) bool { return r.Status == 200 }); n != 1 {
		t.Errorf("got %d answered, want 1: %+v", n, res)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no vus", Config{}, "--vus"},
		{"bad target scheme", Config{VUs: 1, Target: "ftp://x"}, "--target: want an http or https URL"},
		{"target with path", Config{VUs: 1, Target: "http://x/api"}, "--target: want only scheme://host[:port]"},
		{"target not a URL", Config{VUs: 1, Target: "127.0.0.1:8080"}, "--target"},
		{"keep-host without target", Config{VUs: 1, KeepHost: true}, "--keep-host"},
		{"max-vus with closed", Config{VUs: 1, MaxVUs: 5}, "--max-vus"},
		{"rate without a rate", Config{VUs: 1, Model: Rate}, "--rate"},
		{"think with rate", Config{VUs: 1, Model: Rate, Rate: 5, Think: true}, "--think"},
		{"max below vus", Config{VUs: 5, MaxVUs: 2, Model: Rate, Rate: 5}, "--max-vus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	f := openLines(t, manyLines(3)...)
	sink, _ := runPool(t, f, Config{Target: srv.URL, Insecure: true})
	if n := sink.count(func(r result.Result) bool { return r.Status == 202 }); n != 3 {
		t.Errorf("with --insecure: got %+v, want 3 answers", sink.results())
	}
	sink, _ = runPool(t, f, Config{Target: srv.URL})
	if n := sink.count(func(r result.Result) bool { return r.Err == result.ErrTLS }); n != 3 {
		t.Errorf("self-signed certificate without --insecure: got %+v, want 3 tls errors", sink.results())
	}
}
