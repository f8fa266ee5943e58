//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// vmRSS reads the VmRSS line of a /proc status file, in bytes.
func vmRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	_, rest, ok := bytes.Cut(b, []byte("VmRSS:"))
	if !ok {
		return 0
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) != 2 {
		return 0
	}
	kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return kb << 10
}

// TestRecordForwardSoak runs `record --forward` under steady load from
// legitimate keep-alive clients while hostile ones run beside them
// (slowloris heads a byte at a time, heads left half sent, bodies over
// --max-body): every legitimate exchange answered is recorded once,
// correctly, none of the hostile ones is, and the recorder's resident
// memory after the warm-up (the first third) stays within 20% of its
// peak during it. SOAK_SECONDS sets the length (15 by default: CI).
func TestRecordForwardSoak(t *testing.T) {
	secs := 15
	if s, err := strconv.Atoi(os.Getenv("SOAK_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	up := newBulkUpstream(t)
	host := up.addr
	dir := t.TempDir()
	rec := filepath.Join(dir, "out.jsonl")
	addr := freeAddr(t)
	cmd, stderr, exited := startRecorder(t, addr, "--forward", "--ca-out", filepath.Join(dir, "ca"), "-o", rec, "--allow-upstream", "127.0.0.0/8",
		"--max-body", "65536", "--head-timeout", "1s", "--idle-timeout", "2s")
	pid := cmd.Process.Pid
	start := time.Now()
	end := start.Add(time.Duration(secs) * time.Second)
	var wg sync.WaitGroup

	// Legitimate clients: keep-alive GETs and small POSTs, each with its
	// id, paced (about 400 exchanges a second in all).
	var ids sync.Map // id -> answered
	var nextID, answered, failed atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c net.Conn
			var br *bufio.Reader
			for time.Now().Before(end) {
				if c == nil {
					var err error
					if c, err = net.DialTimeout("tcp", addr, 2*time.Second); err != nil {
						failed.Add(1)
						time.Sleep(50 * time.Millisecond)
						continue
					}
					br = bufio.NewReader(c)
				}
				id := nextID.Add(1)
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if id%2 == 0 {
					fmt.Fprintf(c, "GET http://%s/16 HTTP/1.1\r\nHost: %s\r\nX-Id: %d\r\n\r\n", host, host, id)
				} else {
					fmt.Fprintf(c, "POST http://%s/16 HTTP/1.1\r\nHost: %s\r\nX-Id: %d\r\nContent-Length: 11\r\n\r\nhello world", host, host, id)
				}
				n := readHeadLenErr(br)
				if n != 16 {
					failed.Add(1)
					c.Close()
					c = nil
					continue
				}
				if _, err := io.CopyN(io.Discard, br, n); err != nil {
					failed.Add(1)
					c.Close()
					c = nil
					continue
				}
				ids.Store(id, true)
				answered.Add(1)
				time.Sleep(10 * time.Millisecond)
			}
			if c != nil {
				c.Close()
			}
		}()
	}
	// Hostile clients, each kind in a loop of its own.
	hostile := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				f()
			}
		}()
	}
	hostile(func() { // slowloris: a header byte every 200 ms, never whole
		c, err := net.Dial("tcp", addr)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			return
		}
		defer c.Close()
		fmt.Fprintf(c, "GET http://%s/16 HTTP/1.1\r\nHost: %s\r\n", host, host)
		for time.Now().Before(end) {
			if _, err := io.WriteString(c, "X"); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	for range 4 {
		hostile(func() { // half a head, then silence until the recorder closes it
			c, err := net.Dial("tcp", addr)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "POST http://%s/16 HTTP/1.1\r\nHost: %s\r\nX-Half: ", host, host)
			c.SetReadDeadline(end)
			io.Copy(io.Discard, c)
		})
	}
	hostile(func() { // an 8 MiB body, over --max-body: passed on, not recorded
		c, err := net.Dial("tcp", addr)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		const size = 8 << 20
		fmt.Fprintf(c, "POST http://%s/16 HTTP/1.1\r\nHost: %s\r\nX-Big: 1\r\nContent-Length: %d\r\n\r\n", host, host, size)
		chunk := make([]byte, 64<<10)
		for i := 0; i < size/len(chunk); i++ {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		br := bufio.NewReader(c)
		if n := readHeadLenErr(br); n > 0 {
			io.CopyN(io.Discard, br, n)
		}
	})

	// The recorder's resident memory, every 250 ms.
	type sample struct {
		at  time.Duration
		rss int64
	}
	var samples []sample
	for time.Now().Before(end) {
		samples = append(samples, sample{time.Since(start), vmRSS(pid)})
		time.Sleep(250 * time.Millisecond)
	}
	wg.Wait()
	cmd.Process.Signal(syscall.SIGINT)
	<-exited

	warm := time.Duration(secs) * time.Second / 3
	var warmPeak, afterPeak int64
	for _, s := range samples {
		if s.at < warm {
			warmPeak = max(warmPeak, s.rss)
		} else {
			afterPeak = max(afterPeak, s.rss)
		}
	}
	t.Logf("%d s: %d legitimate exchanges answered (%.0f/s), %d failed; resident memory peak %d MiB in the warm-up, %d MiB after",
		secs, answered.Load(), float64(answered.Load())/float64(secs), failed.Load(), warmPeak>>20, afterPeak>>20)
	if warmPeak == 0 {
		t.Fatal("no resident memory read")
	}
	if afterPeak > warmPeak*12/10 {
		t.Errorf("resident memory after the warm-up peaked at %d MiB, over 120%% of the warm-up's %d MiB", afterPeak>>20, warmPeak>>20)
	}
	if failed.Load() > 0 {
		t.Errorf("%d legitimate exchanges failed, want none", failed.Load())
	}
	if answered.Load() < int64(secs)*20 {
		t.Errorf("only %d legitimate exchanges in %d s: the recorder barely served", answered.Load(), secs)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	recorded := map[int64]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var p struct {
			HTTP struct {
				Req struct {
					Method  string              `json:"method"`
					Headers map[string][]string `json:"headers"`
					Body    string              `json:"body"`
				} `json:"req"`
				Res struct {
					Status int    `json:"statusCode"`
					Body   string `json:"body"`
				} `json:"res"`
			} `json:"http"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("a line that is not JSON: %v: %.200s", err, line)
		}
		h := p.HTTP.Req.Headers
		if h["X-Half"] != nil || h["X-Big"] != nil {
			t.Errorf("a hostile exchange was recorded: %.200s", line)
			continue
		}
		id, _ := strconv.ParseInt(strings.Join(h["X-Id"], ""), 10, 64)
		wantBody := ""
		if id%2 == 1 {
			wantBody = "hello world"
		}
		if p.HTTP.Res.Status != 200 || p.HTTP.Req.Body != wantBody || len(p.HTTP.Res.Body) != 16 {
			t.Errorf("exchange %d recorded wrong: %.300s", id, line)
		}
		recorded[id]++
	}
	missing := 0
	ids.Range(func(k, _ any) bool {
		if recorded[k.(int64)] != 1 {
			missing++
		}
		return true
	})
	if missing > 0 || int64(len(recorded)) != answered.Load() {
		t.Errorf("%d of %d answered exchanges not recorded exactly once (%d ids recorded)", missing, answered.Load(), len(recorded))
	}
}

// readHeadLenErr reads an answer's head and returns its Content-Length;
// -1 when the head does not come.
func readHeadLenErr(br *bufio.Reader) int64 {
	var n int64 = -1
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			return -1
		}
		if h == "\r\n" {
			return n
		}
		if name, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(name, "content-length") {
			n, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
}
