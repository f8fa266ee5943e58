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
// about the request that failed during the shutdown is among them, as a
// warning from fasthttp. fasthttp's default logger wrote it raw
// ("2026/11/28 06:44:30 error when serving connection ...") among the
// JSON; and fasthttp's server stops counting a connection before its
// worker logs why it failed, so the sink could exit before the line was
// written.
//
// Every step is one the test sees happen: the server is inside the
// request (it answered 100 Continue), the shutdown has begun (the sink
// no longer accepts connections), then the request's body turns out
// malformed.
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
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	// One event delivered whole, then a request whose body is to come.
	if _, err := c.Write([]byte("POST /stage/processed HTTP/1.1\r\nHost: x\r\nce-id: e1\r\nContent-Length: 2\r\n\r\n{}")); err != nil {
		t.Fatal(err)
	}
	readStatus := func(want string) {
		t.Helper()
		buf := make([]byte, 512)
		if n, err := c.Read(buf); err != nil || !bytes.HasPrefix(buf[:n], []byte(want)) {
			t.Fatalf("got %q, %v; want %q", buf[:n], err, want)
		}
	}
	readStatus("HTTP/1.1 204")
	c.Write([]byte("POST /stage/processed HTTP/1.1\r\nHost: x\r\nce-id: e2\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"))
	readStatus("HTTP/1.1 100 Continue")
	cmd.Process.Signal(syscall.SIGINT)
	for {
		probe, err := net.Dial("tcp", addr)
		if err != nil {
			break // the sink has closed its listener: it is shutting down
		}
		probe.Close()
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("the sink still accepts connections long after SIGINT; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Write([]byte("zz\r\n")) // not a chunk size: fasthttp gives up on the request
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
		t.Errorf("got no line from fasthttp about the failed request, want one, as JSON; stderr:\n%s", stderr.String())
	}
}
