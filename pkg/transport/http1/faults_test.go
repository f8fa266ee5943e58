package http1

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/vu"
)

func connected(r result.Result) bool { return r.Connected }

// Connections are those established: a refused dial or a failed TLS
// handshake is none; a connection the SUT accepted and then reset or
// closed is one, and its request failed as reset or eof, not connect.
func TestConnectionsEstablished(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String()
		ln.Close()
		sink, _ := runPool(t, openLines(t, manyLines(4)...), vu.Config{}, Options{Conn: conn.Options{Target: url}})
		if n := sink.Count(connected); n != 0 {
			t.Errorf("got %d connections to a closed port, want 0", n)
		}
		if n := sink.Count(func(r result.Result) bool { return r.Reconnect }); n != 0 {
			t.Errorf("got %d reconnects to a closed port, want 0", n)
		}
	})
	for _, timings := range []bool{false, true} { // with and without the early write
		for _, reset := range []bool{true, false} {
			name := map[bool]string{true: "reset after accept", false: "closed after accept"}[reset]
			if timings {
				name += " with timings"
			}
			t.Run(name, func(t *testing.T) {
				srv := loopback.NewRaw(t, nil)
				srv.OnAccept(func(int64) loopback.Action { return loopback.Action{Reset: reset, Hangup: !reset} })
				sink, _ := runPool(t, openLines(t, manyLines(10)...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL(), Timings: timings}})
				for _, r := range sink.Results() {
					if r.Err != result.ErrReset && r.Err != result.ErrEOF {
						t.Errorf("got error kind %q, want reset or eof", r.Err)
					}
					if !r.Connected {
						t.Errorf("a connection the SUT accepted is not counted: %+v", r)
					}
				}
			})
		}
	}
	t.Run("tls handshake reset", func(t *testing.T) {
		srv := loopback.NewRaw(t, nil)
		srv.OnAccept(func(int64) loopback.Action { return loopback.Action{Reset: true} })
		sink, _ := runPool(t, openLines(t, manyLines(3)...), vu.Config{}, Options{Conn: conn.Options{Target: "https://" + srv.Addr(), Insecure: true}})
		for _, r := range sink.Results() {
			if r.Connected || r.Err == result.ErrConnect || r.Err == result.ErrNone {
				t.Errorf("TLS handshake cut by an RST: got %+v, want a failure, not connect, no connection", r)
			}
		}
	})
	t.Run("tls handshake failed", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		defer srv.Close()
		sink, _ := runPool(t, openLines(t, manyLines(3)...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL}})
		if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrTLS && !r.Connected }); n != 3 {
			t.Errorf("untrusted certificate: got %+v, want 3 tls errors, no connection", sink.Results())
		}
		sink, _ = runPool(t, openLines(t, manyLines(3)...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL, Insecure: true}})
		if n := sink.Count(connected); n != 1 {
			t.Errorf("got %d connections, want 1", n)
		}
	})
}

// A status line outside 100–599 is an error of kind other, without a
// status, and its connection is closed.
func TestStatusOutOfRange(t *testing.T) {
	for _, code := range []string{"000", "001", "099", "600", "999"} {
		t.Run(code, func(t *testing.T) {
			srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action {
				return loopback.Action{Raw: "HTTP/1.1 " + code + " X\r\nContent-Length: 2\r\n\r\nok"}
			})
			sink, _ := runPool(t, openLines(t, manyLines(3)...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL()}})
			srv.Close()
			for _, r := range sink.Results() {
				if r.Err != result.ErrOther || r.Status != 0 {
					t.Errorf("got kind %q status %d, want other and no status", r.Err, r.Status)
				}
			}
			if got := srv.Conns(); got != 3 {
				t.Errorf("server saw %d connections, want 3 (closed after each)", got)
			}
		})
	}
}

