package listen

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestServesAgainAfterDescriptorsComeBack runs a server in a child
// process under a low descriptor limit, holds enough idle connections
// open that its accept fails with EMFILE, lets them go, and gets an
// answer again: the accept loop outlived the error.
func TestServesAgainAfterDescriptorsComeBack(t *testing.T) {
	if os.Getenv("LISTEN_CHILD") != "" {
		return // the child's own run of this test: see TestMain's child
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LISTEN_CHILD=1")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("the child printed no address; stderr:\n%s", stderr.String())
	}
	addr := lines.Text()

	// More idle clients than the child has descriptors: it accepts until
	// EMFILE, the rest wait in the kernel's backlog.
	var idle []net.Conn
	for range 48 {
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
		t.Fatalf("the child never ran out of descriptors; stderr:\n%s", stderr.String())
	}
	for _, c := range idle {
		c.Close()
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "hello\n")
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "ok\n" {
		t.Fatalf("after the descriptors came back: read %q, %v; want ok (stderr:\n%s)", got, err, stderr.String())
	}
}

// TestMain runs the child server when LISTEN_CHILD is set.
func TestMain(m *testing.M) {
	if os.Getenv("LISTEN_CHILD") != "" {
		child()
		return
	}
	os.Exit(m.Run())
}

// child serves lines with "ok" under a limit of 24 descriptors, with the
// accept loop a server has: it ends on the first error Accept returns.
// LISTEN_PLAIN=1 serves on the bare listener, to see the loop end.
func child() {
	lim := syscall.Rlimit{Cur: 24, Max: 24}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		os.Exit(2)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var ln net.Listener = Resilient(raw, "child", zerolog.New(os.Stderr))
	if os.Getenv("LISTEN_PLAIN") != "" {
		ln = raw
	}
	fmt.Println(raw.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "accept loop ended:", err)
			select {} // still listening, serving nothing: as the servers did
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
				c.Write([]byte("ok\n"))
			}
		}()
	}
}

// lockedBuffer is a child's standard error, written by os/exec's copier
// and read by the test.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
