package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/report"
)

// hostileLoad is the load of a run against a hostile peer: its VUs, the
// iterations it stops at (or its --duration, whichever comes first), and
// the per-request --timeout.
type hostileLoad struct {
	vus, iterations   int
	duration, timeout time.Duration
}

// hostileTally is what the peer saw: requests read, cases chosen by class.
type hostileTally struct {
	read   int64
	chosen [loopback.NumClasses]int64
	cases  []string
}

// hostilePeer starts the fuzzed peer of proto ("h1", "h2", or
// "h2-shared": h2c with the VUs sharing one connection) with its
// choices from src: its URL, the flags a run needs to speak to it, and a
// function that reads its tally.
func hostilePeer(t *testing.T, proto string, src loopback.Source) (url string, flags []string, tally func() hostileTally) {
	read := func(tl *loopback.Tally) hostileTally {
		out := hostileTally{read: tl.Read.Load(), cases: tl.Cases()}
		for c := range out.chosen {
			out.chosen[c] = tl.Chosen[c].Load()
		}
		return out
	}
	if proto == "h2" || proto == "h2-shared" {
		s := h2peer.NewHostileH2(t, h2peer.H2Cases, src)
		flags := []string{"--h2c"}
		if proto == "h2-shared" { // the VUs' streams on one connection at once
			flags = append(flags, "--streams", "4")
		}
		return s.URL(), flags, func() hostileTally { return read(&s.Tally) }
	}
	s := loopback.NewHostileH1(t, loopback.H1Cases, src)
	return s.URL(), nil, func() hostileTally { return read(&s.Tally) }
}

// hostileTraffic is a file of GETs and POSTs with bodies (no HEAD: the
// catalogue's answers have bodies).
func hostileTraffic(t *testing.T) string {
	var lines []string
	for i := range 6 {
		if i%2 == 0 {
			lines = append(lines, fmt.Sprintf(`{"http":{"req":{"method":"GET","uri":"/items/%d","host":"recorded:80"}}}`, i))
		} else {
			lines = append(lines, fmt.Sprintf(`{"http":{"req":{"method":"POST","uri":"/events/%d","host":"recorded:80","headers":{"Content-Type":["application/json"]},"body":"{\"n\":%d}"}}}`, i, i))
		}
	}
	return trafficFile(t, 0, lines...)
}

// heapWatch samples the heap in use until stop, and returns how far its
// peak rose above what it was at the start, after a collection (the
// process holds more than the run: under -fuzz, the fuzzer's corpus).
func heapWatch() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak - base }
}

// heapBound is how far the heap in use may rise during a run against a
// hostile peer at 4 VUs, the peer and the test included.
const heapBound = 64 << 20

// hostileRun runs replay against the fuzzed peer of proto, its choices
// from src, and holds the run to what the suite asserts of every seed:
// the summary is written; requests = succeeded + failed; the requests the
// peer read lie within the bounds of docs/strict.md (at least those answered, at
// most requests − connect − unsent + retried); no malformed answer counted
// (status 299 absent; no more successes than well-formed or racy answers);
// the run within --duration + --timeout + 2 s; the heap in use risen by
// under 64 MiB. It returns the requests the peer read. A panic anywhere in the
// run ends the test binary, which fails the test.
func hostileRun(t *testing.T, proto string, src loopback.Source, l hostileLoad, repro string) int64 {
	url, flags, tally := hostilePeer(t, proto, src)
	out := filepath.Join(t.TempDir(), "summary.json")
	args := append([]string{"run", "-f", hostileTraffic(t), "--target", url, "--vus", strconv.Itoa(l.vus),
		"--iterations", strconv.Itoa(l.iterations), "--duration", l.duration.String(), "--timeout", l.timeout.String(),
		"--grace", "1s", "--out", out, "-q", "--log-format", "json"}, flags...)
	stopHeap := heapWatch()
	start := time.Now()
	r := runMain(t, context.Background(), "", args...)
	took := time.Since(start)
	peak := stopHeap()
	tl := tally()
	fail := func(format string, a ...any) {
		t.Helper()
		stderr := r.stderr
		if len(stderr) > 2000 {
			stderr = "…" + stderr[len(stderr)-2000:]
		}
		t.Errorf("%s\nreproduce: %s\ncases drawn, in the order read:%s\nstderr: %s", fmt.Sprintf(format, a...), repro, loopback.Describe(tl.cases), stderr)
	}
	if r.code != 0 && r.code != exitThreshold {
		fail("replay exited %d", r.code)
		return tl.read
	}
	s, err := report.ReadSummaryFile(out)
	if err != nil {
		fail("no summary written: %v", err)
		return tl.read
	}
	if s.Requests != s.Succeeded+s.Failed {
		fail("requests %d ≠ succeeded %d + failed %d", s.Requests, s.Succeeded, s.Failed)
	}
	if most := s.Requests - s.Errors["connect"] - s.Unsent + s.Retried; tl.read < s.Answered || tl.read > most {
		fail("the peer read %d requests, want within [answered %d, requests %d − connect %d − unsent %d + retried %d = %d]",
			tl.read, s.Answered, s.Requests, s.Errors["connect"], s.Unsent, s.Retried, most)
	}
	if n := s.Status[strconv.Itoa(loopback.StatusBad)]; n != 0 {
		fail("%d malformed answers counted (status %d)", n, loopback.StatusBad)
	}
	if counted := tl.chosen[loopback.Good] + tl.chosen[loopback.Racy]; s.Succeeded > counted {
		fail("%d successes, but only %d answers were well-formed (or racy): a malformed one was counted", s.Succeeded, counted)
	}
	if most := l.duration + l.timeout + 2*time.Second; took > most {
		fail("the run took %v, want at most --duration + --timeout + 2s = %v", took, most)
	}
	if peak > heapBound {
		fail("heap in use rose by %d MiB, want under %d MiB", peak>>20, heapBound>>20)
	}
	return tl.read
}