// An answer that has no body by definition keeps its connection without
// a Content-Length.
func TestBodylessAnswersKeepConnection(t *testing.T) {
	tests := []struct {
		name, method, answer string
	}{
		{"204", "GET", "HTTP/1.1 204 No Content\r\n\r\n"},
		{"304", "GET", "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"},
		{"HEAD", "HEAD", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"},
		{"100 then 204", "GET", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"},
	}
	for _, tt := range tests {
		for _, discard := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{true: " discarding", false: ""}[discard], func(t *testing.T) {
				srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action { return loopback.Action{Raw: tt.answer} })
				lines := make([]string, 5)
				for i := range lines {
					lines[i] = line(tt.method, "/p", "", nil)
				}
				sink, _ := runPool(t, openLines(t, lines...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL()}, Answer: transport.AnswerOptions{DiscardBodies: discard}})
				srv.Close()
				if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrNone && r.Status != 0 }); n != 5 {
					t.Errorf("got %+v, want 5 answers", sink.Results())
				}
				if got := srv.Conns(); got != 1 {
					t.Errorf("server saw %d connections, want 1", got)
				}
				if n := sink.Count(func(r result.Result) bool { return r.Reconnect }); n != 0 {
					t.Errorf("got %d reconnects, want 0", n)
				}
			})
		}
	}
}

// A keep-alive connection the SUT closed while it sat idle is reopened
// before the request is written (a reconnect), not failed.
func TestIdleConnectionClosedBySUT(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(map[bool]string{false: "FIN", true: "RST"}[reset], func(t *testing.T) {
			srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action {
				return loopback.Action{Status: 200, Body: "ok", IdleClose: 20 * time.Millisecond, IdleReset: reset}
			})
			// 5 requests 200 ms apart: each finds its connection closed.
			cfg := vu.Config{Load: schedule.Load{Model: schedule.Rate, Rate: 5, VUs: 1, MaxVUs: 1}}
			sink, _ := runPool(t, openLines(t, manyLines(5)...), cfg, Options{Conn: conn.Options{Target: srv.URL()}})
			srv.Close()
			if n := sink.Count(func(r result.Result) bool { return r.Status == 200 }); n != 5 {
				t.Errorf("got %+v, want 5 answers", sink.Results())
			}
			if n := sink.Count(func(r result.Result) bool { return r.Reconnect }); n != 4 {
				t.Errorf("got %d reconnects, want 4", n)
			}
			if got := srv.Conns(); got != 5 {
				t.Errorf("server saw %d connections, want 5", got)
			}
		})
	}
	t.Run("TLS", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		srv.Config.IdleTimeout = 20 * time.Millisecond
		srv.TLS = &tls.Config{}
		srv.StartTLS()
		defer srv.Close()
		cfg := vu.Config{Load: schedule.Load{Model: schedule.Rate, Rate: 5, VUs: 1, MaxVUs: 1}}
		sink, _ := runPool(t, openLines(t, manyLines(4)...), cfg, Options{Conn: conn.Options{Target: srv.URL, Insecure: true}})
		if n := sink.Count(func(r result.Result) bool { return r.Status == 200 }); n != 4 {
			t.Errorf("got %+v, want 4 answers", sink.Results())
		}
		if n := sink.Count(func(r result.Result) bool { return r.Reconnect }); n != 3 {
			t.Errorf("got %d reconnects, want 3", n)
		}
	})
	t.Run("busy connection kept", func(t *testing.T) {
		srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action {
			return loopback.Action{Status: 200, Body: "ok", IdleClose: 2 * time.Second}
		})
		cfg := vu.Config{Load: schedule.Load{Model: schedule.Rate, Rate: 100, VUs: 1, MaxVUs: 1}}
		sink, _ := runPool(t, openLines(t, manyLines(10)...), cfg, Options{Conn: conn.Options{Target: srv.URL()}})
		srv.Close()
		if got := srv.Conns(); got != 1 || sink.Count(func(r result.Result) bool { return r.Status == 200 }) != 10 {
			t.Errorf("server saw %d connections, want 1; results %+v", got, sink.Results())
		}
	})
}

