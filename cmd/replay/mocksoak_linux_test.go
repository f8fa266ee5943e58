//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestMockSoak: the mock under steady load (16 workers paced to 5,000
// calls a second in all, REPLAY_SOAK_RATE; each waits for its answer, so
// a busy machine issues fewer) for a bounded time (15 s, REPLAY_SOAK=60s for
// a longer run) while hostile clients run beside it — slowloris (a head a
// byte at a time), heads cut short, 64 MiB bodies, HTTP/2 streams opened
// and reset at once — answers every legitimate call, each correctly, and
// its resident memory stays flat after warm-up: the last third's mean
// within 20% of the first third's, after a warm-up of a quarter of the
// run. The rate achieved is logged beside the target (the machine is
// shared: it is not judged).
func TestMockSoak(t *testing.T) {
	dur, rate := 15*time.Second, 5000
	if v := os.Getenv("REPLAY_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("REPLAY_SOAK=%s: %v", v, err)
		}
		dur = d
	}
	if v := os.Getenv("REPLAY_SOAK_RATE"); v != "" {
		rate, _ = strconv.Atoi(v)
	}
	out := filepath.Join(t.TempDir(), "mock.json")
	// The mock runs as a plain build: the test binary, built with the race
	// detector, keeps shadow memory that grows with every address the heap
	// touches, which is not the mock's memory (a 15 s soak under -race read
	// 122 → 149 MiB where the plain binary stays near 38 MiB).
	bin := plainReplay(t)
	m := startMock(t, func(c *exec.Cmd) { c.Path, c.Args[0] = bin, bin }, "-f", uploadTraffic(t), "--listen", "127.0.0.1:0", "--latency", "0", "--head-timeout", "1s", "--idle-timeout", "5s", "--out", out, "-q")
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()

	var sent, good, wrong, failed atomic.Int64
	var firstErr atomic.Value
	const workers = 16
	var wg sync.WaitGroup
	began := time.Now()
	for w := range workers {
		wg.Go(func() {
			var c *http.Client
			if w%4 == 3 {
				c = h2cClient()
			} else {
				c = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 10 * time.Second}
			}
			c.Timeout = 10 * time.Second
			every := time.Duration(workers) * time.Second / time.Duration(rate)
			next := time.Now()
			for i := 0; ctx.Err() == nil; i++ {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				next = next.Add(every)
				sent.Add(1)
				status, body, err := legitCall(c, m.addr, i%10 == 0)
				switch {
				case err != nil:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				case i%10 == 0 && (status != 201 || body != "stored"), i%10 != 0 && (status != 200 || body != "x"):
					wrong.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Errorf("answer %d %q", status, body))
				default:
					good.Add(1)
				}
			}
		})
	}
	var hostile [4]atomic.Int64 // slowloris, cut heads, huge bodies, h2 resets
	for k, fn := range []func() bool{
		func() bool { return slowloris(ctx, m.addr) },
		func() bool { return cutHead(ctx, m.addr) },
		func() bool {
			st, err := postHuge(m.addr, 64<<20, hostile[2].Load()%2 == 1)
			return err == nil && st == 413
		},
		func() bool { return rapidResets(ctx, m.addr, 500) },
	} {
		if only := os.Getenv("REPLAY_SOAK_HOSTILE"); only != "" && !strings.Contains(only, strconv.Itoa(k)) {
			hostile[k].Store(-1)
			continue
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				if fn() {
					hostile[k].Add(1)
				}
			}
		})
	}
	var rss []int64
	status := fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid)
	for tick := time.NewTicker(250 * time.Millisecond); ctx.Err() == nil; <-tick.C {
		if v, ok := procField(status, "VmRSS:"); ok {
			rss = append(rss, v)
		}
	}
	wg.Wait()
	elapsed := time.Since(began)
	peak, code := m.stop(t, syscall.SIGTERM)
	if code != 143 {
		t.Errorf("exit %d, want 143:\n%s", code, m.stderr.String())
	}
	warm := len(rss) / 4
	after := rss[warm:]
	third := max(1, len(after)/3)
	first, last := mean(after[:third]), mean(after[len(after)-third:])
	t.Logf("%v: target %d calls/s (%d due by the schedule), %d issued (each worker waits for its answer), %d answered correctly (%.0f calls/s achieved), %d wrong, %d failed; hostile: %d slowloris, %d cut heads, %d 64 MiB bodies refused, %d HTTP/2 reset bursts of 500 streams",
		elapsed.Round(time.Millisecond), rate, int64(float64(rate)*elapsed.Seconds()), sent.Load(), good.Load(), float64(good.Load())/elapsed.Seconds(), wrong.Load(), failed.Load(),
		hostile[0].Load(), hostile[1].Load(), hostile[2].Load(), hostile[3].Load())
	t.Logf("resident memory after warm-up: first third %.1f MiB, last third %.1f MiB (%+.1f%%), min %.1f, max %.1f MiB; peak %.1f MiB",
		mib(first), mib(last), 100*(last/first-1), mib(float64(minOf(after))), mib(float64(maxOf(after))), mib(float64(peak)))
	if wrong.Load() != 0 || failed.Load() != 0 || good.Load() != sent.Load() {
		t.Errorf("%d of %d legitimate calls answered correctly (%d wrong, %d failed; first: %v)", good.Load(), sent.Load(), wrong.Load(), failed.Load(), firstErr.Load())
	}
	if last > 1.2*first {
		t.Errorf("resident memory grew %.0f%% after warm-up (%.1f to %.1f MiB), want within 20%%", 100*(last/first-1), mib(first), mib(last))
	}
	for k := range hostile {
		if hostile[k].Load() == 0 {
			t.Errorf("hostile client %d never completed: it did not run beside the load", k)
		}
	}
	raw, _ := os.ReadFile(out)
	if !bytes.Contains(raw, []byte(`"bodies_over_limit": `)) || bytes.Contains(raw, []byte(`"bodies_over_limit": 0,`)) {
		t.Errorf("report: the refused bodies are not counted:\n%.600s", raw)
	}
}

