package negotiate

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
	"golang.org/x/net/http2"
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

// connKey is where sharedServer's handlers find their connection.
type connKey struct{}

// sharedServer serves cleartext HTTP/2 on loopback, each request through
// b (nil: none) to h, which may reach its connection through connKey;
// its Seen counts connections and requests.
func sharedServer(t *testing.T, b *barrier, h func(w http.ResponseWriter, r *http.Request) bool) (string, *h2peer.Seen) {
	seen := h2peer.NewSeen()
	next := func(w http.ResponseWriter, r *http.Request) {
		if h(w, r) {
			seen.Handler(w, r)
		}
	}
	handler := http.HandlerFunc(next)
	if b != nil {
		handler = b.handler(next)
	}
	srv := &http.Server{Handler: handler, ConnState: seen.ConnState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
	return h2peer.ServeH2C(t, srv), seen
}

// kinds counts results by error kind.
func kinds(res []result.Result) map[result.ErrorKind]int {
	n := map[result.ErrorKind]int{}
	for _, r := range res {
		n[r.Err]++
	}
	return n
}

// TestStreamsOneStreamFails holds a stream the SUT resets, or leaves
// unanswered past --timeout, to failing its own request: the VUs beside
// it on the connection are answered.
func TestStreamsOneStreamFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		uri  string
		h    func(w http.ResponseWriter, r *http.Request)
		want result.ErrorKind
	}{
		{"reset", "/r/5", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }, result.ErrStreamReset},
		{"stalled", "/r/5", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, result.ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, seen := sharedServer(t, nil, func(w http.ResponseWriter, r *http.Request) bool {
				if r.RequestURI == tc.uri {
					tc.h(w, r)
					return false
				}
				return true
			})
			sink, err := runPool(t, 10, Options{Conn: conn.Options{Target: target, Timeout: 300 * time.Millisecond}, H2C: true, Streams: 10}, sharedLines(30)...)
			if err != nil {
				t.Fatal(err)
			}
			got := kinds(sink.Results())
			if got[tc.want] != 1 || got[result.ErrNone] != 29 {
				t.Errorf("results by error: %v, want one %v and 29 answered", got, tc.want)
			}
			if tc.want == result.ErrStreamReset && seen.Conns.Load() != 1 {
				t.Errorf("%d connections, want the one: a reset stream leaves its connection open", seen.Conns.Load())
			}
		})
	}
}

// TestStreamsConnectionLost closes the shared connection under the first
// ten streams: every request in flight on it fails (none waits for its
// timeout), and the next go on a new connection.
func TestStreamsConnectionLost(t *testing.T) {
	b := &barrier{n: 10, conns: map[string]*barrierConn{}}
	target, seen := sharedServer(t, b, func(w http.ResponseWriter, r *http.Request) bool {
		if r.RequestURI == "/r/0" {
			r.Context().Value(connKey{}).(net.Conn).Close()
			return false
		}
		return true
	})
	start := time.Now()
	sink, err := runPool(t, 10, Options{Conn: conn.Options{Target: target, Timeout: 5 * time.Second}, H2C: true, Streams: 10}, sharedLines(30)...)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the run took %v: a request waited for its timeout", took)
	}
	got := kinds(sink.Results())
	lost := got[result.ErrEOF] + got[result.ErrReset]
	if lost < 1 || lost > 10 || lost+got[result.ErrNone] != 30 {
		t.Errorf("results by error: %v, want 1 to 10 lost with the connection (eof, reset), the rest answered", got)
	}
	if n := seen.Conns.Load(); n < 2 {
		t.Errorf("%d connections, want a new one after the first was lost", n)
	}
}

