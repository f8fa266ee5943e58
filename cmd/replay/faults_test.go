package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFlagsCheckedAsTheFileIs: values a flag cannot mean are refused
// before anything is sent, naming the flag.
func TestFlagsCheckedAsTheFileIs(t *testing.T) {
	srv := newSUT(t, 0, 200)
	good := trafficFile(t, 5)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"port out of range", []string{"run", "-f", good, "--target", "http://127.0.0.1:99999"}, "--target: want a port in 1..65535"},
		{"port zero", []string{"run", "-f", good, "--target", "http://127.0.0.1:0"}, "--target: want a port in 1..65535"},
		{"host-map port out of range", []string{"run", "-f", good, "--target", srv.URL, "--host-map", "recorded:80=http://127.0.0.1:70000"}, "--host-map"},
		{"explicit zero duration", []string{"run", "-f", good, "--target", srv.URL, "--duration", "0s"}, "--duration: want a positive duration"},
		{"explicit zero max-vus", []string{"run", "-f", good, "--target", srv.URL, "--rate", "10/s", "--duration", "1s", "--max-vus", "0"}, "--max-vus: want at least 1"},
		{"export k6 zero duration", []string{"export", "k6", "-f", good, "--target", srv.URL, "--duration", "0s", "-o", t.TempDir() + "/x.js"}, "--duration: want a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, context.Background(), "", tt.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tt.want)
			}
			if n := srv.count.Load(); n != 0 {
				t.Fatalf("the SUT received %d requests, want 0", n)
			}
		})
	}
}

// TestEmptyShard: a shard that gets no iteration (more shards than
// iterations) sends nothing, writes a valid empty summary that report
// merge accepts, skips its thresholds and says so. It runs in a process
// of its own: it used to crash on an integer divide by zero.
func TestEmptyShard(t *testing.T) {
	t.Parallel()
	srv := newSUT(t, 0, 200)
	file := trafficFile(t, 2) // two sessions: shard 2 of 3 gets none
	dir := t.TempDir()
	var parts []string
	for _, i := range []string{"0", "2"} {
		out := filepath.Join(dir, "shard-"+i+".json")
		parts = append(parts, out)
		cmd := exec.Command(os.Args[0], "run", "-f", file, "--target", srv.URL, "--shards", "3", "--rate", "20/s", "--duration", "500ms",
			"--threshold", "rps>100000", "--out", out, "-q", "--log-format", "json")
		cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1", "JOB_COMPLETION_INDEX="+i)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if i == "0" {
			continue // it sent traffic, and its threshold failed
		}
		if err != nil {
			t.Fatalf("empty shard: %v\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "got no iterations") || !strings.Contains(stderr.String(), "thresholds skipped") {
			t.Errorf("empty shard did not say so:\n%s", stderr.String())
		}
		if s := readSummary(t, out); s["requests"].(float64) != 0 {
			t.Errorf("empty shard: requests %v, want 0", s["requests"])
		}
	}
	total := filepath.Join(dir, "total.json")
	if r := runMain(t, context.Background(), "", append([]string{"report", "merge", "-o", total, "-q"}, parts...)...); r.code != 0 {
		t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
	}
	if got, want := readSummary(t, total)["requests"].(float64), float64(srv.count.Load()); got != want || got == 0 {
		t.Errorf("merged requests %v, the server counted %v", got, want)
	}
}

