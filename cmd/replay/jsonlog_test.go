//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLogIsJSONAcrossSinkShutdown: replay sink --log-format json, shut
// down (SIGINT) while a client is half-way through a request, writes
// nothing on stderr but JSON lines; what fasthttp's server had to say
// about the cut connection is among them, as a warning from fasthttp.
// fasthttp's default logger wrote it raw ("2026/11/28 06:44:30 error
// when serving connection ...") among the JSON.
func TestLogIsJSONAcrossSinkShutdown(t *testing.T) {
	addr := freeAddr(t)
	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "sink", "--sink-http", addr, "--out", filepath.Join(t.TempDir(), "sink.json"), "--log-format", "json")
	cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var c net.Conn
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink never listened on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// One event delivered whole, then a request cut in its headers.
	if _, err := c.Write([]byte("POST /stage/processed HTTP/1.1\r\nHost: x\r\nce-id: e1\r\nContent-Length: 2\r\n\r\n{}")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(buf); err != nil || !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 204")) {
		t.Fatalf("got %q, %v; want a 204 for the event", buf[:n], err)
	}
	c.Write([]byte("POST /stage/processed HTTP/1.1\r\nHo"))
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond) // the sink is shutting down, waiting for the connection
	c.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the sink did not exit after SIGINT; stderr:\n%s", stderr.String())
	}
	fromFasthttp := 0
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("got a line that is not JSON: %q", line)
			continue
		}
		if m["from"] == "fasthttp" {
			fromFasthttp++
		}
	}
	if fromFasthttp == 0 {
		t.Errorf("got no line from fasthttp about the cut request, want one, as JSON; stderr:\n%s", stderr.String())
	}
}
