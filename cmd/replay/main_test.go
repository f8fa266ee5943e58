package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the replay binary: a test
// that needs a real process (signals) runs os.Args[0] with REPLAY_BE_MAIN=1.
// Tests that mostly wait (durations, grace periods, drains, back-offs,
// a linger) and share nothing (no working directory, environment or
// process-wide setting changed; their own servers on ports the kernel
// chose) call t.Parallel. Those that judge rates, capacity, memory or
// timing stay sequential: Go runs them first, each alone, before the
// parallel ones.
func TestMain(m *testing.M) {
	if os.Getenv("REPLAY_BE_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// sut is a loopback server that counts the requests it answers.
type sut struct {
	*httptest.Server
	count atomic.Int64
}

func newSUT(t *testing.T, delay time.Duration, status int) *sut {
	s := &sut{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.count.Add(1)
		io.Copy(io.Discard, r.Body) // so that a closed connection cancels r.Context()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(status)
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(s.Close)
	return s
}

func trafficFile(t *testing.T, n int, extra ...string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"tags":{"session":"s%d"},"http":{"req":{"method":"POST","uri":"/events/%d","host":"recorded:80","headers":{"Content-Type":["application/json"]},"body":"{\"n\":%d}"},"res":{"statusCode":202}}}`+"\n", i%7, i, i)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type runResult struct {
	code           int
	stdout, stderr string
}

func runMain(t *testing.T, ctx context.Context, stdin string, args ...string) runResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(ctx, args, strings.NewReader(stdin), &out, &errb)
	return runResult{code, out.String(), errb.String()}
}

func readSummary(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("summary JSON: %v\n%s", err, data)
	}
	return m
}

func TestRunEndToEnd(t *testing.T) {
	srv := newSUT(t, 0, 202)
	file := trafficFile(t, 50)
	out := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--vus", "4", "--out", out, "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	sum := readSummary(t, out)
	if got := sum["requests"].(float64); got != 50 || int64(got) != srv.count.Load() {
		t.Errorf("requests: got %v, server counted %d, want 50", got, srv.count.Load())
	}
	if sum["succeeded"].(float64) != 50 || sum["status"].(map[string]any)["202"].(float64) != 50 {
		t.Errorf("got %v", sum)
	}
	if sum["vus_max"].(float64) != 4 {
		t.Errorf("vus_max: got %v, want 4", sum["vus_max"])
	}
	for _, want := range []string{"Requests", "Latency       [from due", "202:50", "POST /events/{id}"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, `"message":"replaying"`) {
		t.Errorf("want JSON logs on stderr, got %q", r.stderr)
	}
}

func TestRunFromStdin(t *testing.T) {
	srv := newSUT(t, 0, 200)
	data, err := os.ReadFile(trafficFile(t, 10))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, context.Background(), string(data), "run", "-f", "-", "--target", srv.URL, "--out", out, "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := readSummary(t, out)["requests"].(float64); got != 10 {
		t.Errorf("requests: got %v, want 10", got)
	}
	if r.stdout != "" {
		t.Errorf("-q printed %q", r.stdout)
	}
}

func TestBadInputSendsNothing(t *testing.T) {
	srv := newSUT(t, 0, 200)
	good := trafficFile(t, 5)
	bad := trafficFile(t, 5, `{"http":{"req":{"method":"GET"}}}`, `not json`)
	noHost := trafficFile(t, 0, `{"http":{"req":{"method":"GET","uri":"/x"}}}`)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"bad lines", []string{"run", "-f", bad, "--target", srv.URL}, []string{bad + ":6: http.req.uri: missing", bad + ":7:1: invalid JSON", "2 bad lines", "nothing was sent"}},
		{"no host and no target", []string{"run", "-f", noHost}, []string{noHost + ":1: http.req.host: missing"}},
		{"missing file", []string{"run", "-f", filepath.Join(t.TempDir(), "nope.jsonl"), "--target", srv.URL}, []string{"no such file"}},
		{"no file flag", []string{"run", "--target", srv.URL}, []string{"--file: required"}},
		{"zero vus", []string{"run", "-f", good, "--target", srv.URL, "--vus", "0"}, []string{"--vus: want at least 1"}},
		{"bad target", []string{"run", "-f", good, "--target", "localhost:80"}, []string{"--target"}},
		{"bad mode", []string{"run", "-f", good, "--target", srv.URL, "--mode", "twice"}, []string{"--mode: want once or loop"}},
		{"unknown flag", []string{"run", "-f", good, "--target", srv.URL, "--vu", "3"}, []string{"unknown flag: --vu"}},
		{"bad log level", []string{"run", "-f", good, "--target", srv.URL, "--log-level", "loud"}, []string{"--log-level"}},
		{"unwritable --out", []string{"run", "-f", good, "--target", srv.URL, "--out", filepath.Join(t.TempDir(), "no", "dir", "x.json")}, []string{"--out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, context.Background(), "", tt.args...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if n := srv.count.Load(); n != 0 {
				t.Fatalf("the SUT received %d requests, want 0", n)
			}
		})
	}
}

func TestInspect(t *testing.T) {
	file := trafficFile(t, 20)
	r := runMain(t, context.Background(), "", "inspect", file)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"Pairs", "20", "Sessions", "7", "POST /events/{id}", "202:20", "Methods", "POST:20"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runMain(t, context.Background(), "", "inspect", "--json", file)
	var st map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st["iterations"].(float64) != 7 {
		t.Errorf("inspect --json: %v %v", err, st)
	}
	bad := trafficFile(t, 2, `{"http":{"req":{"method":"GET","uri":"/x","bodyBase64":"%%%"}}}`)
	r = runMain(t, context.Background(), "", "inspect", bad)
	if r.code != 1 || !strings.Contains(r.stderr, bad+":3: http.req.bodyBase64: bad base64") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestInterruptedRunWritesReports(t *testing.T) {
	srv := newSUT(t, 20*time.Millisecond, 200)
	out := filepath.Join(t.TempDir(), "summary.json")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(stopSignal{syscall.SIGINT}) })
	r := runMain(t, ctx, "", "run", "-f", trafficFile(t, 10), "--target", srv.URL, "--vus", "2", "--duration", "1m", "--out", out, "-q")
	if r.code != 130 {
		t.Fatalf("exit %d, want 130: %s", r.code, r.stderr)
	}
	sum := readSummary(t, out)
	if got := sum["requests"].(float64); got == 0 || int64(got) != srv.count.Load() {
		t.Errorf("requests: got %v, server counted %d", got, srv.count.Load())
	}
}

// TestSignals sends real signals to a real process.
func TestSignals(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			srv := newSUT(t, 5*time.Millisecond, 200)
			out := filepath.Join(t.TempDir(), "summary.json")
			cmd := exec.Command(os.Args[0], "run", "-f", trafficFile(t, 10), "--target", srv.URL,
				"--vus", "2", "--duration", "1m", "--out", out, "-q", "--log-format", "json")
			cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for srv.count.Load() < 5 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			cmd.Process.Signal(tc.sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("the process did not stop after %v", tc.sig)
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, tc.code, stderr.String())
			}
			sum := readSummary(t, out)
			if got := sum["requests"].(float64); got < 5 || int64(got) != srv.count.Load() {
				t.Errorf("requests: got %v, server counted %d", got, srv.count.Load())
			}
		})
	}
}

// TestSecondSignalExitsAtOnce: the first signal waits for in-flight
// requests (up to --grace), the second does not.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	srv := newSUT(t, 30*time.Second, 200)
	cmd := exec.Command(os.Args[0], "run", "-f", trafficFile(t, 4), "--target", srv.URL,
		"--vus", "2", "--grace", "1m", "-q", "--log-format", "json")
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
	select {
	case <-done:
		t.Fatal("the process exited on the first signal, want it to wait for in-flight requests")
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the process did not exit on the second signal")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("exit took %v after the second signal", took)
	}
	if got := cmd.ProcessState.ExitCode(); got != 130 {
		t.Errorf("exit %d, want 130", got)
	}
}
