package mock

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/h2answer"
	"golang.org/x/net/http2"
)

// TestH2WaitHoldsNoOtherStream: over one HTTP/2 connection, an answer
// that waits for its recorded duration does not hold the streams that
// follow it (each answered at once, from the connection's goroutine).
func TestH2WaitHoldsNoOtherStream(t *testing.T) {
	s, err := Start(Options{Listen: "127.0.0.1:0", Latency: "recorded", File: file(t,
		rec{method: "GET", uri: "/slow", host: "dep.test", status: 200, resBody: `"slow"`, duration: time.Hour},
		rec{method: "GET", uri: "/fast", host: "dep.test", status: 200, resBody: `"fast"`})})
	if err != nil {
		t.Fatal(err)
	}
	var dials atomic.Int32
	c := &http.Client{Transport: &http2.Transport{AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}}
	get := func(path string) (int, string, error) {
		req, _ := http.NewRequest("GET", "http://"+s.Addrs()[0]+path, nil)
		req.Host = "dep.test"
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	// The connection first, so that /slow and the rest share it (two
	// requests begun at once may each dial one).
	if st, _, err := get("/fast"); err != nil || st != 200 {
		t.Fatalf("/fast: %d %v", st, err)
	}
	slow := make(chan string, 1)
	go func() {
		st, body, err := get("/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		slow <- http.StatusText(st) + " " + body
	}()
	for deadline := time.Now().Add(10 * time.Second); s.Report().Hits < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // until /slow is matched and waiting
	}
	if s.Report().Hits < 2 {
		t.Fatal("/slow was not matched: nothing waits beside the streams to come")
	}
	for range 5 {
		st, body, err := get("/fast")
		if err != nil || st != 200 || body != `"fast"` {
			t.Fatalf("/fast beside a waiting answer: %d %q %v", st, body, err)
		}
	}
	select {
	case got := <-slow:
		t.Fatalf("/slow answered before its wait was cut: %s", got)
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	s.Close(ctx) // the wait is cut; its answer may go or meet the connection's close
	<-slow
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestH2Headers: an HTTP/2 request's fields are its headers but Host,
// its cookie fields one Cookie.
func TestH2Headers(t *testing.T) {
	f := func(n, v string) h2answer.Field { return h2answer.Field{Name: []byte(n), Value: []byte(v)} }
	got, _ := h2Headers(nil, nil, []h2answer.Field{f("cookie", "a=1"), f("host", "h"), f("x-k", "v"), f("cookie", "b=2"), f("cookie", "c=3")})
	var s []string
	for _, h := range got {
		s = append(s, string(h.Name)+": "+string(h.Value))
	}
	if want := "cookie: a=1; b=2; c=3|x-k: v"; strings.Join(s, "|") != want {
		t.Errorf("got %q, want %q", strings.Join(s, "|"), want)
	}
}

// TestH2ResetCutsPassthrough: an HTTP/2 stream passed through to a real
// host that never answers, reset by its client, cuts the call to that
// host at once (its connection closed), where it waited out the pool's
// timeout: a flood of streams opened and reset cannot pile calls up on
// the real host.
func TestH2ResetCutsPassthrough(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := silent.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	host := silent.Addr().String()
	s := start(t, Options{File: file(t, rec{method: "GET", uri: "/known", host: host, status: 200, resBody: "x"}),
		Passthrough: true, AllowUpstream: []string{"127.0.0.0/8"}})
	c := &http.Client{Transport: &http2.Transport{AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addrs()[0]+"/other", nil)
	req.Host = host
	done := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	var up net.Conn
	select {
	case up = <-accepted:
		defer up.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached the real host")
	}
	cancel() // the client resets its stream
	<-done
	up.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, up); err != nil {
		t.Errorf("the call to the real host went on after its stream was reset: %v", err)
	}
}
