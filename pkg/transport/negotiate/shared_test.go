package negotiate

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

// barrier holds the first n requests of each connection until n are in
// flight on it together, or until a second passed (then it answers 503):
// it proves that n VUs had their streams open on one connection at once.
type barrier struct {
	n     int
	mu    sync.Mutex
	conns map[string]*barrierConn // by the client's address
}

type barrierConn struct {
	arrived int
	full    chan struct{}
}

func (b *barrier) handler(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		c := b.conns[r.RemoteAddr]
		if c == nil {
			c = &barrierConn{full: make(chan struct{})}
			b.conns[r.RemoteAddr] = c
		}
		c.arrived++
		first := c.arrived <= b.n
		if c.arrived == b.n {
			close(c.full)
		}
		b.mu.Unlock()
		if first {
			select {
			case <-c.full:
			case <-time.After(time.Second):
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		next(w, r)
	}
}

// sharedLines are n GETs recorded as HTTP/2, each to its own URI.
func sharedLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = h2peer.PairLine("GET", fmt.Sprintf("/r/%d", i), "2", `{"Accept":["*/*"]}`, nil)
	}
	return lines
}

// TestStreamsShareConnections runs 20 VUs with --streams 10 against a
// cleartext HTTP/2 server that holds the first ten requests of each
// connection until all ten are in flight on it: two connections, each
// carrying ten streams at once, every request answered.
func TestStreamsShareConnections(t *testing.T) {
	seen := h2peer.NewSeen()
	b := &barrier{n: 10, conns: map[string]*barrierConn{}}
	target := h2peer.ServeH2C(t, &http.Server{Handler: b.handler(seen.Handler), ConnState: seen.ConnState})
	sink, err := runPool(t, 20, Options{Conn: conn.Options{Target: target}, H2C: true, Streams: 10}, sharedLines(60)...)
	if err != nil {
		t.Fatal(err)
	}
	res := sink.Results()
	connected := 0
	for _, r := range res {
		if r.Err != result.ErrNone || r.Status != 200 || r.Proto != result.ProtoHTTP2 {
			t.Errorf("request: status %d, error %v, proto %d; want 200 over HTTP/2", r.Status, r.Err, r.Proto)
		}
		if r.Connected {
			connected++
		}
	}
	if len(res) != 60 {
		t.Errorf("%d results, want 60", len(res))
	}
	if got := seen.Conns.Load(); got != 2 || connected != 2 {
		t.Errorf("the server saw %d connections and %d results say they connected; want 2 (20 VUs, 10 a connection)", got, connected)
	}
	for uri, n := range seen.URIs {
		if n != 1 {
			t.Errorf("%s read %d times, want once", uri, n)
		}
	}
}

// TestStreamsRefused holds --streams to what it can share, before traffic.
func TestStreamsRefused(t *testing.T) {
	plain := h2peer.PairLine("GET", "/", "2", "", nil)
	for _, tc := range []struct {
		name  string
		o     Options
		lines []string
		want  string
	}{
		{"http:// without --h2c", Options{Conn: conn.Options{Target: "http://127.0.0.1:1"}, Streams: 4}, []string{plain}, "add --h2c"},
		{"two places", Options{Conn: conn.Options{HostMap: map[string]string{"a:80": "http://127.0.0.1:1", "b:80": "http://127.0.0.1:2"}}, H2C: true, Streams: 4},
			[]string{h2peer.ReplaceHost(plain, "a:80"), h2peer.ReplaceHost(plain, "b:80")}, "give one --target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			f := fixture.OpenLines(t, tc.lines...)
			if err := tr.Check(f); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--streams 4") {
				t.Errorf("Check: %v, want an error naming --streams 4 and saying %q", err, tc.want)
			}
		})
	}
	for _, o := range []Options{{Streams: 2, Conn: conn.Options{NoConnectionReuse: true}}, {Streams: 2, HTTP2: Off}, {Streams: -1}} {
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--streams") {
			t.Errorf("Validate(%+v): %v, want an error naming --streams", o, err)
		}
	}
}
