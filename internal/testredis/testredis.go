// Package testredis starts a private redis-server on loopback for tests.
package testredis

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

// Start starts redis-server on a free loopback port, without persistence,
// stopped when the test ends, and returns its URL (redis://127.0.0.1:PORT/0).
// Without redis-server the test is skipped, loudly, unless REPLAY_CI=1
// (.ci/run installs it), where it fails.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("REPLAY_CI") == "1" {
			t.Fatal("redis-server is not installed, and REPLAY_CI=1: .ci/run installs it")
		}
		t.Skip("SKIPPED: redis-server is not installed (apt-get install redis-server); this Redis test did not run")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				close(ready)
				break
			}
		}
		for sc.Scan() { // keep the pipe drained
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("redis-server did not start within 10s")
	}
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port)
}
