//go:build unix

package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMockDoubleSignal: two signals sent at once (as `timeout` sends them,
// to the child and to its group), 16 times: every run writes its report
// whole and leaves no temporary file; the second signal cuts the grace
// short (an answer under way for 30 s does not hold the exit), and the
// exit code is a signal's.
func TestMockDoubleSignal(t *testing.T) {
	t.Parallel()
	traffic := filepath.Join(t.TempDir(), "out.jsonl")
	os.WriteFile(traffic, []byte(
		`{"direction":"OUT","http":{"req":{"method":"GET","uri":"/x","host":"dep"},"res":{"statusCode":200,"body":"x"}}}`+"\n"+
			`{"direction":"OUT","duration":30000,"http":{"req":{"method":"GET","uri":"/slow","host":"dep"},"res":{"statusCode":200,"body":"late"}}}`+"\n"), 0o644)
	for i := range 16 {
		dir := t.TempDir()
		out := filepath.Join(dir, "mock.json")
		m := startMock(t, nil, "-f", traffic, "--listen", "127.0.0.1:0", "--out", out, "--grace", "60s")
		resp, err := http.Get("http://" + m.addr + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if i%2 == 1 { // an answer under way when the signals come
			go func() {
				if resp, err := http.Get("http://" + m.addr + "/slow"); err == nil {
					resp.Body.Close()
				}
			}()
			time.Sleep(50 * time.Millisecond)
		}
		began := time.Now()
		m.cmd.Process.Signal(syscall.SIGTERM)
		_, code := m.stop(t, syscall.SIGINT)
		took := time.Since(began)
		if code != 130 && code != 143 {
			t.Errorf("run %d: exit %d, want 130 or 143 (a signal's):\n%s", i, code, m.stderr.String())
		}
		if took > 20*time.Second {
			t.Errorf("run %d: stopped in %v: the second signal did not cut the 60 s grace short", i, took)
		}
		raw, err := os.ReadFile(out)
		if err != nil || !bytes.Contains(raw, []byte(`"hits": 1`)) {
			t.Errorf("run %d: report %s (%v), want one with \"hits\": 1", i, raw, err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Errorf("run %d: %s left beside the report", i, e.Name())
			}
		}
	}
}