// TestStreamsBodiesShareWindows sends bodies larger than the windows the
// SUT opens at first from ten VUs on one connection: each waits for the
// windows its body needs, and every body arrives whole.
func TestStreamsBodiesShareWindows(t *testing.T) {
	target, seen := sharedServer(t, nil, func(http.ResponseWriter, *http.Request) bool { return true })
	body := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16)
	lines := make([]string, 30)
	for i := range lines {
		lines[i] = h2peer.PairLine("POST", fmt.Sprintf("/b/%d", i), "2", `{"Content-Type":["application/octet-stream"]}`, body)
	}
	sink, err := runPool(t, 10, Options{Conn: conn.Options{Target: target, Timeout: 5 * time.Second}, H2C: true, Streams: 10}, lines...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sink.Results() {
		if r.Err != result.ErrNone || r.Status != 200 || r.BytesOut < int64(len(body)) {
			t.Errorf("POST: status %d, error %v, %d bytes out; want 200 and the body's %d bytes", r.Status, r.Err, r.BytesOut, len(body))
		}
	}
	for i := range lines {
		if got := seen.Bodies[fmt.Sprintf("/b/%d", i)]; got != string(body) {
			t.Errorf("/b/%d: the server read %d bytes, want the body's %d", i, len(got), len(body))
		}
	}
	if n := seen.Conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestStreamsHardStop stops a run whose streams all wait on a SUT that
// never answers: the grace passes, the hard stop cuts every stream of
// both shared connections, and each request in flight is counted as
// cancelled.
func TestStreamsHardStop(t *testing.T) {
	target, _ := sharedServer(t, nil, func(_ http.ResponseWriter, r *http.Request) bool {
		<-r.Context().Done()
		return false
	})
	tr, err := New(Options{Conn: conn.Options{Target: target, Timeout: 20 * time.Second}, H2C: true, Streams: 3})
	if err != nil {
		t.Fatal(err)
	}
	sink := &fixture.Collect{}
	p := &vu.Pool{File: fixture.OpenLines(t, sharedLines(6)...), Sink: sink, Transport: tr,
		Config: vu.Config{Load: schedule.Load{VUs: 6, Walk: schedule.Loop}, Grace: 300 * time.Millisecond, Log: zerolog.Nop()}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	st, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the stop took %v, want about the grace", took)
	}
	if !st.Interrupted {
		t.Error("Interrupted is false")
	}
	if got := kinds(sink.Results()); got[result.ErrCancelled] != 6 || len(sink.Results()) != 6 {
		t.Errorf("results by error: %v, want the 6 in flight cancelled", got)
	}
}

// TestStreamsAnsweredBeforeBody has the SUT answer bodies larger than its
// windows without reading them: each VU whose body waits for a window
// takes its answer at once, rather than at its timeout.
func TestStreamsAnsweredBeforeBody(t *testing.T) {
	target, _ := sharedServer(t, nil, func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusAccepted)
		return false
	})
	body := bytes.Repeat([]byte("x"), 1<<20)
	lines := make([]string, 20)
	for i := range lines {
		lines[i] = h2peer.PairLine("POST", fmt.Sprintf("/b/%d", i), "2", "", body)
	}
	start := time.Now()
	sink, err := runPool(t, 10, Options{Conn: conn.Options{Target: target, Timeout: 10 * time.Second}, H2C: true, Streams: 10}, lines...)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the run took %v: a body waited for its timeout", took)
	}
	for _, r := range sink.Results() {
		if r.Status != http.StatusAccepted {
			t.Errorf("POST: status %d, error %v; want 202, answered before its body went", r.Status, r.Err)
		}
	}
}

// TestStreamsAnswersAcrossReads has ten streams a connection answered
// with bodies of 12 to 19 KiB, uneven, so that frames straddle the
// reader's 32 KiB buffer and filling it moves what it holds: each answer
// reaches its own VU, whole.
func TestStreamsAnswersAcrossReads(t *testing.T) {
	target, _ := sharedServer(t, nil, func(w http.ResponseWriter, r *http.Request) bool {
		n := 7000 + 337*len(r.RequestURI)*len(r.RequestURI)
		w.Header().Set("X-Want", fmt.Sprint(n))
		w.Write(bytes.Repeat([]byte{'a' + byte(len(r.RequestURI)%26)}, n))
		return false
	})
	tr, err := New(Options{Conn: conn.Options{Target: target, Timeout: 5 * time.Second}, H2C: true, Streams: 10})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture.OpenLines(t, sharedLines(400)...)
	if err := tr.Check(f); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	clock := func() int64 { return time.Now().UnixNano() }
	for v := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := tr.NewClient(v, clock)
			defer c.Close()
			cur := f.NewCursor()
			for i := v; i < f.Len(); i += 20 {
				var p rrpair.Pair
				if err := cur.Decode(i, &p); err != nil {
					t.Error(err)
					return
				}
				var res result.Result
				a := c.Do(&p.Req, &p, &res)
				if a == nil {
					t.Errorf("%s: no answer: %v", p.Req.URI, res.Err)
					continue
				}
				want := 7000 + 337*len(p.Req.URI)*len(p.Req.URI)
				if body := a.RawBody(); len(body) != want || body[0] != 'a'+byte(len(p.Req.URI)%26) {
					t.Errorf("%s: %d bytes of %q, want %d", p.Req.URI, len(body), body[:min(len(body), 1)], want)
				}
			}
		}()
	}
	wg.Wait()
}

