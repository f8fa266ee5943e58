//go:build unix

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
)

// TestRecordDoubleSignal: replay record stopped by two signals back to
// back, one exchange still under way, puts its recording in place whole
// (the exchanges it finished) and leaves no temporary file; the second
// signal cuts the under-way exchange short instead of exiting before the
// file was renamed.
func TestRecordDoubleSignal(t *testing.T) {
	t.Parallel()
	slow := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-slow:
			case <-time.After(30 * time.Second):
			}
		}
		io.WriteString(w, "ok")
	}))
	// The slow answers end before the server closes: Close waits for
	// every request under way, which would otherwise sit out the 30 s.
	defer up.Close()
	defer close(slow)
	for i := range 4 {
		dir := t.TempDir()
		out := filepath.Join(dir, "rec.jsonl")
		cmd := exec.Command(os.Args[0], "record", "--listen", "127.0.0.1:0", "--upstream", up.URL, "-o", out, "--log-format", "json")
		cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1")
		stderr := &fixture.Buffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		re := regexp.MustCompile(`"listen":"([0-9.:]+)"`)
		var addr string
		for deadline := time.Now().Add(20 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if m := re.FindStringSubmatch(stderr.String()); m != nil {
				addr = m[1]
			}
		}
		if addr == "" {
			cmd.Process.Kill()
			t.Fatalf("replay record never said where it listens:\n%s", stderr.String())
		}
		for _, p := range []string{"/a", "/b"} {
			resp, err := http.Get("http://" + addr + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		go func() {
			if resp, err := http.Get("http://" + addr + "/slow"); err == nil {
				resp.Body.Close()
			}
		}()
		time.Sleep(100 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("run %d: replay record did not stop on two signals:\n%s", i, stderr.String())
		}
		raw, err := os.ReadFile(out)
		if err != nil || bytes.Count(raw, []byte("\n")) < 2 || !bytes.Contains(raw, []byte(`"/a"`)) || !bytes.Contains(raw, []byte(`"/b"`)) {
			t.Errorf("run %d: recording %q (%v), want the two finished exchanges in place:\n%s", i, raw, err, stderr.String())
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Errorf("run %d: %s left beside the recording", i, e.Name())
			}
		}
	}
}
