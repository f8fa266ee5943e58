package vu

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/http1"
	"github.com/rs/zerolog"
)

// tagger is a Rewriter and Observer that stamps each request with the
// number of the request within its iteration and a Host of its own, and
// counts what it was called for.
type tagger struct {
	mu       sync.Mutex
	begins   int
	rewrites int
	observed int
	inIter   map[int]int // per VU: requests since Begin
}

func (g *tagger) Begin(vu int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.begins++
	g.inIter[vu] = 0
}

func (g *tagger) Rewrite(vu int, req *rrpair.Request, _ *rrpair.Pair) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rewrites++
	g.inIter[vu]++
	req.HostHeader = []byte("rewritten.example")
	req.Headers = append(req.Headers, rrpair.Header{Name: []byte("X-Nth"), Value: []byte{byte('0' + g.inIter[vu])}})
	return nil
}

func (g *tagger) Observe(int, *rrpair.Pair, result.Answer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.observed++
}

func TestRewriterAndObserver(t *testing.T) {
	srv := loopback.NewRaw(t, func(n int64, _ []byte) loopback.Action {
		if n == 1 {
			return loopback.Action{Status: 302, Header: "Location: /moved\r\n"}
		}
		return loopback.Action{Status: 200}
	})
	session := func(s, uri string) string {
		return `{"tags":{"session":"` + s + `"},"http":{"req":{"method":"GET","uri":"` + uri + `","host":"recorded.example"}}}`
	}
	f := openLines(t, session("a", "/1"), session("a", "/2"), session("b", "/3"))
	g := &tagger{inIter: map[int]int{}}
	p := &Pool{File: f, Config: Config{Load: schedule.Load{VUs: 1}, FollowRedirects: 3, Log: zerolog.Nop()},
		Transport: newTransport(t, http1.Options{Conn: conn.Options{Target: srv.URL(), Timeout: 5 * time.Second}}),
		Sink:      &collect{}, Rewriter: g, Observers: []result.Observer{g}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()
	want := []string{
		"GET /1 HTTP/1.1\r\nHost: rewritten.example\r\nX-Nth: 1\r\n\r\n",
		"GET /moved HTTP/1.1\r\nHost: rewritten.example\r\nX-Nth: 1\r\n\r\n", // a hop is not rewritten again
		"GET /2 HTTP/1.1\r\nHost: rewritten.example\r\nX-Nth: 2\r\n\r\n",
		"GET /3 HTTP/1.1\r\nHost: rewritten.example\r\nX-Nth: 1\r\n\r\n", // a new iteration began
	}
	if len(got) != len(want) {
		t.Fatalf("got %d requests: %q", len(got), got)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("request %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if g.begins != 2 || g.rewrites != 3 || g.observed != 4 {
		t.Errorf("begins %d, rewrites %d, observed %d; want 2, 3, 4", g.begins, g.rewrites, g.observed)
	}
}

// A chain cut by FollowRedirects marks its last result and is logged once
// a run; the request of the next pair goes out as recorded.
func TestRedirectLimit(t *testing.T) {
	srv := loopback.NewRaw(t, func(_ int64, req []byte) loopback.Action {
		if strings.HasPrefix(string(req), "GET /loop ") {
			return loopback.Action{Status: 302, Header: "Location: /loop\r\n"}
		}
		return loopback.Action{Status: 200}
	})
	line := func(uri string) string {
		return `{"http":{"req":{"method":"GET","uri":"` + uri + `","host":"recorded.example"}}}`
	}
	f := openLines(t, line("/loop"), line("/loop"), line("/other"))
	var log bytes.Buffer
	sink := &collect{}
	p := &Pool{File: f, Config: Config{Load: schedule.Load{VUs: 1}, FollowRedirects: 1, Log: zerolog.New(&log)},
		Transport: newTransport(t, http1.Options{Conn: conn.Options{Target: srv.URL(), Timeout: 5 * time.Second}}), Sink: sink}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var marked []bool
	for _, r := range sink.Results() {
		marked = append(marked, r.RedirectLimit)
	}
	if want := []bool{false, true, false, true, false}; !slices.Equal(marked, want) {
		t.Errorf("redirect limit marks %v, want %v", marked, want)
	}
	if n := strings.Count(log.String(), "--follow-redirects"); n != 1 {
		t.Errorf("logged %d times, want once: %s", n, log.String())
	}
	reqs := srv.Requests()
	if last := string(reqs[len(reqs)-1]); !strings.HasPrefix(last, "GET /other HTTP/1.1\r\n") {
		t.Errorf("last request %q, want the recorded GET /other", last)
	}
}
