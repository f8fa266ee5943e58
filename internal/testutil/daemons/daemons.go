// Package daemons starts private Redis, NATS and nginx servers (the
// installed programs, each on a free port of loopback) for tests; without
// the program the test skips loudly, or fails with REPLAY_CI=1.
package daemons

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
)

// Redis starts redis-server on a free loopback port, without persistence,
// stopped when the test ends, and returns its URL (redis://127.0.0.1:PORT/0).
// Without redis-server the test is skipped, loudly, unless REPLAY_CI=1
// (.ci/run installs it), where it fails.
func Redis(t testing.TB) string {
	t.Helper()
	port := start(t, "redis-server", "Ready to accept connections", func(port int) []string {
		return []string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	})
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port)
}

// NATS starts nats-server on a free loopback port, as Redis does, and
// returns its URL (nats://127.0.0.1:PORT).
func NATS(t testing.TB) string {
	t.Helper()
	port := start(t, "nats-server", "Server is ready", func(port int) []string {
		return []string{"-a", "127.0.0.1", "-p", fmt.Sprint(port)}
	})
	return fmt.Sprintf("nats://127.0.0.1:%d", port)
}

// start runs name with args on a free port until it logs ready.
func start(t testing.TB, name, ready string, args func(port int) []string) int {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("REPLAY_CI") == "1" {
			t.Fatalf("%s is not installed, and REPLAY_CI=1: .ci/run installs it", name)
		}
		t.Skipf("SKIPPED: %s is not installed (apt-get install %s); this test did not run", name, name)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args(port)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // nats-server logs to stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), ready) {
				close(up)
				break
			}
		}
		for sc.Scan() { // keep the pipe drained
		}
	}()
	select {
	case <-up:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not start within 10s", name)
	}
	return port
}

// Nginx starts nginx in dir (its prefix: logs and temporary files live
// there) with the configuration conf(port) on a free loopback port, in
// one process (the configuration says daemon off and master_process off),
// stopped when the test ends; it returns the address once nginx listens,
// and stop, which stops nginx gracefully (SIGQUIT: its logs are complete
// when it returns).
// Without nginx (on PATH or in /usr/sbin, where Debian puts it) the test
// is skipped, loudly, unless REPLAY_CI=1 (.ci/run installs it), where it
// fails.
func Nginx(t testing.TB, dir string, conf func(port int) string) (addr string, stop func()) {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			if os.Getenv("REPLAY_CI") == "1" {
				t.Fatal("nginx is not installed, and REPLAY_CI=1: .ci/run installs it (apt-get install nginx)")
			}
			t.Skip("SKIPPED: nginx is not installed (apt-get install nginx); CI installs it; this test did not run")
		}
		bin = "/usr/sbin/nginx"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf(port)), 0o644); err != nil {
		t.Fatal(err)
	}
	errLog := filepath.Join(dir, "error.log")
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", errLog)
	var out fixture.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	wait := func() { once.Do(func() { <-exited }) }
	t.Cleanup(func() { cmd.Process.Kill(); wait() })
	stop = func() {
		t.Helper()
		cmd.Process.Signal(syscall.SIGQUIT)
		done := make(chan struct{})
		go func() { wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("nginx did not stop within 10s of SIGQUIT")
		}
	}
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close() // nginx logs nothing for a connection without a request
			return addr, stop
		}
		if time.Now().After(deadline) {
			logged, _ := os.ReadFile(errLog)
			t.Fatalf("nginx did not listen within 10s: %v\n%s%s", err, out.String(), logged)
		}
	}
}
