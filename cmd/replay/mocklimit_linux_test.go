//go:build linux

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMockServesAgainAfterEMFILE: the mock, as a child whose descriptors
// are limited to a few more than it holds serving, runs out of them
// (idle client connections it accepted, more waiting in the backlog),
// and once they are released it answers again: the accept loop outlives
// EMFILE (it ended for good before, the listener open and silent).
func TestMockServesAgainAfterEMFILE(t *testing.T) {
	m := startMock(t, nil, "-f", uploadTraffic(t), "--listen", "127.0.0.1:0", "--latency", "0")
	pid := m.cmd.Process.Pid
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	lim := unix.Rlimit{Cur: uint64(len(fds) + 6), Max: uint64(len(fds) + 6)}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 40 {
		c, err := net.Dial("tcp", m.addr)
		if err != nil {
			break
		}
		idle = append(idle, c)
	}
	// Wait until the mock holds every descriptor it may, and a moment
	// more for its accept to fail, so that the release below comes after
	// the exhaustion.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); uint64(len(fds)) >= lim.Cur {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mock never ran out of descriptors:\n%s", m.stderr.String())
		}
	}
	time.Sleep(100 * time.Millisecond)
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var got string
	for deadline := time.Now().Add(20 * time.Second); got != "x" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := client.Get("http://" + m.addr + "/x")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = string(b)
	}
	if got != "x" {
		t.Fatalf("no answer once the descriptors came back:\n%s", m.stderr.String())
	}
	if !strings.Contains(m.stderr.String(), "accept failed for want of a resource") {
		t.Errorf("the descriptors' exhaustion was not logged:\n%s", m.stderr.String())
	}
}