// An answer whose head ends in bare LFs fails at once (fasthttp would
// wait for a CRLF CRLF until --timeout), as other, and closes its
// connection; bare LFs inside a head that ends in CRLF CRLF parse.
func TestBareLF(t *testing.T) {
	tests := []struct {
		name, answer string
		status       uint16 // 0: fails as other
	}{
		{"bare LF head", "HTTP/1.1 201 Created\nContent-Length: 2\n\nok", 0},
		{"bare LF blank line", "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\nok", 0},
		{"bare LF lines, CRLF end", "HTTP/1.1 201 Created\nContent-Length: 2\r\n\r\nok", 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action { return loopback.Action{Raw: tt.answer} })
			start := time.Now()
			sink, _ := runPool(t, openLines(t, manyLines(3)...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL(), Timeout: 3 * time.Second}})
			if el := time.Since(start); el > time.Second {
				t.Errorf("took %v, want far under the 3s timeout", el)
			}
			for _, r := range sink.Results() {
				if tt.status == 0 && (r.Err != result.ErrOther || r.Status != 0) || tt.status != 0 && r.Status != tt.status {
					t.Errorf("got kind %q status %d, want status %d (0: other)", r.Err, r.Status, tt.status)
				}
			}
		})
	}
}

// Bytes the SUT sends beyond a complete answer are counted and close the
// connection; they are never read as a later request's answer.
func TestUnsolicitedAnswers(t *testing.T) {
	const two = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 500 X\r\nContent-Length: 0\r\n\r\n"
	t.Run("two answers at once", func(t *testing.T) {
		srv := loopback.NewRaw(t, func(n int64, _ []byte) loopback.Action {
			if n == 2 {
				return loopback.Action{Raw: two}
			}
			return loopback.Action{Status: 201}
		})
		sink, _ := runPool(t, openLines(t, manyLines(6)...), vu.Config{}, Options{Conn: conn.Options{Target: srv.URL()}})
		srv.Close()
		checkUnsolicited(t, sink, srv, 1)
	})
	t.Run("second answer later", func(t *testing.T) {
		srv := loopback.NewRaw(t, func(n int64, _ []byte) loopback.Action {
			if n == 2 {
				return loopback.Action{Raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", Extra: "HTTP/1.1 500 X\r\nContent-Length: 0\r\n\r\n", ExtraAfter: 10 * time.Millisecond}
			}
			return loopback.Action{Status: 201}
		})
		cfg := vu.Config{Load: schedule.Load{Model: schedule.Rate, Rate: 5, VUs: 1, MaxVUs: 1}} // 200 ms apart: the extra answer comes between
		sink, _ := runPool(t, openLines(t, manyLines(6)...), cfg, Options{Conn: conn.Options{Target: srv.URL()}})
		srv.Close()
		checkUnsolicited(t, sink, srv, 1)
	})
}

func checkUnsolicited(t *testing.T, sink *collect, srv *loopback.Raw, want int) {
	t.Helper()
	res := sink.Results()
	status := make([]uint16, len(res))
	for i, r := range res {
		status[i] = r.Status
	}
	if want := []uint16{201, 200, 201, 201, 201, 201}; !slices.Equal(status, want) {
		t.Errorf("statuses %v, want %v: no answer shifted onto a later request", status, want)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Unsolicited }); n != want {
		t.Errorf("got %d unsolicited, want %d", n, want)
	}
	if got := srv.Conns(); got != 2 {
		t.Errorf("server saw %d connections, want 2", got)
	}
}