// hostileSeeds is how many seeds each protocol runs, and their load: 10
// seeds × 60 iterations × 2 protocols make about 1,200 hostile answers.
const hostileSeeds = 10

var hostileSuiteLoad = hostileLoad{vus: 4, iterations: 60, duration: 10 * time.Second, timeout: 300 * time.Millisecond}

// TestHostilePeers runs replay against the fuzzed peer, seed after seed,
// over HTTP/1.1, HTTP/2 (h2c), and HTTP/2 with the VUs' streams sharing
// a connection (--streams), and holds each run to what
// hostileRun asserts. REPLAY_HOSTILE_SEED=N runs seed N alone (what a
// failing seed's report says to run).
func TestHostilePeers(t *testing.T) {
	seeds := make([]uint64, hostileSeeds)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	if v := os.Getenv("REPLAY_HOSTILE_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("REPLAY_HOSTILE_SEED=%q: want a number", v)
		}
		seeds = []uint64{n}
	}
	start := time.Now()
	var answers int64
	for _, proto := range []string{"h1", "h2", "h2-shared"} {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed=%d", proto, seed), func(t *testing.T) {
				repro := fmt.Sprintf("REPLAY_HOSTILE_SEED=%d go test -race -run 'TestHostilePeers/%s/seed=%d$' ./cmd/replay", seed, proto, seed)
				answers += hostileRun(t, proto, loopback.Seeded(seed), hostileSuiteLoad, repro)
			})
		}
	}
	t.Logf("%d seeds, %d hostile answers in %v", 3*len(seeds), answers, time.Since(start).Round(time.Millisecond))
}

// FuzzHostilePeers drives the fuzzed peer's catalogue with the fuzzer's
// bytes: the first chooses the protocol (HTTP/1.1, HTTP/2, or HTTP/2 on
// a connection the VUs share), the rest each case and its
// choices, request after request (0 once they run out: the catalogue's
// first case, "ok"). Each input is a short run held to what hostileRun
// asserts.
func FuzzHostilePeers(f *testing.F) {
	f.Add([]byte{0, 17, 200, 3, 99, 150, 42, 250, 7, 128, 64})
	f.Add([]byte{1, 17, 200, 3, 99, 150, 42, 250, 7, 128, 64})
	f.Add([]byte(strings.Repeat("\x01\xff\x80", 12)))
	f.Add([]byte{3, 17, 200, 3, 99, 150, 42, 250, 7, 128, 64})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		proto := [...]string{"h1", "h2", "h1", "h2-shared"}[b[0]%4] // the seeds' 0 and 1 as before
		repro := "go test -run 'FuzzHostilePeers/...' ./cmd/replay (the input is in testdata/fuzz/FuzzHostilePeers)"
		hostileRun(t, proto, loopback.NewFuzzBytes(b[1:]), hostileLoad{vus: 2, iterations: 12, duration: 5 * time.Second, timeout: 300 * time.Millisecond}, repro)
	})
}
