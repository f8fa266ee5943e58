package vu

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/http1"
	"github.com/rs/zerolog"
)

// The helpers shared with the other engine tests (internal/testutil/fixture).
type collect = fixture.Collect

var (
	openLines = fixture.OpenLines
	line      = fixture.Line
)

// runPool runs f with cfg (one VU unless it says) over an HTTP/1.1
// transport with o (a 5s timeout unless it says), as a caller does:
// validated first.
func runPool(t testing.TB, f *rrpair.File, cfg Config, o http1.Options) (*collect, result.Counters) {
	t.Helper()
	sink := &collect{}
	if cfg.VUs == 0 {
		cfg.VUs = 1
	}
	if o.Conn.Timeout == 0 {
		o.Conn.Timeout = 5 * time.Second
	}
	cfg.Log = zerolog.Nop()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := &Pool{File: f, Config: cfg, Sink: sink, Transport: newTransport(t, o)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := p.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sink, st
}

// newTransport is an HTTP/1.1 transport with o.
func newTransport(t testing.TB, o http1.Options) *http1.Transport {
	t.Helper()
	tr, err := http1.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func jsonNum(n int) string { b, _ := json.Marshal(n); return string(b) }

func manyLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = line("GET", "/p/"+jsonNum(i), "", nil)
	}
	return lines
}

func TestOneConnectionPerVU(t *testing.T) {
	srv := loopback.NewRaw(t, func(n int64, _ []byte) loopback.Action {
		return loopback.Action{Status: 200, Body: "ok", Stall: time.Millisecond}
	})
	const vus = 5
	sink, st := runPool(t, openLines(t, manyLines(10)...), Config{Load: schedule.Load{VUs: vus, Walk: schedule.Loop, Iterations: 300}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	if st.Iterations != 300 || len(sink.Results()) != 300 {
		t.Fatalf("got %d iterations, %d results; want 300", st.Iterations, len(sink.Results()))
	}
	srv.Close()
	if got := srv.Conns(); got != vus {
		t.Errorf("server saw %d connections, want %d", got, vus)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Connected }); n != vus {
		t.Errorf("results opened %d connections, want %d", n, vus)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Reconnect }); n != 0 {
		t.Errorf("got %d reconnects, want 0", n)
	}
}

func TestOnceRunsEveryIterationOnce(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	lines := manyLines(40)
	lines[3] = `{"tags":{"session":"s"},` + lines[3][1:]
	lines[30] = `{"tags":{"session":"s"},` + lines[30][1:]
	sink, st := runPool(t, openLines(t, lines...), Config{Load: schedule.Load{VUs: 4}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	if st.Iterations != 39 {
		t.Errorf("got %d iterations, want 39", st.Iterations)
	}
	seen := map[string]int{}
	for _, req := range srv.Requests() {
		seen[strings.Fields(string(req))[1]]++
	}
	if len(seen) != 40 || len(sink.Results()) != 40 {
		t.Errorf("got %d distinct requests, %d results; want 40", len(seen), len(sink.Results()))
	}
	for uri, n := range seen {
		if n != 1 {
			t.Errorf("%s sent %d times", uri, n)
		}
	}
}

func TestLoopDurationStops(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	start := time.Now()
	sink, st := runPool(t, openLines(t, manyLines(3)...), Config{Load: schedule.Load{VUs: 2, Walk: schedule.Loop, Duration: 300 * time.Millisecond}}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	took := time.Since(start)
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("run took %v, want about 300ms", took)
	}
	if n := len(sink.Results()); n < 3 {
		t.Errorf("got %d results, want the file walked at least once", n)
	}
	if issued := st.Stopped.Sub(st.Started); issued < 300*time.Millisecond {
		t.Errorf("issuing stopped after %v, want ≥ 300ms", issued)
	}
}

func TestStopLetsInFlightFinishThenCancels(t *testing.T) {
	srv := loopback.NewRaw(t, func(n int64, _ []byte) loopback.Action {
		if n == 1 {
			return loopback.Action{Status: 200, Stall: 100 * time.Millisecond} // finishes within the grace
		}
		return loopback.Action{Status: 200, Stall: 10 * time.Second} // does not
	})
	f := openLines(t, manyLines(4)...)
	sink := &collect{}
	p := &Pool{File: f, Sink: sink, Config: Config{Load: schedule.Load{VUs: 2, Walk: schedule.Loop}, Grace: 300 * time.Millisecond, Log: zerolog.Nop()},
		Transport: newTransport(t, http1.Options{Conn: conn.Options{Target: srv.URL(), Timeout: 20 * time.Second}})}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	st, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %v, want about the grace", took)
	}
	if !st.Interrupted {
		t.Error("Interrupted is false")
	}
	res := sink.Results()
	if len(res) != 2 {
		t.Fatalf("got %d results, want the 2 in flight: %+v", len(res), res)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrCancelled }); n != 1 {
		t.Errorf("got %d cancelled, want 1: %+v", n, res)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Status == 200 }); n != 1 {
		t.Errorf("got %d answered, want 1: %+v", n, res)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no vus", Config{}, "--vus"},
		{"max-vus with closed", Config{Load: schedule.Load{VUs: 1, MaxVUs: 5}}, "--max-vus"},
		{"rate without a rate", Config{Load: schedule.Load{VUs: 1, Model: schedule.Rate}}, "--rate"},
		{"think with rate", Config{Load: schedule.Load{VUs: 1, Model: schedule.Rate, Rate: 5, Think: true}}, "--think"},
		{"max below vus", Config{Load: schedule.Load{VUs: 5, MaxVUs: 2, Model: schedule.Rate, Rate: 5}}, "--max-vus"},
		{"precise pacing closed", Config{Load: schedule.Load{VUs: 1}, PrecisePacing: true}, "--precise-pacing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// A file with no iteration (a shard that got none) is refused before any
// VU starts, under every model, rather than divided by.
func TestNoIterationRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(line("GET", "/a", "", nil)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := rrpair.Open(path, rrpair.Options{Shard: rrpair.Shard{Index: 1, Count: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := f.Iterations(); n != 0 {
		t.Fatalf("shard 1/2 of one pair has %d iterations, want 0", n)
	}
	for _, cfg := range []Config{{Load: schedule.Load{VUs: 1}}, {Load: schedule.Load{VUs: 1, Model: schedule.Rate, Rate: 100, Duration: time.Second}}} {
		p := &Pool{File: f, Config: cfg, Sink: &collect{}, Transport: newTransport(t, http1.Options{Conn: conn.Options{Target: "http://127.0.0.1:1"}})}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := p.Run(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "no iteration to replay") {
			t.Errorf("%s model: got %v, want a refusal naming no iteration", cfg.Model, err)
		}
	}
}
