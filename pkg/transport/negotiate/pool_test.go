package negotiate

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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
