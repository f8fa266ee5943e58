package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawUpstream is a loopback HTTP/1.1 server that keeps every request's
// bytes as they arrived, and answers 200 "ok".
type rawUpstream struct {
	ln   net.Listener
	mu   sync.Mutex
	reqs [][]byte
}

func newRawUpstream(t *testing.T) *rawUpstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	return u
}

func (u *rawUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		var raw bytes.Buffer
		length := 0
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			raw.WriteString(line)
			if line == "\r\n" {
				break
			}
			if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "content-length") {
				length, _ = strconv.Atoi(strings.TrimSpace(value))
			}
		}
		if _, err := io.CopyN(&raw, br, int64(length)); err != nil {
			return
		}
		u.mu.Lock()
		u.reqs = append(u.reqs, raw.Bytes())
		u.mu.Unlock()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
	}
}

func (u *rawUpstream) requests() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([][]byte(nil), u.reqs...)
}

// TestRecordThenReplay records awkward requests through the capture proxy
// from a raw client, replays the recorded file, and checks a raw-capture
// server receives the same bytes as the upstream did while recording.
func TestRecordThenReplay(t *testing.T) {
	up := newRawUpstream(t)
	dir := t.TempDir()
	recorded := filepath.Join(dir, "recorded.jsonl")
	proxyAddr := freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan runResult)
	go func() {
		var out, errb strings.Builder
		code := Main(ctx, []string{"record", "--listen", proxyAddr, "--upstream", "http://" + up.ln.Addr().String(), "-o", recorded,
			"--redact-header", "X-Secret", "--log-level", "warn"}, strings.NewReader(""), &out, &errb)
		done <- runResult{code, out.String(), errb.String()}
	}()
	var c net.Conn
	for i := 0; i < 100; i++ {
		var err error
		if c, err = net.Dial("tcp", proxyAddr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c == nil {
		t.Fatal("the proxy did not start")
	}
	sent := []string{
		"GET //double/slash?x=%2F&y=a+b HTTP/1.1\r\nHost: svc.local\r\nx-lower: a\r\nX-Dup: 1\r\nX-Dup: 2\r\nAccept: */*\r\n\r\n",
		"POST /bin HTTP/1.1\r\nHost: svc.local\r\nContent-Type: application/octet-stream\r\nContent-Length: 5\r\n\r\n\x00\x01\xff\xfe\x02",
		"PUT /a%2Fb HTTP/1.1\r\nhost: svc.local\r\ncontent-length: 2\r\nX-Secret: hunter2\r\n\r\n{}",
	}
	br := bufio.NewReader(c)
	for _, req := range sent {
		io.WriteString(c, req)
		for { // the answer: head and "ok"
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line == "\r\n" {
				break
			}
		}
		io.ReadFull(br, make([]byte, 2))
	}
	c.Close()
	time.Sleep(50 * time.Millisecond)
	stop()
	if r := <-done; r.code != 0 {
		t.Fatalf("record: exit %d: %s", r.code, r.stderr)
	}
	// The upstream got the client's bytes unchanged.
	got := up.requests()
	if len(got) != 3 {
		t.Fatalf("upstream saw %d requests", len(got))
	}
	for i, want := range sent {
		if string(got[i]) != want {
			t.Errorf("through the proxy, request %d: got %q, want %q", i, got[i], want)
		}
	}
	rec, _ := os.ReadFile(recorded)
	if !strings.Contains(string(rec), `"X-Secret":["REDACTED"]`) || strings.Contains(string(rec), "hunter2") || !strings.Contains(string(rec), `"session":"c-1"`) {
		t.Errorf("recorded file:\n%s", rec)
	}

	// Replayed from the file, with the recorded Host: the same bytes
	// (but for the redacted header).
	again := newRawUpstream(t)
	r := runMain(t, context.Background(), "", "run", "-f", recorded, "--target", "http://"+again.ln.Addr().String(), "--keep-host", "--vus", "1", "-q")
	if r.code != 0 {
		t.Fatalf("replay: exit %d: %s", r.code, r.stderr)
	}
	replayed := again.requests()
	if len(replayed) != 3 {
		t.Fatalf("replay sent %d requests", len(replayed))
	}
	for i, want := range sent {
		want = strings.Replace(want, "hunter2", "REDACTED", 1)
		if string(replayed[i]) != want {
			t.Errorf("replayed request %d:\n got %q\nwant %q", i, replayed[i], want)
		}
	}
}

// TestRecordReplaysWithoutTarget: a client aimed at the recorder (its Host
// header the recorder's own address, as curl or a browser send it) is
// recorded with the upstream's authority as the pair's host: replayed
// without --target, the requests go to the upstream; with --target and
// --keep-host, the Host header goes out as the client sent it. The log
// counts what was written out of order.
func TestRecordReplaysWithoutTarget(t *testing.T) {
	up := newRawUpstream(t)
	recorded := filepath.Join(t.TempDir(), "recorded.jsonl")
	proxyAddr := freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan runResult)
	go func() {
		var out, errb strings.Builder
		code := Main(ctx, []string{"record", "--listen", proxyAddr, "--upstream", "http://" + up.ln.Addr().String(), "-o", recorded},
			strings.NewReader(""), &out, &errb)
		done <- runResult{code, out.String(), errb.String()}
	}()
	var resp *http.Response
	for i := 0; i < 100; i++ {
		var err error
		if resp, err = http.Post("http://"+proxyAddr+"/events", "application/json", strings.NewReader(`{"n":1}`)); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp == nil {
		t.Fatal("the recorder did not start")
	}
	resp.Body.Close()
	stop()
	r := <-done
	if r.code != 0 || !strings.Contains(r.stderr, `"out_of_order":0`) {
		t.Fatalf("record: exit %d: %s", r.code, r.stderr)
	}
	rec, _ := os.ReadFile(recorded)
	if !strings.Contains(string(rec), `"host":"`+up.ln.Addr().String()+`"`) || !strings.Contains(string(rec), `"Host":["`+proxyAddr+`"]`) {
		t.Fatalf("recorded: want the upstream's host and the client's Host header:\n%s", rec)
	}
	before := len(up.requests())
	if r := runMain(t, context.Background(), "", "run", "-f", recorded, "--vus", "1", "-q"); r.code != 0 {
		t.Fatalf("replay without --target: exit %d: %s", r.code, r.stderr)
	}
	if got := up.requests(); len(got) != before+1 || !strings.HasPrefix(string(got[before]), "POST /events HTTP/1.1\r\nHost: "+proxyAddr+"\r\n") {
		t.Errorf("the upstream got %d requests from the replay, want 1 as recorded: %q", len(got)-before, got[before:])
	}
	other := newRawUpstream(t)
	if r := runMain(t, context.Background(), "", "run", "-f", recorded, "--target", "http://"+other.ln.Addr().String(), "--keep-host", "--vus", "1", "-q"); r.code != 0 {
		t.Fatalf("replay --keep-host: exit %d: %s", r.code, r.stderr)
	}
	if got := other.requests(); len(got) != 1 || !strings.Contains(string(got[0]), "\r\nHost: "+proxyAddr+"\r\n") {
		t.Errorf("--keep-host sent %q, want the client's Host header", got)
	}
}