// legitCall is a recorded call: GET /x, or with upload POST /upload.
func legitCall(c *http.Client, addr string, upload bool) (int, string, error) {
	req, _ := http.NewRequest("GET", "http://"+addr+"/x", nil)
	if upload {
		req, _ = http.NewRequest("POST", "http://"+addr+"/upload", strings.NewReader("small"))
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), err
}

// slowloris sends a head a byte every 100 ms until the mock closes the
// connection; true when it did (within --head-timeout's second, give or
// take the machine).
func slowloris(ctx context.Context, addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	head := "GET /x HTTP/1.1\r\nHost: dep.internal\r\nX-Slow: " + strings.Repeat("a", 200)
	for i := 0; i < len(head) && ctx.Err() == nil; i++ {
		if _, err := c.Write([]byte{head[i]}); err != nil {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// cutHead sends part of a head and waits for the mock to close.
func cutHead(ctx context.Context, addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: dep.int")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.Copy(io.Discard, c)
	return err == nil && ctx.Err() == nil
}

// rapidResets opens n HTTP/2 streams on one h2c connection, resetting
// each at once (CANCEL), then sends a PING and waits for its ACK (the
// mock has read every frame before it: the client goes at the mock's
// pace, one connection at a time), and closes. true when the burst was
// read through (the ACK), or the mock ended the connection (a GOAWAY:
// it defended itself).
func rapidResets(ctx context.Context, addr string, n int) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	bw := bufio.NewWriter(c)
	bw.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(bw, bufio.NewReader(c))
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "dep.internal"}, {":path", "/x"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for i := range n {
		if ctx.Err() != nil {
			return false
		}
		id := uint32(2*i + 1)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
		fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	fr.WritePing(false, [8]byte{'s', 'o', 'a', 'k'})
	if bw.Flush() != nil {
		return true
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return errors.Is(err, io.EOF)
		}
		switch f := f.(type) {
		case *http2.PingFrame:
			if f.IsAck() {
				return true
			}
		case *http2.GoAwayFrame:
			return true
		}
	}
}

// procField reads a "Name: N kB" line of a /proc status file, in bytes.
func procField(path, name string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	_, rest, ok := bytes.Cut(b, []byte(name))
	if !ok {
		return 0, false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) != 2 {
		return 0, false
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	return kb << 10, err == nil
}

func mean(v []int64) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(max(1, len(v)))
}

func minOf(v []int64) int64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []int64) int64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func mib(b float64) float64 { return b / (1 << 20) }

// plainReplay builds replay without the race detector into the test's
// temporary folder and returns its path, for a measure of a process's own
// memory.
func plainReplay(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "replay")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