// TestStreamsOverTLS shares connections over TLS: a SUT that takes h2 by
// ALPN carries the groups' streams; one that chooses HTTP/1.1 fails each
// request as no_http2, saying what ALPN chose.
func TestStreamsOverTLS(t *testing.T) {
	for _, h2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			seen := h2peer.NewSeen()
			target := h2peer.TLSServer(t, seen, h2)
			tr, err := New(Options{Conn: conn.Options{Target: target, Insecure: true, Timeout: 5 * time.Second}, Streams: 4})
			if err != nil {
				t.Fatal(err)
			}
			sink, err := h2peer.RunPool(t, tr, 8, sharedLines(16)...)
			if err != nil {
				t.Fatal(err)
			}
			got := kinds(sink.Results())
			if h2 {
				// A connection a group that got work: the run spreads 16
				// iterations over the VUs as they come.
				if n := seen.Conns.Load(); got[result.ErrNone] != 16 || n < 1 || n > 2 || seen.Protos[2] != 16 {
					t.Errorf("results by error %v, %d connections, %d requests over HTTP/2; want 16 answered on at most 2", got, n, seen.Protos[2])
				}
				return
			}
			if got[result.ErrNoHTTP2] != 16 {
				t.Errorf("results by error %v, want 16 no_http2", got)
			}
			c, p := h2peer.PairClient(t, tr, sharedLines(1)[0])
			var res result.Result
			c.Do(&p.Req, p, &res)
			if _, _, _, err := c.Failure(); err == nil || !strings.Contains(err.Error(), `ALPN chose "http/1.1"`) {
				t.Errorf("failure: %v, want it to say what ALPN chose", err)
			}
		})
	}
}

// TestStreamsGoAway has the SUT answer the fourth request it reads with a
// GOAWAY below that request's stream (and keep the connection open, so
// that no reset loses the GOAWAY): the request, and any of the group's
// streams above the GOAWAY's last, go again once on a new connection, and
// every request is answered.
func TestStreamsGoAway(t *testing.T) {
	var ok h2peer.H2Case
	for _, c := range h2peer.H2Cases {
		if c.Name == "ok" {
			ok = c
		}
	}
	ok.Weight = 1
	goaway := h2peer.H2Case{Name: "goaway-below-kept-open", Class: loopback.NoAnswer, Weight: 1, Answer: func(w *h2peer.H2Writer) bool {
		w.Fr.WriteGoAway(w.ID-2, http2.ErrCodeNo, nil)
		return w.Flush()
	}}
	script := make(loopback.Script, 200)
	script[3] = 1
	s := h2peer.NewHostileH2(t, []h2peer.H2Case{ok, goaway}, script)
	sink, err := runPool(t, 4, Options{Conn: conn.Options{Target: s.URL(), Timeout: 5 * time.Second}, H2C: true, Streams: 4}, sharedLines(40)...)
	if err != nil {
		t.Fatal(err)
	}
	retried := 0
	for _, r := range sink.Results() {
		if r.Err != result.ErrNone || r.Status != 200 {
			t.Errorf("request: status %d, error %v; want each answered, sent again when the GOAWAY left it unprocessed", r.Status, r.Err)
		}
		if r.Retried {
			retried++
		}
	}
	if retried < 1 || retried > 4 || s.Conns() != 2 {
		t.Errorf("%d requests sent again on %d connections; want 1 to 4 (those above the GOAWAY's last stream) on 2", retried, s.Conns())
	}
}

// TestStreamsPingFloodBounded has a SUT open its windows wide, read
// nothing, and send PINGs without end, while a VU's 16 MiB body is being
// written: the write blocks, and the acknowledgements the reader owes
// wait for it, the reader reading no more meanwhile, so that what the
// client holds stays bounded while the SUT would send far more.
func TestStreamsPingFloodBounded(t *testing.T) {
	const flood = 200 << 20 // bytes of PING frames the SUT tries to send
	var sent atomic.Int64
	addr, _ := loopback.ServeClosing(t, func(c net.Conn, quit <-chan struct{}) {
		fr := http2.NewFramer(c, nil)
		if fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30}) != nil || fr.WriteWindowUpdate(0, 1<<30) != nil {
			return
		}
		buf := bytes.Buffer{}
		bfr := http2.NewFramer(&buf, nil)
		for range 1 << 12 {
			bfr.WritePing(false, [8]byte{1})
		}
		for sent.Load() < flood {
			select {
			case <-quit:
				return
			default:
			}
			c.SetWriteDeadline(time.Now().Add(time.Second))
			n, err := c.Write(buf.Bytes())
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	body := bytes.Repeat([]byte("x"), 16<<20)
	sink, err := runPool(t, 1, Options{Conn: conn.Options{Target: "http://" + addr, Timeout: 2 * time.Second}, H2C: true, Streams: 2},
		h2peer.PairLine("POST", "/big", "2", "", body))
	if err != nil {
		t.Fatal(err)
	}
	if res := sink.Results(); len(res) != 1 || res[0].Err == result.ErrNone {
		t.Errorf("results %+v, want the one request failed", res)
	}
	// What the client read and did not write back, it holds: the socket
	// buffers take a few MiB of the flood, the client no more than 64 KiB.
	if s := sent.Load(); s > 32<<20 {
		t.Errorf("the SUT sent %d MiB of PINGs: the client read on, holding the acknowledgements it could not write", s>>20)
	} else {
		t.Logf("the SUT sent %d MiB of PINGs before the client stopped reading", s>>20)
	}
}
