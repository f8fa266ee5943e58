package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// findK6 finds the k6 binary: on PATH or in Go's bin directory. Missing,
// the test skips loudly, or fails under REPLAY_CI=1 (.ci/run installs it).
func findK6(t *testing.T) string {
	if p, err := exec.LookPath("k6"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	if p := filepath.Join(gopath, "bin", "k6"); fileExists(p) {
		return p
	}
	if os.Getenv("REPLAY_CI") == "1" {
		t.Fatal("k6 is not installed, and REPLAY_CI=1: .ci/run installs it (go install go.k6.io/k6@v1.8.1)")
	}
	t.Skip("SKIPPED: k6 is not installed (go install go.k6.io/k6@v1.8.1); the exported script was not run")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

type seenRequest struct {
	method, uri string
	header      http.Header
	body        []byte
}

// TestExportK6RunsInK6 exports traffic as a k6 script, runs it with real k6
// against a loopback server, and checks the server received the recorded
// requests: method, raw URI, headers (names canonicalized by k6), body.
func TestExportK6RunsInK6(t *testing.T) {
	k6 := findK6(t)
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, seenRequest{r.Method, r.RequestURI, r.Header.Clone(), body})
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	binary := []byte{0, 1, 2, 0xff, 0xfe}
	lines := []string{
		`{"tags":{"session":"s1"},"http":{"req":{"method":"POST","uri":"/events?src=web&t=%2F","host":"api","headers":{"content-type":["application/json"],"X-Multi":["a","b"]},"body":"{\"type\":\"click\"}"},"res":{"statusCode":202}}}`,
		`{"tags":{"session":"s1"},"http":{"req":{"method":"GET","uri":"/users/7/feed?limit=2","host":"api","headers":{"Accept":["application/json"]}},"res":{"statusCode":200}}}`,
		`{"http":{"req":{"method":"PUT","uri":"/blobs/1","host":"api","headers":{"Content-Type":["application/octet-stream"]},"bodyBase64":"` + base64.StdEncoding.EncodeToString(binary) + `"},"res":{"statusCode":201}}}`,
	}
	dir := t.TempDir()
	traffic := filepath.Join(dir, "traffic.jsonl")
	os.WriteFile(traffic, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	script := filepath.Join(dir, "load.js")
	r := runMain(t, context.Background(), "", "export", "k6", "-f", traffic, "--target", srv.URL, "-o", script)
	if r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k6, "run", "--no-usage-report", "--quiet", "--no-color", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "K6_NO_USAGE_REPORT=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("k6 run: %v\n%s", err, out)
	}
	want := []seenRequest{
		{"POST", "/events?src=web&t=%2F", http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a, b"}}, []byte(`{"type":"click"}`)},
		{"GET", "/users/7/feed?limit=2", http.Header{"Accept": {"application/json"}}, nil},
		{"PUT", "/blobs/1", http.Header{"Content-Type": {"application/octet-stream"}}, binary},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(want) {
		t.Fatalf("the server saw %d requests, want %d", len(seen), len(want))
	}
	for i, w := range want {
		g := seen[i]
		if g.method != w.method || g.uri != w.uri || !bytes.Equal(g.body, w.body) {
			t.Errorf("request %d: got %s %s %q, want %s %s %q", i, g.method, g.uri, g.body, w.method, w.uri, w.body)
		}
		for name, vals := range w.header {
			if got := strings.Join(g.header.Values(name), ", "); got != vals[0] {
				t.Errorf("request %d: header %s = %q, want %q", i, name, got, vals[0])
			}
		}
	}
}

func TestImportReportsSkipped(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t.jsonl")
	r := runMain(t, context.Background(), "", "import", "har", "../../pkg/har/testdata/browser.har", "-o", out)
	if r.code != 0 || !strings.Contains(r.stderr, "3 pairs written (2 recorded as HTTP/2 or 3); skipped 1: url 1") || !strings.Contains(r.stderr, "skipped 1 entry:\n  entry 4: url: ") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if r := runMain(t, context.Background(), "", "inspect", out); r.code != 0 {
		t.Errorf("the imported file does not inspect: %s", r.stderr)
	}
	r = runMain(t, context.Background(), "", "import", "gor", "-f", "../../pkg/gor/testdata/capture.gor.gz", "--strict", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "record 7: a response to no captured request") || !strings.Contains(r.stderr, "--strict: 2 records could not be converted") {
		t.Errorf("--strict: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestImportFromPipe: a HAR from a pipe (no seeking) converts as a file
// does, named as a path (/dev/fd/N, as /dev/stdin is) or as "-".
func TestImportFromPipe(t *testing.T) {
	har, err := os.ReadFile("../../pkg/har/testdata/browser.har")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../pkg/har/testdata/browser.golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	pipe := func() *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		go func() { w.Write(har); w.Close() }()
		return r
	}
	if _, err := os.Stat("/dev/fd/0"); err == nil {
		r := pipe()
		got := runMain(t, context.Background(), "", "import", "har", fmt.Sprintf("/dev/fd/%d", r.Fd()))
		if got.code != 0 || got.stdout != string(want) {
			t.Errorf("/dev/fd/N: exit %d, stderr:\n%s\nstdout:\n%s", got.code, got.stderr, got.stdout)
		}
	}
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"import", "har", "-"}, pipe(), &out, &errb)
	if code != 0 || out.String() != string(want) || !strings.Contains(errb.String(), "3 pairs written") {
		t.Errorf("-: exit %d, stderr:\n%s\nstdout:\n%s", code, errb.String(), out.String())
	}
}

// TestExportVegetaChecksTarget: --target is checked as run and export k6
// check it, before anything is written.
func TestExportVegetaChecksTarget(t *testing.T) {
	dir := t.TempDir()
	traffic := filepath.Join(dir, "traffic.jsonl")
	os.WriteFile(traffic, []byte(`{"http":{"req":{"method":"GET","uri":"/a","host":"api"}}}`+"\n"), 0o644)
	for _, bad := range []string{"127.0.0.1:8080", "ftp://h", "http://h/base"} {
		r := runMain(t, context.Background(), "", "export", "vegeta", "-f", traffic, "--target", bad)
		if r.code == 0 || !strings.Contains(r.stderr, "--target: want") || r.stdout != "" {
			t.Errorf("--target %s: exit %d, stdout %q, stderr:\n%s", bad, r.code, r.stdout, r.stderr)
		}
	}
	r := runMain(t, context.Background(), "", "export", "vegeta", "-f", traffic, "--target", "http://127.0.0.1:8080/")
	if r.code != 0 || !strings.Contains(r.stdout, `"url":"http://127.0.0.1:8080/a"`) {
		t.Errorf("a good --target: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