// TestOutputsNeverTheSameFile: an output that is the same file as the
// traffic file or as another output is refused before anything is sent,
// whatever the spelling (a hard link, ./), and the files stay as they
// were.
func TestOutputsNeverTheSameFile(t *testing.T) {
	srv := newSUT(t, 0, 200)
	file := trafficFile(t, 5)
	dir := t.TempDir()
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Link(file, link); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(summary, []byte(`{"previous":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.json")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--out is -f", []string{"run", "-f", file, "--target", srv.URL, "--out", file}, "--out " + file + ": the same file as --file"},
		{"--out is a hard link of -f", []string{"run", "-f", file, "--target", srv.URL, "--out", link}, "the same file as --file"},
		{"--html is --out spelled otherwise", []string{"run", "-f", file, "--target", srv.URL, "--out", summary, "--html", filepath.Join(dir, ".", "sub", "..", "summary.json")}, "the same file as --out"},
		{"two new outputs", []string{"run", "-f", file, "--target", srv.URL, "--junit", fresh, "--dump-failures", fresh}, "the same file as --junit"},
		{"--hgrm is -f", []string{"run", "-f", file, "--target", srv.URL, "--hgrm", file}, "--hgrm"},
		{"report --out is its input", []string{"report", summary, "--out", summary}, "the same file as FILE.json"},
		{"merge -o is an input", []string{"report", "merge", summary, summary, "-o", summary}, "the same file as FILE.json"},
		{"export -o is -f", []string{"export", "vegeta", "-f", file, "-o", link}, "the same file as -f"},
		{"import -o is its input", []string{"import", "har", file, "-o", file}, "the same file as -f"},
	}
	before, _ := os.ReadFile(file)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, context.Background(), "", tt.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tt.want)
			}
			if n := srv.count.Load(); n != 0 {
				t.Fatalf("the SUT received %d requests, want 0", n)
			}
			if got, _ := os.ReadFile(file); !bytes.Equal(got, before) {
				t.Fatalf("the traffic file changed: %d bytes, was %d", len(got), len(before))
			}
			if got, _ := os.ReadFile(summary); string(got) != `{"previous":true}` {
				t.Fatalf("the previous summary changed: %q", got)
			}
			if _, err := os.Stat(fresh); err == nil {
				t.Fatalf("%s was created", fresh)
			}
		})
	}
}

// TestRefusedStartKeepsPreviousOut: a run refused after its outputs were
// opened (the --metrics address is taken) leaves the previous --out as it
// was, and nothing beside it.
func TestRefusedStartKeepsPreviousOut(t *testing.T) {
	srv := newSUT(t, 0, 200)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(out, []byte(`{"previous":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 5), "--target", srv.URL, "--out", out, "--html", filepath.Join(dir, "r.html"),
		"--metrics", busy.Addr().String())
	if r.code != 1 || !strings.Contains(r.stderr, "--metrics") {
		t.Fatalf("exit %d, stderr %q; want 1, --metrics", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(out); string(got) != `{"previous":true}` {
		t.Errorf("--out: got %q, want the previous summary kept", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %v, want the previous summary alone", ents)
	}
}

// TestSecondSignalKeepsPreviousOut: a second signal exits at once, before
// the reports; the previous --out is then kept, not left empty.
func TestSecondSignalKeepsPreviousOut(t *testing.T) {
	srv := newSUT(t, 30*time.Second, 200)
	out := filepath.Join(t.TempDir(), "summary.json")
	if err := os.WriteFile(out, []byte(`{"previous":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "run", "-f", trafficFile(t, 4), "--target", srv.URL,
		"--vus", "2", "--grace", "1m", "--out", out, "-q", "--log-format", "json")
	cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.count.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the process did not exit on the second signal")
	}
	if got, _ := os.ReadFile(out); string(got) != `{"previous":true}` {
		t.Errorf("--out: got %q, want the previous summary kept", got)
	}
}

// endlessServer answers every request with a chunked body that never
// ends, until the client goes away (or 20s pass).
func endlessServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	chunk := []byte(fmt.Sprintf("%x\r\n%s\r\n", 64<<10, bytes.Repeat([]byte("x"), 64<<10)))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err != nil {
					return
				}
				if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")); err != nil {
					return
				}
				for {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestEndlessAnswersBoundedMemory: with nothing reading bodies, answers
// that never end cost the VUs' buffers, not the answers: 4 VUs reading
// for 2s stay well under 200 MiB (the high-water mark of the process).
func TestEndlessAnswersBoundedMemory(t *testing.T) {
	target := endlessServer(t)
	var lines []string
	for i := 0; i < 4; i++ {
		lines = append(lines, fmt.Sprintf(`{"http":{"req":{"method":"GET","uri":"/stream/%d","host":"recorded:80"},"res":{"statusCode":200}}}`, i))
	}
	out := filepath.Join(t.TempDir(), "summary.json")
	cmd := exec.Command(os.Args[0], "run", "-f", trafficFile(t, 0, lines...), "--target", target, "--vus", "4", "--timeout", "2s", "--out", out, "-q", "--log-format", "json")
	cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	maxRSS, ok := runPeakRSS(cmd) // the requests fail (timeout): exit code 0 or not, the summary says
	sum := readSummary(t, out)
	if sum["requests"].(float64) != 4 {
		t.Fatalf("requests: got %v, want 4\n%s", sum["requests"], stderr.String())
	}
	if got := sum["errors"].(map[string]any)["timeout"]; got != 4.0 {
		t.Errorf("errors: got %v, want 4 timeouts", sum["errors"])
	}
	if in := sum["bytes_in"].(float64); in < 1<<20 {
		t.Errorf("bytes_in: got %v, want the bytes streamed counted", in)
	}
	if !ok {
		t.Skip("no peak RSS to read on this platform")
	}
	t.Logf("max RSS %d MiB, %v MiB read", maxRSS>>20, int64(sum["bytes_in"].(float64))>>20)
	if maxRSS > 200<<20 {
		t.Errorf("max RSS %d MiB, want under 200 MiB", maxRSS>>20)
	}
}

// TestAnswerLimits: --max-header-bytes bounds an answer's head and
// --max-answer-body the body kept for those who read it; beyond either
// the request fails.
func TestAnswerLimits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("h", 20<<10))
		w.Write(bytes.Repeat([]byte("b"), 8<<10))
	}))
	defer srv.Close()
	file := trafficFile(t, 0, `{"http":{"req":{"method":"GET","uri":"/","host":"recorded:80"},"res":{"statusCode":200,"body":"b"}}}`)
	tests := []struct {
		name string
		args []string
		want map[string]float64 // status or error kind -> count
	}{
		{"a head over the default 16 KiB", nil, map[string]float64{"other": 1}},
		{"--max-header-bytes 64 KiB", []string{"--max-header-bytes", "65536"}, map[string]float64{"200": 1}},
		{"a body over --max-answer-body, read by --compare body", []string{"--max-header-bytes", "65536", "--max-answer-body", "4096", "--compare", "body"}, map[string]float64{"other": 1}},
		{"a body over --max-answer-body, read by nobody", []string{"--max-header-bytes", "65536", "--max-answer-body", "4096"}, map[string]float64{"200": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "summary.json")
			r := runMain(t, context.Background(), "", append([]string{"run", "-f", file, "--target", srv.URL, "--out", out, "-q"}, tt.args...)...)
			if r.code == 1 && !strings.Contains(r.stderr, "thresholds") {
				if _, err := os.Stat(out); err != nil {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
			}
			sum := readSummary(t, out)
			got := map[string]float64{}
			for _, k := range []string{"status", "errors"} {
				for name, n := range sum[k].(map[string]any) {
					got[name] = n.(float64)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--max-header-bytes", "100")
	if r.code != 1 || !strings.Contains(r.stderr, "--max-header-bytes: want at least 1024") {
		t.Errorf("exit %d, stderr %q; want --max-header-bytes refused", r.code, r.stderr)
	}
}

// TestTrafficFileTruncatedMidRun: a traffic file truncated while it is
// replayed ends the run with an error naming it, and the reports written;
// the process is not killed by SIGBUS.
func TestTrafficFileTruncatedMidRun(t *testing.T) {
	srv := newSUT(t, 0, 200)
	file := trafficFile(t, 5000)
	out := filepath.Join(t.TempDir(), "summary.json")
	cmd := exec.Command(os.Args[0], "run", "-f", file, "--target", srv.URL, "--vus", "2", "--duration", "30s",
		"--out", out, "-q", "--log-format", "json")
	cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for srv.count.Load() < 200 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Truncate(file, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the run went on after its file was truncated")
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || strings.Contains(stderr.String(), "fatal error") || strings.Contains(stderr.String(), "SIGBUS") {
		t.Fatalf("the process crashed (%v):\n%.2000s", cmd.ProcessState, stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "changed while it was replayed") || !strings.Contains(stderr.String(), file) {
		t.Errorf("exit %d, stderr:\n%.2000s\nwant 1 and an error naming the file", code, stderr.String())
	}
	if got := readSummary(t, out)["requests"].(float64); got < 200 {
		t.Errorf("summary: %v requests, want those sent (≥ 200)", got)
	}
}

// TestStdinInterruptedWhileSpooling: one SIGINT while standard input is
// still being read stops at once, sends nothing and leaves no spool.
func TestStdinInterruptedWhileSpooling(t *testing.T) {
	srv := newSUT(t, 0, 200)
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "-f", "-", "--target", srv.URL, "-q", "--log-format", "json")
	cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1", "TMPDIR="+tmp)
	stdin, err := cmd.StdinPipe() // kept open: the stream never ends
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stdin.Write([]byte(`{"http":{"req":{"method":"GET","uri":"/","host":"h:80"}}}` + "\n"))
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("one SIGINT did not stop the spooling of standard input")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "nothing was sent") {
		t.Errorf("exit %d, stderr %q; want 130, nothing was sent", code, stderr.String())
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("TMPDIR holds %v, want the spool gone", ents)
	}
	if n := srv.count.Load(); n != 0 {
		t.Errorf("the SUT received %d requests, want 0", n)
	}
}
