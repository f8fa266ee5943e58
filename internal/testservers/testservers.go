// Package testservers starts private Redis and NATS servers on loopback for
// tests.
package testservers

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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