// Redirects follow only http(s) locations; a protocol-relative one keeps
// the current scheme and goes to its host; a chain cut by
// --follow-redirects is marked on its last answer.
func TestRedirectLocations(t *testing.T) {
	var srv *loopback.Raw
	srv = loopback.NewRaw(t, func(_ int64, req []byte) loopback.Action {
		switch target := strings.Fields(string(req))[1]; target {
		case "/ftp":
			return loopback.Action{Status: 302, Header: "Location: ftp://127.0.0.1/file\r\n"}
		case "/js":
			return loopback.Action{Status: 302, Header: "Location: javascript:alert(1)\r\n"}
		case "/mail":
			return loopback.Action{Status: 301, Header: "Location: mailto:ops@example.com\r\n"}
		case "/proto-relative":
			return loopback.Action{Status: 302, Header: "Location: //" + srv.Addr() + "/landed?x=1\r\n"}
		case "/relative/a":
			return loopback.Action{Status: 307, Header: "Location: b\r\n"}
		case "/loop":
			return loopback.Action{Status: 302, Header: "Location: /loop\r\n"}
		}
		return loopback.Action{Status: 200, Body: "ok"}
	})
	f := openLines(t,
		line("GET", "/ftp", "", nil),
		line("GET", "/js", "", nil),
		line("GET", "/mail", "", nil),
		line("GET", "/proto-relative", "", nil),
		line("GET", "/relative/a", "", nil),
		line("GET", "/loop", "", nil),
	)
	sink, _ := runPool(t, f, vu.Config{FollowRedirects: 2}, Options{Conn: conn.Options{Target: srv.URL()}})
	var lines []string
	for _, req := range srv.Requests() {
		lines = append(lines, strings.SplitN(string(req), "\r\n", 2)[0])
	}
	want := []string{
		"GET /ftp HTTP/1.1", "GET /js HTTP/1.1", "GET /mail HTTP/1.1",
		"GET /proto-relative HTTP/1.1", "GET /landed?x=1 HTTP/1.1",
		"GET /relative/a HTTP/1.1", "GET /relative/b HTTP/1.1",
		"GET /loop HTTP/1.1", "GET /loop HTTP/1.1", "GET /loop HTTP/1.1",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("got %q, want %q", lines, want)
	}
	res := sink.Results()
	var limit []int
	for i, r := range res {
		if r.RedirectLimit {
			limit = append(limit, i)
		}
	}
	if len(res) != len(want) || !slices.Equal(limit, []int{len(want) - 1}) {
		t.Errorf("redirect limit marked on results %v of %d, want only the last of %d", limit, len(res), len(want))
	}
	// A chain that ends within the limit is not marked.
	sink, _ = runPool(t, openLines(t, line("GET", "/proto-relative", "", nil)), vu.Config{FollowRedirects: 1}, Options{Conn: conn.Options{Target: srv.URL()}})
	if n := sink.Count(func(r result.Result) bool { return r.RedirectLimit }); n != 0 {
		t.Errorf("got %d marked, want 0", n)
	}
}

// The idle probe costs no allocation: every request here finds its
// connection idle (the client's clock moves 2 ms a reading).
func TestIdleProbeAllocatesNothing(t *testing.T) {
	srv, err := loopback.NewCanned(loopback.Accepted202)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f := openLines(t, line("GET", "/p", "", nil))
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() int64 { return clock.Add(int64(2 * time.Millisecond)) }
	c := newTransport(t, Options{Conn: conn.Options{Target: srv.URL(), Timeout: 5 * time.Second}}).NewClient(0, now)
	defer c.Close()
	if n := allocsPerRequest(t, c, f, func(res *result.Result) bool { return res.Status == 202 && !res.Connected }); n != 0 {
		t.Errorf("got %v allocations a request, want 0", n)
	}
}

// allocsPerRequest is the allocations c makes a request sending the first
// pair of f again and again, after a first request that opens the
// connection and grows the buffers; ok checks each result.
func allocsPerRequest(t *testing.T, c transport.Client, f *rrpair.File, ok func(*result.Result) bool) float64 {
	t.Helper()
	cur := f.NewCursor()
	var pair rrpair.Pair
	var res result.Result
	send := func() result.Answer {
		cur.Start(0)
		if more, err := cur.Next(&pair); !more || err != nil {
			t.Fatalf("Next: %v, %v", more, err)
		}
		res = result.Result{}
		return c.Do(&pair.Req, &pair, &res)
	}
	send() // the first opens the connection
	return testing.AllocsPerRun(100, func() {
		if send() == nil || !ok(&res) {
			t.Fatalf("got %+v", res)
		}
	})
}
