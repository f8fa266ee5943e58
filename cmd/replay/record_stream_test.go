//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/loopback"
)

// bulkUpstream is a loopback HTTP/1.1 server that reads each request's
// body (Content-Length), counting its bytes, and answers with a body of
// the size the path asks for (/N), of zeros.
type bulkUpstream struct {
	addr string
	read atomic.Int64
}

func newBulkUpstream(t *testing.T) *bulkUpstream {
	u := &bulkUpstream{}
	u.addr, _ = loopback.Serve(t, u.serve)
	return u
}

func (u *bulkUpstream) serve(c net.Conn) {
	br := bufio.NewReader(c)
	zeros := make([]byte, 1<<20)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		size, _ := strconv.ParseInt(strings.TrimPrefix(strings.Fields(line)[1], "/"), 10, 64)
		var length int64
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if h == "\r\n" {
				break
			}
			if name, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(name, "content-length") {
				length, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
		n, err := io.CopyN(io.Discard, br, length)
		u.read.Add(n)
		if err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
		for left := size; left > 0; left -= int64(len(zeros)) {
			if _, err := c.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
				return
			}
		}
	}
}

// startRecorder starts `replay record ARGS` as a child process (this test
// binary as replay) and returns it once it answers on addr.
func startRecorder(t *testing.T, addr string, args ...string) (*exec.Cmd, *fixture.Buffer, chan int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"record", "--listen", addr, "--log-format", "json"}, args...)...)
	if lim := os.Getenv("RECORD_TEST_NOFILE"); lim != "" { // under a descriptor limit: through sh's ulimit
		cmd = exec.Command("/bin/sh", append([]string{"-c", `ulimit -n ` + lim + ` && exec "$0" "$@"`, cmd.Path}, cmd.Args[1:]...)...)
	}
	cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1")
	stderr := &fixture.Buffer{}
	cmd.Stderr = stderr
	peak := make(chan int64, 1)
	started := make(chan error, 1)
	go func() {
		rss, _ := runPeakRSSStarted(cmd, started)
		peak <- rss
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i == 300 {
			t.Fatalf("the recorder did not start: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd, stderr, peak
}

// TestRecordForwardStreamsBodies: a 512 MiB POST through `record
// --forward` and a 128 MiB answer pass whole (the upstream reads every
// byte, the client gets every byte) while the recorder's resident memory
// peaks under 200 MiB; the POST over --max-body is passed on and not
// recorded (too_large), the large answer is recorded cut at --max-body
// with its whole size said (bodyCut), never silently.
func TestRecordForwardStreamsBodies(t *testing.T) {
	up := newBulkUpstream(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "out.jsonl")
	addr := freeAddr(t)
	cmd, stderr, peak := startRecorder(t, addr, "--forward", "--ca-out", filepath.Join(dir, "ca"), "-o", rec, "--max-body", "1048576",
		"--allow-upstream", "127.0.0.0/8")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(90 * time.Second))
	const post, answer = 512 << 20, 128 << 20
	host := up.addr
	go func() {
		fmt.Fprintf(c, "POST http://%s/16 HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", host, host, post)
		zeros := make([]byte, 1<<20)
		for i := 0; i < post>>20; i++ {
			if _, err := c.Write(zeros); err != nil {
				return
			}
		}
		fmt.Fprintf(c, "GET http://%s/%d HTTP/1.1\r\nHost: %s\r\n\r\n", host, answer, host)
	}()
	br := bufio.NewReader(c)
	for i, want := range []int64{16, answer} {
		m := readHeadLen(t, br)
		if m != want {
			t.Fatalf("answer %d: Content-Length %d, want %d", i, m, want)
		}
		if n, err := io.CopyN(io.Discard, br, m); err != nil {
			t.Fatalf("answer %d: got %d bytes of %d: %v", i, n, m, err)
		}
	}
	if got := up.read.Load(); got != post {
		t.Errorf("upstream read %d bytes, want %d", got, post)
	}
	cmd.Process.Signal(syscall.SIGINT)
	rss := <-peak
	if st := cmd.ProcessState; st == nil || st.ExitCode() != 0 && st.ExitCode() != 130 { // 130: stopped by SIGINT
		t.Fatalf("record: %v\n%s", cmd.ProcessState, stderr)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1 (the GET; the POST over --max-body not recorded)", len(lines))
	}
	var pair struct {
		HTTP struct {
			Res struct {
				BodyBase64 string `json:"bodyBase64"`
				BodyCut    int64  `json:"bodyCut"`
			}
		}
	}
	if err := json.Unmarshal([]byte(lines[0]), &pair); err != nil {
		t.Fatal(err)
	}
	if pair.HTTP.Res.BodyCut != answer || len(pair.HTTP.Res.BodyBase64) != ((1<<20)+2)/3*4 {
		t.Errorf("answer recorded: bodyCut %d, %d base64 bytes; want bodyCut %d and the first MiB", pair.HTTP.Res.BodyCut, len(pair.HTTP.Res.BodyBase64), answer)
	}
	for _, want := range []string{`"too_large":1`, `"answers_cut":1`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, stderr)
		}
	}
	if rss == 0 {
		t.Skip("no peak RSS to read on this platform")
	}
	t.Logf("recorder peak RSS %d MiB for a %d MiB POST and a %d MiB answer", rss>>20, post>>20, answer>>20)
	if rss > 200<<20 {
		t.Errorf("recorder peak RSS %d MiB, want under 200 MiB", rss>>20)
	}
}

// readHeadLen reads an answer's head and returns its Content-Length.
func readHeadLen(t *testing.T, br *bufio.Reader) int64 {
	t.Helper()
	var n int64 = -1
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("answer head: %v", err)
		}
		if h == "\r\n" {
			return n
		}
		if name, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(name, "content-length") {
			n, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
}

// TestRecordServesAgainAfterDescriptorsComeBack runs `replay record`
// under a limit of 40 descriptors, holds idle client connections until
// its accept fails (too many open files), lets them go, and gets an
// answer again: the accept loop outlived the error (it used to end for
// good, the port still open and nothing served).
func TestRecordServesAgainAfterDescriptorsComeBack(t *testing.T) {
	var err error
	up := newBulkUpstream(t)
	addr := freeAddr(t)
	t.Setenv("RECORD_TEST_NOFILE", "40")
	cmd, stderr, _ := startRecorder(t, addr, "--upstream", "http://"+up.addr, "-o", filepath.Join(t.TempDir(), "out.jsonl"))
	os.Unsetenv("RECORD_TEST_NOFILE")
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 60 { // each costs the recorder two: the client's, and its upstream's
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "too many open files") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "too many open files") {
		t.Fatalf("the recorder never ran out of descriptors; stderr:\n%s", stderr)
	}
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	// The recorder frees its side of each closed connection (and that
	// connection's upstream) only once it reads the close; until then
	// an accepted request may find no descriptor left for its upstream
	// and be answered 502 by the recorder itself. Ask again until then:
	// an accept loop that had ended would answer nothing at all.
	var line string
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		line, err = askOnce(addr, "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
		if err == nil && strings.HasPrefix(line, "HTTP/1.1 200 ") {
			break
		}
		if err == nil && !strings.HasPrefix(line, "HTTP/1.1 502 ") {
			break // neither served nor the recorder's own 502: wrong
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200 ") {
		t.Fatalf("after the descriptors came back: got %q, %v, want a 200; stderr:\n%s", line, err, stderr)
	}
	cmd.Process.Signal(syscall.SIGINT)
}

// askOnce sends one request on a new connection and returns the
// answer's status line.
func askOnce(addr, request string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}
