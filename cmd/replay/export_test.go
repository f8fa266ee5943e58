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
// the test skips, saying so on standard error too (go test prints a skip's
// reason only with -v). CI does not install k6: its licence (the AGPL)
// keeps it off the project's machines, so these tests run where a
// developer has k6; TestExportK6OptionsLoad checks every exported
// script's options against k6's types with node instead.
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
	msg := "SKIPPED " + t.Name() + ": k6 is not installed (its licence, the AGPL, keeps it off the project's machines); the exported script was not run in k6"
	fmt.Fprintln(os.Stderr, msg)
	t.Skip(msg)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

type seenRequest struct {
	method, uri string
	header      http.Header
	body        []byte
	at          time.Time
}

// TestExportK6RunsInK6 exports traffic as a k6 script, runs it with real k6
// against a loopback server, and checks the server received the recorded
// requests: method, raw URI, headers (names canonicalized by k6), body;
// repeated Cookie fields as one "a=1; b=2"; the recorded gap slept
// (--think recorded); the gRPC pair skipped and counted.
func TestExportK6RunsInK6(t *testing.T) {
	k6 := findK6(t)
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, seenRequest{r.Method, r.RequestURI, r.Header.Clone(), body, time.Now()})
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	binary := []byte{0, 1, 2, 0xff, 0xfe}
	lines := []string{
		`{"ts":"2026-11-01T10:00:00Z","duration":100,"tags":{"session":"s1"},"http":{"req":{"method":"POST","uri":"/events?src=web&t=%2F","host":"api","headers":{"content-type":["application/json"],"X-Multi":["a","b"],"cookie":["a=1","b=2"]},"body":"{\"type\":\"click\"}"},"res":{"statusCode":202}}}`,
		`{"ts":"2026-11-01T10:00:00.5Z","tags":{"session":"s1"},"http":{"req":{"method":"POST","uri":"/grpc.health.v1.Health/Check","host":"api","headers":{"content-type":["application/grpc"]},"bodyBase64":"AAAAAAA="}}}`,
		`{"ts":"2026-11-01T10:00:01.1Z","tags":{"session":"s1"},"http":{"req":{"method":"GET","uri":"/users/7/feed?limit=2","host":"api","headers":{"Accept":["application/json"]}},"res":{"statusCode":200}}}`,
		`{"http":{"req":{"method":"PUT","uri":"/blobs/1","host":"api","headers":{"Content-Type":["application/octet-stream"]},"bodyBase64":"` + base64.StdEncoding.EncodeToString(binary) + `"},"res":{"statusCode":201}}}`,
	}
	dir := t.TempDir()
	traffic := filepath.Join(dir, "traffic.jsonl")
	os.WriteFile(traffic, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	script := filepath.Join(dir, "load.js")
	r := runMain(t, context.Background(), "", "export", "k6", "-f", traffic, "--target", srv.URL, "--think", "recorded", "--speed", "2", "-o", script)
	if r.code != 0 || !strings.Contains(r.stderr, "2 iterations, 3 requests; 1 gRPC pair skipped") || !strings.Contains(r.stderr, "line 2: a gRPC pair") {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	if r := runMain(t, context.Background(), "", "export", "vegeta", "-f", traffic); r.code != 0 || !strings.Contains(r.stderr, "wrote 3 targets; 1 gRPC pair skipped") || strings.Contains(r.stdout, "grpc") {
		t.Errorf("export vegeta: exit %d, stderr:\n%s", r.code, r.stderr)
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
		{"POST", "/events?src=web&t=%2F", http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a, b"}, "Cookie": {"a=1; b=2"}}, []byte(`{"type":"click"}`), time.Time{}},
		{"GET", "/users/7/feed?limit=2", http.Header{"Accept": {"application/json"}}, nil, time.Time{}},
		{"PUT", "/blobs/1", http.Header{"Content-Type": {"application/octet-stream"}}, binary, time.Time{}},
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
			if got := g.header.Values(name); len(got) != 1 || strings.Join(got, ", ") != vals[0] {
				t.Errorf("request %d: header %s = %q, want one line %q", i, name, got, vals[0])
			}
		}
	}
	// The recorded gap: 10:00:00 + 100ms answered, next at 10:00:01.1
	// (the gRPC pair between skipped): 1s, at --speed 2.
	if gap := seen[1].at.Sub(seen[0].at); gap < 450*time.Millisecond {
		t.Errorf("the second request came %v after the first, want the recorded gap, 500ms", gap)
	}
}

// oneGET writes a traffic file of one GET, and names a script beside it.
func oneGET(t *testing.T) (traffic, script string) {
	dir := t.TempDir()
	traffic = filepath.Join(dir, "traffic.jsonl")
	if err := os.WriteFile(traffic, []byte(`{"http":{"req":{"method":"GET","uri":"/a","host":"api"}}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return traffic, filepath.Join(dir, "load.js")
}

// TestExportK6Refuses: the load flags k6 cannot carry are refused, each
// named, and nothing is written.
func TestExportK6Refuses(t *testing.T) {
	traffic, script := oneGET(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--pace", "recorded"}, "--pace recorded: k6 has no executor"},
		{[]string{"--pace", "recorded", "--speed", "2"}, "--pace recorded"},
		{[]string{"--speed", "2"}, "--speed 2: divides recorded times"},
		{[]string{"--think", "recorded", "--late-after", "5ms"}, "--late-after: k6 counts no late requests"},
		{[]string{"--rate", "10/s", "--precise-pacing"}, "--precise-pacing: k6 paces"},
		{[]string{"--rate", "10/s", "--iterations", "5"}, "--iterations: k6's arrival-rate"},
		{[]string{"--stages", "10s:5", "--iterations", "5"}, "--iterations 5 and --stages"},
	} {
		args := append([]string{"export", "k6", "-f", traffic, "-o", script}, tt.args...)
		r := runMain(t, context.Background(), "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, tt.want) || fileExists(script) {
			t.Errorf("%v: exit %d, stderr:\n%s", tt.args, r.code, r.stderr)
		}
	}
	// Carried: --think recorded with --speed; --iterations with --duration.
	r := runMain(t, context.Background(), "", "export", "k6", "-f", traffic, "-o", script, "--think", "recorded", "--speed", "2", "--duration", "1m", "--iterations", "9")
	b, _ := os.ReadFile(script)
	if r.code != 0 || !strings.Contains(string(b), "iterations: 9,\n      maxDuration: '60s'") || !strings.Contains(string(b), "divided by 2.") {
		t.Errorf("exit %d, stderr:\n%s\nscript:\n%s", r.code, r.stderr, b)
	}
}

// TestExportK6PreallocatesMostVUs: an arrival rate preallocates the most
// VUs replay run could grow to (--max-vus, else max(--vus, 1000)).
func TestExportK6PreallocatesMostVUs(t *testing.T) {
	traffic, script := oneGET(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "100/s", "--duration", "10s"}, "preAllocatedVUs: 1000,\n      maxVUs: 1000,"},
		{[]string{"--rate", "100/s", "--vus", "5", "--max-vus", "40"}, "preAllocatedVUs: 40,\n      maxVUs: 40,"},
		{[]string{"--stages", "10s:100/s", "--vus", "2000"}, "preAllocatedVUs: 2000,\n      maxVUs: 2000,"},
	} {
		r := runMain(t, context.Background(), "", append([]string{"export", "k6", "-f", traffic, "-o", script}, tt.args...)...)
		b, _ := os.ReadFile(script)
		if r.code != 0 || !strings.Contains(string(b), tt.want) {
			t.Errorf("%v: exit %d, want %q; stderr:\n%s\nscript:\n%s", tt.args, r.code, tt.want, r.stderr, b)
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

// TestExportVegetaStrictKeepsPreviousOutput: --strict refusing a skipped
// pair leaves the previous -o as it was, not replaced by a file that
// lacks the pair.
func TestExportVegetaStrictKeepsPreviousOutput(t *testing.T) {
	dir := t.TempDir()
	traffic := filepath.Join(dir, "traffic.jsonl")
	os.WriteFile(traffic, []byte(`{"http":{"req":{"method":"GET","uri":"/a","host":"api"}}}`+"\n"+
		`{"http":{"req":{"method":"POST","uri":"/svc/M","host":"api","headers":{"content-type":["application/grpc"]},"bodyBase64":"AAAAAAA="}}}`+"\n"), 0o644)
	out := filepath.Join(dir, "targets.json")
	os.WriteFile(out, []byte("previous\n"), 0o644)
	r := runMain(t, context.Background(), "", "export", "vegeta", "-f", traffic, "--strict", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "--strict: 1 line could not be converted") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "previous\n" {
		t.Errorf("-o after a refused export = %q, want the previous file kept", b)
	}
	if r := runMain(t, context.Background(), "", "export", "vegeta", "-f", traffic, "-o", out); r.code != 0 {
		t.Fatalf("without --strict: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), `"url":"http://api/a"`) {
		t.Errorf("-o = %q, want the GET target", b)
	}
}

// TestExportK6StrictKeepsPreviousOutput: --strict refusing a skipped pair
// leaves the previous script and data as they were, as export vegeta
// does, not replaced by files that lack the pair.
func TestExportK6StrictKeepsPreviousOutput(t *testing.T) {
	dir := t.TempDir()
	traffic := filepath.Join(dir, "traffic.jsonl")
	os.WriteFile(traffic, []byte(`{"http":{"req":{"method":"GET","uri":"/a","host":"api"}}}`+"\n"+
		`{"http":{"req":{"method":"POST","uri":"/svc/M","host":"api","headers":{"content-type":["application/grpc"]},"bodyBase64":"AAAAAAA="}}}`+"\n"), 0o644)
	script, data := filepath.Join(dir, "load.js"), filepath.Join(dir, "load.data.json")
	os.WriteFile(script, []byte("previous script\n"), 0o644)
	os.WriteFile(data, []byte("previous data\n"), 0o644)
	r := runMain(t, context.Background(), "", "export", "k6", "-f", traffic, "--strict", "-o", script)
	if r.code != 1 || !strings.Contains(r.stderr, "--strict: 1 line could not be converted") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for path, want := range map[string]string{script: "previous script\n", data: "previous data\n"} {
		if b, _ := os.ReadFile(path); string(b) != want {
			t.Errorf("%s after a refused export = %q, want the previous file kept", filepath.Base(path), b)
		}
	}
	if r := runMain(t, context.Background(), "", "export", "k6", "-f", traffic, "-o", script); r.code != 0 {
		t.Fatalf("without --strict: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(script); !strings.Contains(string(b), "./load.data.json") {
		t.Errorf("script = %q, want it to read its data", b)
	}
}
