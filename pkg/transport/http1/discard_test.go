package http1

import (
	"bufio"
	"net"
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

// framingServer answers each request by its path with canned bytes, in
// every framing HTTP/1.1 has, and closes the connection after "/close".
func framingServer(t *testing.T, answers map[string]string) (url string, conns *atomic.Int64) {
	t.Helper()
	addr, conns := loopback.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			for h := ""; h != "\r\n"; { // GETs and HEADs: no body
				if h, err = br.ReadString('\n'); err != nil {
					return
				}
			}
			method, rest, _ := strings.Cut(line, " ")
			path, _, _ := strings.Cut(rest, " ")
			answer := answers[path]
			if method == "HEAD" {
				answer, _, _ = strings.Cut(answer, "\r\n\r\n")
				answer += "\r\n\r\n"
			}
			if _, err := c.Write([]byte(answer)); err != nil || path == "/close" {
				return
			}
		}
	})
	return "http://" + addr, conns
}

// seen is an Observer that keeps what each answer showed.
type seen struct {
	status        []int
	body, rawBody [][]byte
	headers       []string
}

func (s *seen) Observe(_ int, _ *rrpair.Pair, a result.Answer) {
	s.status = append(s.status, a.Status())
	s.body = append(s.body, slices.Clone(a.Body()))
	s.rawBody = append(s.rawBody, slices.Clone(a.RawBody()))
	var hs []string
	for _, h := range a.Headers() {
		hs = append(hs, string(h.Name)+": "+string(h.Value))
	}
	s.headers = append(s.headers, strings.Join(hs, "|"))
}

// TestDiscardBodies: with DiscardBodies every framing is read to its end
// (the connection is reused as when bodies are kept, BytesIn is the same),
// the answer shows the same status and headers but no body, and MaxBody
// does not apply to what is not kept.
func TestDiscardBodies(t *testing.T) {
	big := strings.Repeat("b", 100<<10) // past the read buffer and MaxBody
	answers := map[string]string{
		"/length":  "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
		"/chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nabcd\r\n6 \r\nefghij\r\n0\r\nX-Trailer: t\r\n\r\n",
		"/empty":   "HTTP/1.1 204 No Content\r\n\r\n",
		"/interim": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/big":     "HTTP/1.1 200 OK\r\nContent-Length: " + itoa(len(big)) + "\r\n\r\n" + big,
		"/close":   "HTTP/1.1 200 OK\r\n\r\nuntil the end",
	}
	wantBody := []string{"0123456789", "", "abcdefghij", "", "ok", "", "until the end", "0123456789"}
	var lines []string
	for _, p := range []string{"/length", "HEAD /length", "/chunked", "/empty", "/interim", "/big", "/close", "/length"} {
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			method, path = "GET", p
		}
		lines = append(lines, line(method, path, "", nil))
	}
	f := openLines(t, lines...)
	run := func(discard bool) (*collect, *seen, int64) {
		url, conns := framingServer(t, answers)
		obs := &seen{}
		sink := &collect{}
		p := &vu.Pool{File: f, Sink: sink, Observers: []result.Observer{obs}, Config: vu.Config{Load: schedule.Load{VUs: 1}},
			Transport: newTransport(t, Options{Conn: conn.Options{Target: url}, Answer: transport.AnswerOptions{MaxBody: 1000, DiscardBodies: discard}})}
		if _, err := p.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		return sink, obs, conns.Load()
	}
	keptRes, kept, keptConns := run(false)
	dropRes, dropped, dropConns := run(true)

	kr, dr := keptRes.Results(), dropRes.Results()
	if len(kr) != len(lines) || len(dr) != len(lines) {
		t.Fatalf("got %d and %d results, want %d", len(kr), len(dr), len(lines))
	}
	if kr[5].Err != result.ErrOther || dr[5].Err != result.ErrNone || dr[5].Status != 200 || dr[5].BytesIn <= int64(len(big)) {
		t.Errorf("a body past MaxBody: kept %+v (want other), discarded %+v (want a 200 read whole)", kr[5], dr[5])
	}
	// Kept, the failure past MaxBody closes the connection: one more.
	// Otherwise each mode reuses a connection where the other does (the
	// 204 without a length keeps it; "/close" ends it).
	if keptConns != 3 || dropConns != 2 {
		t.Errorf("connections: %d kept, %d discarded; want 3 and 2", keptConns, dropConns)
	}
	for i := range lines {
		if i == 5 {
			continue
		}
		if kr[i].Err != result.ErrNone || dr[i].Err != kr[i].Err || dr[i].Status != kr[i].Status || dr[i].BytesIn != kr[i].BytesIn ||
			(i != 6 && dr[i].Connected != kr[i].Connected) {
			t.Errorf("request %d (%s): discarded %+v, kept %+v; want the same status, bytes in and connection", i, lines[i], dr[i], kr[i])
		}
	}
	if len(kept.status) != len(lines)-1 || len(dropped.status) != len(lines) {
		t.Fatalf("observed %d and %d answers, want %d and %d", len(kept.status), len(dropped.status), len(lines)-1, len(lines))
	}
	compareAnswers(t, kept, dropped, wantBody)
}

