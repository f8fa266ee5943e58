package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/daemons"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// nginxConf writes both logs of one server: combined, and JSON with
// escape=json. Temporary paths live under the prefix, so nginx needs no
// other directory; master_process off keeps one process, which opens the
// logs and answers.
const nginxConf = `daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 64; }
http {
  client_body_temp_path %[1]s/tmp/body;
  proxy_temp_path %[1]s/tmp/proxy;
  fastcgi_temp_path %[1]s/tmp/fastcgi;
  uwsgi_temp_path %[1]s/tmp/uwsgi;
  scgi_temp_path %[1]s/tmp/scgi;
  log_format j escape=json '{"time_local":"$time_local","request":"$request","status":"$status","http_host":"$http_host","request_time":"$request_time"}';
  server {
    listen 127.0.0.1:%[2]d;
    access_log %[1]s/access.log combined;
    access_log %[1]s/access.json j;
    location / { return 200 "ok\n"; }
    location /missing { return 404; }
  }
}
`

// TestImportNginxLog: nginx on loopback logs requests sent as raw bytes
// (a target with bytes it escapes as \xHH, a query, a POST, a 404, a TLS
// handshake that is no request); both its logs import to the requests as
// they were sent, in order, with their status; replayed, the targets go
// on the wire byte for byte.
func TestImportNginxLog(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "tmp"), 0o755)
	addr, stop := daemons.Nginx(t, dir, func(port int) string { return fmt.Sprintf(nginxConf, dir, port) })

	type sent struct {
		method, target string
		status         int
	}
	want := []sent{
		{"GET", "/plain", 200},
		{"GET", "/search?q=caf%C3%A9&page=2&tag=a+b", 200},
		{"GET", "/caf\xc3\xa9/\"q\"/\\/\xff\xfe?x=\xa5", 200},
		{"POST", "/events", 200},
		{"HEAD", "/missing", 404},
		{"DELETE", "/orders/7", 200},
	}
	send := func(raw string) {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, c) // nginx closes after its answer
	}
	for _, r := range want {
		body := ""
		if r.method == "POST" {
			body = `{"type":"click"}`
		}
		send(fmt.Sprintf("%s %s HTTP/1.1\r\nHost: shop.test\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", r.method, r.target, len(body), body))
		if r.target == "/plain" {
			send("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n") // a TLS hello on the plain port: 400, no request
		}
	}
	stop() // graceful: the logs are complete when it exits

	for _, log := range []string{"access.log", "access.json"} {
		t.Run(log, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "traffic.jsonl")
			r := runMain(t, context.Background(), "", "import", "access-log", filepath.Join(dir, log), "-o", out, "--strict")
			if r.code != 0 || !strings.Contains(r.stderr, "6 pairs written") || !strings.Contains(r.stderr, "1 line held no HTTP request") {
				data, _ := os.ReadFile(filepath.Join(dir, log))
				t.Fatalf("exit %d, stderr:\n%s\nthe log:\n%s", r.code, r.stderr, data)
			}
			f, err := rrpair.Open(out, rrpair.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c := f.NewCursor()
			var p rrpair.Pair
			var last time.Time
			for i, w := range want {
				if err := c.Decode(i, &p); err != nil {
					t.Fatal(err)
				}
				ts, _ := p.Time()
				if string(p.Req.Method) != w.method || string(p.Req.URI) != w.target || p.Res.Status != w.status || !ts.After(last) {
					t.Errorf("pair %d: %s %q %d at %v, want %s %q %d after %v", i, p.Req.Method, p.Req.URI, p.Res.Status, ts, w.method, w.target, w.status, last)
				}
				if host := string(p.Req.Host); log == "access.json" && host != "shop.test" || log == "access.log" && host != "" {
					t.Errorf("pair %d: host %q", i, host)
				}
				last = ts
			}

			// Replayed, the targets reach the wire as the clients sent them.
			srv := loopback.NewRaw(t, nil)
			r = runMain(t, context.Background(), "", "run", "-f", out, "--target", srv.URL(), "--vus", "1")
			if r.code != 0 {
				t.Fatalf("run: exit %d, stderr:\n%s", r.code, r.stderr)
			}
			reqs := srv.Requests()
			if len(reqs) != len(want) {
				t.Fatalf("the server read %d requests, want %d", len(reqs), len(want))
			}
			for i, w := range want {
				line, _, _ := bytes.Cut(reqs[i], []byte("\r\n"))
				if wantLine := w.method + " " + w.target + " HTTP/1.1"; string(line) != wantLine {
					t.Errorf("request %d on the wire: %q, want %q", i, line, wantLine)
				}
			}
		})
	}
}

// TestAccessLogRecordedPace: the requests logged within one second are
// spread across it, so --pace recorded sends them in order and at the
// logged rate, not all at once at the top of the second.
func TestAccessLogRecordedPace(t *testing.T) {
	var log strings.Builder
	for i := range 15 {
		sec := 0
		if i >= 10 {
			sec = 1 // ten requests in the first second, five in the next
		}
		fmt.Fprintf(&log, "10.0.0.1 - - [01/Nov/2026:10:00:0%d +0000] \"GET /r/%d HTTP/1.1\" 200 3 \"-\" \"-\"\n", sec, i)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "access.log"), filepath.Join(dir, "traffic.jsonl")
	os.WriteFile(in, []byte(log.String()), 0o644)
	if r := runMain(t, context.Background(), "", "import", "access-log", in, "-o", out); r.code != 0 {
		t.Fatalf("import: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	srv := loopback.NewRaw(t, nil)
	r := runMain(t, context.Background(), "", "run", "-f", out, "--target", srv.URL(), "--pace", "recorded", "--speed", "2")
	if r.code != 0 {
		t.Fatalf("run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	reqs, at := srv.Requests(), srv.Arrivals()
	if len(reqs) != 15 {
		t.Fatalf("the server read %d requests, want 15", len(reqs))
	}
	for i, req := range reqs {
		if want := fmt.Sprintf("GET /r/%d HTTP/1.1\r\n", i); !bytes.HasPrefix(req, []byte(want)) {
			t.Errorf("request %d: %q, want %q", i, req[:min(len(req), 30)], want)
		}
	}
	// Due at 0, 50, ..., 450 ms, then 500, 600, ..., 900 ms (speed 2): a
	// busy machine may be late (the first one too, hence the margin), never early.
	if first := at[9].Sub(at[0]); first < 350*time.Millisecond {
		t.Errorf("the first second's ten requests came within %v, want them spread over 450ms", first)
	}
	if all := at[14].Sub(at[0]); all < 800*time.Millisecond {
		t.Errorf("the fifteen requests came within %v, want 900ms", all)
	}
}
