package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
