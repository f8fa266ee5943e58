package negotiate

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// TestPool: concurrent callers each get an answer of their own, copied
// out of the client that read it, and the clients are kept for the next
// callers rather than made again.
func TestPool(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Path", r.URL.Path)
		w.Write(b)
	}))
	defer srv.Close()
	tr, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool := tr.Pool()
	defer pool.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				body := fmt.Sprintf("g%d-%d", g, i)
				req := rrpair.Request{Method: []byte("POST"), URI: []byte("/p/" + body), Host: []byte(host), Scheme: []byte("http"), Body: []byte(body)}
				r, err := pool.Do(&req, &rrpair.Pair{Req: req})
				switch {
				case err != nil:
					errs <- err
				case r.Status != 200 || string(r.Body) != body || len(r.Headers) == 0:
					errs <- fmt.Errorf("%s: got %d %q %v", body, r.Status, r.Body, r.Headers)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(pool.all); n > 4 {
		t.Errorf("%d clients for 4 callers", n)
	}
	req := rrpair.Request{Method: []byte("GET"), URI: []byte("/"), Host: []byte("127.0.0.1:1"), Scheme: []byte("http")}
	if _, err := pool.Do(&req, &rrpair.Pair{Req: req}); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("nowhere to connect: %v, want an error naming the address", err)
	}
}

// TestPoolKeepsMaxIdle: after a burst of more callers than MaxIdle, the
// pool keeps MaxIdle clients, and has closed the others (their
// connections with them).
func TestPoolKeepsMaxIdle(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // every caller in flight at once
		io.WriteString(w, "ok")
	}))
	open := make(map[string]bool)
	var mu sync.Mutex
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch st {
		case http.StateNew:
			open[c.RemoteAddr().String()] = true
		case http.StateClosed:
			delete(open, c.RemoteAddr().String())
		}
	}
	srv.Start()
	defer srv.Close()
	tr, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool := tr.Pool()
	host := strings.TrimPrefix(srv.URL, "http://")
	const callers = MaxIdle + 16
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := rrpair.Request{Method: []byte("GET"), URI: []byte("/"), Host: []byte(host), Scheme: []byte("http")}
			if _, err := pool.Do(&req, &rrpair.Pair{Req: req}); err != nil {
				t.Error(err)
			}
		}()
	}
	untilOpen := func(want int, what string) { // within 10 s
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			n := len(open)
			mu.Unlock()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d connections open, want %d (%s)", n, want, what)
			}
		}
	}
	untilOpen(callers, "every caller in flight")
	close(release)
	wg.Wait()
	pool.mu.Lock()
	kept, all := len(pool.free), len(pool.all)
	pool.mu.Unlock()
	if kept != MaxIdle || all != MaxIdle {
		t.Errorf("%d clients kept of %d, want %d of %d", kept, all, MaxIdle, MaxIdle)
	}
	untilOpen(MaxIdle, "the clients kept")
	pool.Close()
}
