package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestDryRunSendsNothing(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	file := trafficFile(t, 5)
	out := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--dry-run", "3", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the server saw %d connections during a dry run", n)
	}
	if got := strings.Count(r.stdout, "### "); got != 3 {
		t.Errorf("printed %d requests, want 3:\n%s", got, r.stdout)
	}
	if !strings.Contains(r.stdout, "POST /events/0 HTTP/1.1\r\nHost: "+strings.TrimPrefix(srv.URL, "http://")+"\r\n") {
		t.Errorf("dry run output:\n%s", r.stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a dry run wrote a summary")
	}
}

func TestHostMapFlag(t *testing.T) {
	srv := newSUT(t, 0, 200)
	dir := t.TempDir()
	good := filepath.Join(dir, "hosts")
	os.WriteFile(good, []byte("# recorded = target\nrecorded:80="+srv.URL+"\n"), 0o644)
	bad := filepath.Join(dir, "bad-hosts")
	os.WriteFile(bad, []byte("\nrecorded:80 "+srv.URL+"\n"), 0o644)
	out := filepath.Join(dir, "summary.json")
	file := trafficFile(t, 4)

	r := runMain(t, context.Background(), "", "run", "-f", file, "--host-map", "@"+good, "--out", out, "-q")
	if r.code != 0 || num(readSummary(t, out), "succeeded") != 4 || srv.count.Load() != 4 {
		t.Fatalf("exit %d, server %d: %s", r.code, srv.count.Load(), r.stderr)
	}
	r = runMain(t, context.Background(), "", "run", "-f", file, "--host-map", "@"+bad)
	if r.code != 1 || !strings.Contains(r.stderr, bad+":2: want HOST=URL") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = runMain(t, context.Background(), "", "run", "-f", file, "--host-map", "elsewhere:80="+srv.URL)
	if r.code != 1 || !strings.Contains(r.stderr, `no mapping for recorded host "recorded:80"`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if srv.count.Load() != 4 {
		t.Errorf("bad host maps sent traffic")
	}
}

// uriServer records the URI of every request it receives.
func uriServer(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var uris []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uris = append(uris, r.RequestURI)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(uris)
		uris = uris[:0]
		slices.Sort(out)
		return out
	}
}

func TestFiltersAndSample(t *testing.T) {
	srv, received := uriServer(t)
	data, _ := os.ReadFile(trafficFile(t, 40))
	extra := `{"http":{"req":{"method":"GET","uri":"/health","host":"x"},"res":{"statusCode":200}}}` + "\n"
	file := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(file, append(data, extra...), 0o644)

	r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--drop", "path=^/health$", "--keep", "uri=/events/1", "-q")
	if got := received(); r.code != 0 || len(got) != 11 { // /events/1 and /events/10..19
		t.Fatalf("exit %d, received %v: %s", r.code, got, r.stderr)
	}
	sample := func(seed string) []string {
		r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--sample", "0.5", "--seed", seed, "-q")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		return received()
	}
	a, b, c := sample("3"), sample("3"), sample("4")
	if !slices.Equal(a, b) || slices.Equal(a, c) || len(a) == 0 || len(a) == 41 {
		t.Errorf("seed 3 twice: %d and %d requests (equal: %v); seed 4: %d (equal: %v)", len(a), len(b), slices.Equal(a, b), len(c), slices.Equal(a, c))
	}
	for _, args := range [][]string{{"--keep", "colour=red"}, {"--drop", "path=("}, {"--from", "yesterday"}, {"--sample", "0"}, {"--keep", "method=DELETE"}} {
		r := runMain(t, context.Background(), "", append([]string{"run", "-f", file, "--target", srv.URL}, args...)...)
		if r.code != 1 {
			t.Errorf("%v: exit %d, want 1", args, r.code)
		}
	}
	if got := received(); len(got) != 0 {
		t.Errorf("bad filters sent %d requests", len(got))
	}
}

func TestDumpFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/events/1") {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("boom: " + r.URL.Path))
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	dump := filepath.Join(t.TempDir(), "failures.jsonl")
	r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 30), "--target", srv.URL,
		"--dump-failures", dump, "--dump-max", "3", "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 { // 11 failures of one endpoint and kind, bounded to 3
		t.Fatalf("got %d dumped failures, want 3:\n%s", len(lines), data)
	}
	var d struct {
		Endpoint, Failure string
		Request           struct{ Head, Body string }
		Response          struct {
			Status int
			Body   string
		}
	}
	if err := json.Unmarshal([]byte(lines[0]), &d); err != nil {
		t.Fatal(err)
	}
	if d.Endpoint != "POST /events/{id}" || d.Failure != "500" || d.Response.Status != 500 ||
		!strings.HasPrefix(d.Response.Body, "boom: /events/1") || !strings.HasPrefix(d.Request.Head, "POST /events/1") || !strings.HasPrefix(d.Request.Body, `{"n":1`) {
		t.Errorf("got %+v", d)
	}

	// A request that never reached the SUT has no head, and says why.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	r = runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 2), "--target", closed,
		"--dump-failures", dump, "--dump-max", "1", "-q")
	data, err = os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Failure, Error string
		Request        struct{ Head string }
	}
	if err := json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &c); err != nil {
		t.Fatal(err)
	}
	if c.Failure != "connect" || c.Request.Head != "" || !strings.Contains(c.Error, "connection refused") {
		t.Errorf("connect failure dumped as %s", data)
	}
}

// TestHTTP2Flags: --h2c shows a dry run's requests as HTTP/2 header
// lists; a bad --http2 is refused, naming the flag.
func TestHTTP2Flags(t *testing.T) {
	file := trafficFile(t, 2)
	r := runMain(t, context.Background(), "", "run", "-f", file, "--target", "http://127.0.0.1:1", "--h2c", "--dry-run", "1")
	if r.code != 0 || !strings.Contains(r.stdout, ":method: POST\n:scheme: http\n:authority: 127.0.0.1:1\n:path: /events/0\n") {
		t.Errorf("exit %d, dry run output:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runMain(t, context.Background(), "", "run", "-f", file, "--target", "http://127.0.0.1:1", "--http2", "sometimes")
	if r.code != 1 || !strings.Contains(r.stderr, "--http2: want auto, on or off") {
		t.Errorf("exit %d, stderr %q; want 1 and the flag named", r.code, r.stderr)
	}
}