// compareAnswers checks what the observers saw: each answer's body kept as
// wanted, or nil when discarded, with the same status and headers either
// way. Kept, the answer past MaxBody (the 6th) is missing.
func compareAnswers(t *testing.T, kept, dropped *seen, wantBody []string) {
	t.Helper()
	for i, want := range wantBody {
		if dropped.body[i] != nil || dropped.rawBody[i] != nil {
			t.Errorf("answer %d discarded: body %q, raw %q; want nil", i, dropped.body[i], dropped.rawBody[i])
		}
		if i == 5 {
			continue
		}
		k := i
		if i > 5 {
			k-- // kept: no answer to /big
		}
		if string(kept.body[k]) != want || string(kept.rawBody[k]) != want {
			t.Errorf("answer %d kept: body %q, raw %q; want %q", i, kept.body[k], kept.rawBody[k], want)
		}
		if dropped.status[i] != kept.status[k] || dropped.headers[i] != kept.headers[k] {
			t.Errorf("answer %d: discarded %d %q, kept %d %q; want the same", i, dropped.status[i], dropped.headers[i], kept.status[k], kept.headers[k])
		}
	}
	if !strings.Contains(dropped.headers[2], "X-Trailer: t") {
		t.Errorf("chunked answer's headers %q: want its trailer", dropped.headers[2])
	}
}

// TestDiscardBrokenFraming: a discarded body cut short or a chunked body
// that is not one fail as the kept ones do.
func TestDiscardBrokenFraming(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         result.ErrorKind
	}{
		{"short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234", result.ErrEOF},
		{"chunk cut", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nab", result.ErrEOF},
		{"bad size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", result.ErrOther},
		{"no CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n", result.ErrOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, discard := range []bool{false, true} {
				url, _ := framingServer(t, map[string]string{"/close": tc.answer}) // closed after it
				sink := &collect{}
				p := &vu.Pool{File: openLines(t, line("GET", "/close", "", nil)), Sink: sink, Config: vu.Config{Load: schedule.Load{VUs: 1}},
					Transport: newTransport(t, Options{Conn: conn.Options{Target: url, Timeout: 5 * time.Second}, Answer: transport.AnswerOptions{DiscardBodies: discard}})}
				if _, err := p.Run(t.Context()); err != nil {
					t.Fatal(err)
				}
				if r := sink.Results(); len(r) != 1 || r[0].Err != tc.want {
					t.Errorf("discard %v: %+v, want %v", discard, r, tc.want)
				}
			}
		})
	}
}

// TestRepeatedHead: an answer whose head is byte for byte the last one's
// (the parse the client remembers is reused) shows that head and its own
// body, kept or discarded; one that differs in a single byte, or answers
// a HEAD, reads as its own. All on one connection.
func TestRepeatedHead(t *testing.T) {
	answers := map[string]string{
		"/a": "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 1\r\n\r\nabc",
		"/b": "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 1\r\n\r\nxyz",
		"/c": "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 2\r\n\r\ndef",
		"/d": "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello",
	}
	paths := []string{"/a", "/b", "/a", "HEAD /a", "/c", "/b", "/b", "/d", "/a"}
	wantBody := []string{"abc", "xyz", "abc", "", "def", "xyz", "xyz", "hello", "abc"}
	var lines []string
	for _, p := range paths {
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			method, path = "GET", p
		}
		lines = append(lines, line(method, path, "", nil))
	}
	f := openLines(t, lines...)
	for _, discard := range []bool{false, true} {
		url, conns := framingServer(t, answers)
		obs, sink := &seen{}, &collect{}
		p := &vu.Pool{File: f, Sink: sink, Observers: []result.Observer{obs}, Config: vu.Config{Load: schedule.Load{VUs: 1}},
			Transport: newTransport(t, Options{Conn: conn.Options{Target: url}, Answer: transport.AnswerOptions{DiscardBodies: discard}})}
		if _, err := p.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		res := sink.Results()
		if len(res) != len(paths) || len(obs.status) != len(paths) || conns.Load() != 1 {
			t.Fatalf("discard %v: %d results, %d answers, %d connections; want %d, %d, 1", discard, len(res), len(obs.status), conns.Load(), len(paths), len(paths))
		}
		for i, p := range paths {
			path := strings.TrimPrefix(p, "HEAD ")
			head, _, _ := strings.Cut(answers[path], "\r\n\r\n")
			wantIn := len(answers[path])
			if path != p {
				wantIn = len(head) + 4
			}
			wantStatus, wantX := 200, "X-A: 1"
			if path == "/c" {
				wantX = "X-A: 2"
			}
			if path == "/d" {
				wantStatus = 201
			}
			body := wantBody[i]
			if discard {
				body = ""
			}
			if r := res[i]; r.Err != result.ErrNone || int(r.Status) != wantStatus || r.BytesIn != int64(wantIn) ||
				obs.status[i] != wantStatus || !strings.Contains(obs.headers[i], wantX) || string(obs.body[i]) != body {
				t.Errorf("discard %v, answer %d (%s): %+v, observed %d %q body %q; want %d, %s, body %q, %d bytes in",
					discard, i, p, r, obs.status[i], obs.headers[i], obs.body[i], wantStatus, wantX, body, wantIn)
			}
		}
	}
}
