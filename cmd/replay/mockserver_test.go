package main

// replay mock as a server facing hostile clients (issue 33): bodies read
// only as far as matching needs, idle and slow clients closed, signals,
// descriptors exhausted and back. Each runs the mock as a child process
// (this test binary standing in for replay: TestMain).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
)

// mockChild is `replay mock` running as a child process.
type mockChild struct {
	cmd    *exec.Cmd
	addr   string // the first address it serves
	stderr *fixture.Buffer
	stdout *fixture.Buffer
	done   chan int64 // its peak resident memory (bytes; 0 unknown), when it has exited
}

// startMock starts `replay mock args...` (a --log-format json is added)
// and waits until it says where it serves. prepare, when not nil, may
// change the command before it starts (its limits).
func startMock(t *testing.T, prepare func(*exec.Cmd), args ...string) *mockChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], append(append([]string{"mock"}, args...), "--log-format", "json")...)
	cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1")
	m := &mockChild{cmd: cmd, stderr: &fixture.Buffer{}, stdout: &fixture.Buffer{}, done: make(chan int64, 1)}
	cmd.Stdout, cmd.Stderr = m.stdout, m.stderr
	if prepare != nil {
		prepare(cmd)
	}
	started := make(chan struct{})
	go func() {
		peak, _ := runPeakRSS(cmd)
		close(started)
		m.done <- peak
	}()
	re := regexp.MustCompile(`"addrs":\["([0-9.:]+)"`)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if mm := re.FindStringSubmatch(m.stderr.String()); mm != nil {
			m.addr = mm[1]
			t.Cleanup(func() { m.kill() })
			return m
		}
		select {
		case <-started:
			t.Fatalf("replay mock %v exited:\n%s", args, m.stderr.String())
		default:
		}
	}
	m.kill()
	t.Fatalf("replay mock %v never said where it serves:\n%s", args, m.stderr.String())
	return nil
}

// stop sends sig and waits for the child to exit: its peak resident
// memory and exit code.
func (m *mockChild) stop(t *testing.T, sig os.Signal) (peak int64, code int) {
	t.Helper()
	m.cmd.Process.Signal(sig)
	select {
	case peak = <-m.done:
		m.done <- peak
		return peak, m.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		m.kill()
		t.Fatalf("replay mock did not stop on %v:\n%s", sig, m.stderr.String())
		return 0, 0
	}
}

func (m *mockChild) kill() {
	if m.cmd.Process != nil && m.cmd.ProcessState == nil {
		m.cmd.Process.Kill()
	}
}

// zeros reads as many zero bytes as asked.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// postHuge sends POST /upload with a body of size bytes over a fresh
// HTTP/1.1 connection to addr (chunked, or with its Content-Length), and
// returns the answer's status: read while the body is still being sent,
// as a client that streams its upload does.
func postHuge(addr string, size int64, chunked bool) (int, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	framing := fmt.Sprintf("Content-Length: %d", size)
	if chunked {
		framing = "Transfer-Encoding: chunked"
	}
	if _, err := fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: dep.internal\r\nContent-Type: application/octet-stream\r\n%s\r\n\r\n", framing); err != nil {
		return 0, err
	}
	go func() {
		chunk := make([]byte, 64<<10)
		for sent := int64(0); sent < size; sent += int64(len(chunk)) {
			var err error
			if chunked {
				_, err = fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk)
			} else {
				_, err = c.Write(chunk)
			}
			if err != nil {
				return
			}
		}
		if chunked {
			io.WriteString(c, "0\r\n\r\n")
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// h2cClient speaks HTTP/2 with prior knowledge.
func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}, Timeout: 60 * time.Second}
}

// uploadTraffic is a file of OUT pairs: a small upload and a GET.
func uploadTraffic(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	lines := `{"direction":"OUT","http":{"req":{"method":"POST","uri":"/upload","host":"dep.internal","headers":{"Content-Type":["application/octet-stream"]},"body":"small"},"res":{"statusCode":201,"body":"stored"}}}` + "\n" +
		`{"direction":"OUT","http":{"req":{"method":"GET","uri":"/x","host":"dep.internal"},"res":{"statusCode":200,"headers":{"Content-Type":["text/plain"]},"body":"x"}}}` + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMockBodiesBoundedMemory: 8 concurrent 64 MiB bodies, over HTTP/1.1
// (with a Content-Length and chunked) and over HTTP/2, leave the mock
// under 200 MiB resident: each is answered 413 once past what any
// recorded request of its route could match, the rest never read; the
// report counts them; the mock answers the recorded upload after.
func TestMockBodiesBoundedMemory(t *testing.T) {
	const size, conc, bound = 64 << 20, 8, 200 << 20
	traffic := uploadTraffic(t)
	for _, proto := range []string{"http/1.1", "h2c"} {
		t.Run(proto, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "mock.json")
			m := startMock(t, nil, "-f", traffic, "--listen", "127.0.0.1:0", "--latency", "0", "--out", out)
			var wg sync.WaitGroup
			statuses := make([]int, conc)
			errs := make([]error, conc)
			for i := range conc {
				wg.Go(func() {
					if proto == "h2c" {
						req, _ := http.NewRequest("POST", "http://"+m.addr+"/upload", io.LimitReader(zeros{}, size))
						if i%2 == 0 {
							req.ContentLength = size
						} else {
							req.ContentLength = -1
						}
						resp, err := h2cClient().Do(req)
						if err != nil {
							errs[i] = err
							return
						}
						resp.Body.Close()
						statuses[i] = resp.StatusCode
						return
					}
					statuses[i], errs[i] = postHuge(m.addr, size, i%2 == 1)
				})
			}
			wg.Wait()
			for i := range conc {
				if errs[i] != nil || statuses[i] != 413 {
					t.Errorf("body %d: status %d (%v), want 413", i, statuses[i], errs[i])
				}
			}
			resp, err := http.Post("http://"+m.addr+"/upload", "application/octet-stream", strings.NewReader("small"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 || string(b) != "stored" {
				t.Errorf("the recorded upload after: %d %q, want 201 \"stored\"", resp.StatusCode, b)
			}
			peak, code := m.stop(t, syscall.SIGTERM)
			if code != 143 {
				t.Errorf("exit %d, want 143:\n%s", code, m.stderr.String())
			}
			t.Logf("%s: peak resident memory %d MiB with %d concurrent bodies of %d MiB", proto, peak>>20, conc, size>>20)
			if peak > bound {
				t.Errorf("peak resident memory %d MiB, want under %d MiB", peak>>20, bound>>20)
			}
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(raw, []byte(fmt.Sprintf(`"bodies_over_limit": %d`, conc))) {
				t.Errorf("report: want bodies_over_limit %d:\n%s", conc, raw)
			}
		})
	}
}

var _ = context.Background
var _ = tls.Client
