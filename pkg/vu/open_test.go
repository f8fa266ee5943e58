package vu

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/http1"
)

// tsLine is a pair recorded at offset from a fixed time, in session (or none).
func tsLine(uri string, offset time.Duration, session string) string {
	ts := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).Add(offset).Format(time.RFC3339Nano)
	tags := ""
	if session != "" {
		tags = fmt.Sprintf(`"tags":{"session":%q},`, session)
	}
	return fmt.Sprintf(`{"ts":%q,%s"http":{"req":{"method":"GET","uri":%q,"host":"recorded:80"}}}`, ts, tags, uri)
}

// percentile of ns values, nearest rank.
func percentile(vals []int64, p float64) time.Duration {
	s := slices.Clone(vals)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return time.Duration(s[max(i, 0)])
}

func TestRateDeliversItsRate(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	start := time.Now()
	sink, st := runPool(t, openLines(t, manyLines(10)...), Config{Load: schedule.Load{Model: schedule.Rate, Rate: 200, VUs: 2, Walk: schedule.Loop, Duration: time.Second}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	took := time.Since(start)
	// The last slots may be cut by the stop if the box is busy at the end:
	// the exact count is for the benchmark (BenchmarkRateAccuracy).
	if st.Scheduled < 190 || st.Scheduled > 200 {
		t.Errorf("scheduled %d iterations, want 200 (200/s for 1s, −5%%)", st.Scheduled)
	}
	if n := int64(len(sink.Results())); n != st.Scheduled-st.Dropped {
		t.Errorf("sent %d requests, want scheduled − dropped = %d", n, st.Scheduled-st.Dropped)
	}
	if took > 3*time.Second {
		t.Errorf("a 1s run took %v", took)
	}
	// A drop is the generator's fault only when it was never behind: a
	// busy machine that held the VUs back shows it in requests begun
	// late, the generator's own lag.
	if st.Dropped != 0 && st.Late == 0 {
		t.Errorf("dropped %d with a fast server, none begun late (lag p99 %v, max %v)", st.Dropped, st.LagP99, st.LagMax)
	}
}

func TestRateDropsWhenThePoolIsFull(t *testing.T) {
	srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action {
		return loopback.Action{Status: 200, Stall: 100 * time.Millisecond}
	})
	start := time.Now()
	sink, st := runPool(t, openLines(t, manyLines(10)...), Config{Load: schedule.Load{Model: schedule.Rate, Rate: 200, VUs: 1, MaxVUs: 2, Walk: schedule.Loop, Duration: time.Second}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	took := time.Since(start)
	if st.VUs != 2 {
		t.Errorf("used %d VUs, want the pool to grow to --max-vus 2", st.VUs)
	}
	sent := int64(len(sink.Results()))
	if st.Dropped < 150 || st.Scheduled != st.Dropped+st.Iterations || sent != st.Iterations {
		t.Errorf("scheduled %d, dropped %d, begun %d, sent %d: want most dropped and the counts to add up", st.Scheduled, st.Dropped, st.Iterations, sent)
	}
	if took > 2500*time.Millisecond {
		t.Errorf("the run ended after %v, want about 1s", took)
	}
}

// TestCoordinatedOmission: one 1s stall in a session recorded at 10ms
// steps. Under recorded pacing the requests due during the stall wait and
// their latency (from due time) shows it at p99; their service time does
// not. The closed model hides it: latency there is service time.
func TestCoordinatedOmission(t *testing.T) {
	srv := loopback.NewRaw(t, func(n int64, _ []byte) loopback.Action {
		if n == 2 {
			return loopback.Action{Status: 200, Stall: time.Second}
		}
		return loopback.Action{Status: 200}
	})
	var lines []string
	for i := 0; i < 200; i++ {
		lines = append(lines, tsLine(fmt.Sprintf("/r/%d", i), time.Duration(i)*10*time.Millisecond, "s"))
	}
	f := openLines(t, lines...)
	sink, st := runPool(t, f, Config{Load: schedule.Load{Model: schedule.Recorded, VUs: 1}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	var lat, svc []int64
	for _, r := range sink.Results() {
		lat = append(lat, r.End-r.Due)
		svc = append(svc, r.End-r.Sent)
	}
	if len(lat) != 200 {
		t.Fatalf("got %d results, want 200", len(lat))
	}
	if p := percentile(lat, 99); p < 800*time.Millisecond {
		t.Errorf("recorded pacing: latency p99 %v, want the stall (≈1s) to show", p)
	}
	if p := percentile(svc, 99); p > 300*time.Millisecond {
		t.Errorf("recorded pacing: service p99 %v, want it small (one stall in 200)", p)
	}
	if st.Late < 50 {
		t.Errorf("late %d, want the requests due during the stall counted", st.Late)
	}

	closed, _ := runPool(t, f, Config{Load: schedule.Load{VUs: 1}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	lat = lat[:0]
	for _, r := range closed.Results() {
		lat = append(lat, r.End-r.Due)
	}
	if p := percentile(lat, 99); p > 300*time.Millisecond {
		t.Errorf("closed model: latency p99 %v, want the stall hidden (latency is service time there)", p)
	}
}

func TestRecordedPacingKeepsTheGaps(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	offsets := []time.Duration{0, 200 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond}
	var lines []string
	for i, off := range offsets {
		lines = append(lines, tsLine(fmt.Sprintf("/g/%d", i), off, ""))
	}
	// Listed out of time order: scheduled by time, and counted.
	lines[1], lines[2] = lines[2], lines[1]
	_, st := runPool(t, openLines(t, lines...), Config{Load: schedule.Load{Model: schedule.Recorded, Speed: 2, VUs: 1}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	at := srv.Arrivals()
	if len(at) != 4 {
		t.Fatalf("got %d requests, want 4", len(at))
	}
	for i, req := range srv.Requests() {
		if want := fmt.Sprintf("/g/%d ", i); !strings.Contains(string(req), want) {
			t.Errorf("request %d: %q, want %s in time order", i, strings.SplitN(string(req), "\r", 2)[0], want)
		}
		gap := at[i].Sub(at[0])
		want := offsets[i] / 2
		if d := gap - want; d < -20*time.Millisecond || d > 150*time.Millisecond {
			t.Errorf("request %d at %v after the first, want %v (speed 2)", i, gap, want)
		}
	}
	if st.OutOfOrder != 1 {
		t.Errorf("out of order: got %d, want 1", st.OutOfOrder)
	}
}

func TestThinkRecorded(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	f := openLines(t, tsLine("/a", 0, "s"), tsLine("/b", 300*time.Millisecond, "s"))
	runPool(t, f, Config{Load: schedule.Load{VUs: 1, Think: true}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	at := srv.Arrivals()
	if len(at) != 2 {
		t.Fatalf("got %d requests", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < 280*time.Millisecond || gap > 600*time.Millisecond {
		t.Errorf("think: gap %v, want the recorded 300ms", gap)
	}
	runPool(t, f, Config{Load: schedule.Load{VUs: 1}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	at = srv.Arrivals()
	if gap := at[3].Sub(at[2]); gap > 200*time.Millisecond {
		t.Errorf("without think: gap %v, want back to back", gap)
	}
}

func TestVUStages(t *testing.T) {
	srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action { return loopback.Action{Status: 200, Stall: 5 * time.Millisecond} })
	stages, _, err := schedule.ParseStages("4@400ms,1@400ms", false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sink, st := runPool(t, openLines(t, manyLines(10)...), Config{Load: schedule.Load{VUs: 1, Walk: schedule.Loop, Stages: stages}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("800ms of stages took %v", took)
	}
	if st.VUs != 4 {
		t.Errorf("VUs: got %d, want 4", st.VUs)
	}
	// Well into the second stage (it starts at 400ms; the target is
	// checked every 100ms), only VU 0 sends.
	late := map[uint32]bool{}
	base := st.Started.UnixNano()
	for _, r := range sink.Results() {
		if r.Due-base > int64(650*time.Millisecond) {
			late[r.VU] = true
		}
	}
	if len(late) != 1 || !late[0] {
		t.Errorf("VUs sending in the 1-VU stage: %v, want only VU 0", late)
	}
}
