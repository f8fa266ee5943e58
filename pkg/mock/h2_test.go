package mock

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

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
	var dials int
	c := &http.Client{Transport: &http2.Transport{AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			dials++
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
	slow := make(chan string, 1)
	go func() {
		st, body, err := get("/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		slow <- http.StatusText(st) + " " + body
	}()
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
	if dials != 1 {
		t.Errorf("%d connections, want 1", dials)
	}
}
