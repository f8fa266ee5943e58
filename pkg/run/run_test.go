package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/rs/zerolog"
)

// sut is a loopback server that counts the requests it answers, each
// after delay, with status.
type sut struct {
	*httptest.Server
	count atomic.Int64
	conns atomic.Int64
}

func newSUT(t *testing.T, delay time.Duration, status int) *sut {
	s := &sut{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.count.Add(1)
		io.Copy(io.Discard, r.Body)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(status)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// trafficFile writes n event POSTs in 7 sessions, then the extra lines.
func trafficFile(t *testing.T, n int, extra ...string) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"tags":{"session":"s%d"},"http":{"req":{"method":"POST","uri":"/events/%d","host":"recorded:80","body":"{\"n\":%d}"},"res":{"statusCode":202}}}`+"\n", i%7, i, i)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// options are a run of file against target with 2 VUs, each iteration of
// the file once.
func options(file, target string) Options {
	o := DefaultOptions()
	o.File, o.Load.Target, o.Load.VUs, o.Log = file, target, 2, zerolog.Nop()
	o.Load.Mode = "once"
	return o
}

// execute runs Execute and fails the test when it outlives bound.
func execute(t *testing.T, ctx context.Context, o Options, bound time.Duration) (*report.Summary, error) {
	t.Helper()
	type ret struct {
		s   *report.Summary
		err error
	}
	done := make(chan ret, 1)
	go func() {
		s, err := Execute(ctx, o)
		done <- ret{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(bound):
		t.Fatalf("Execute did not return within %v", bound)
		return nil, nil
	}
}

func TestExecute(t *testing.T) {
	srv := newSUT(t, 0, 202)
	o := options(trafficFile(t, 30), srv.URL)
	var plans, lives, stops int
	o.Ready = func(p Plan) error {
		plans++
		if len(p.Endpoints) != 1 || p.Endpoints[0] != "POST /events/{id}" || len(p.Settings) == 0 {
			t.Errorf("plan %+v, want the file's one endpoint and settings", p)
		}
		return nil
	}
	o.Live = func(src recording.LiveView) (func(), error) {
		lives++
		if l := src.Now(); l.VUs != 0 || l.Requests != 0 {
			t.Errorf("live counters before the run: %d VUs, %d requests", l.VUs, l.Requests)
		}
		return func() {
			stops++
			if vus := src.Now().VUs; vus != 2 {
				t.Errorf("live VUs after the run: %d, want 2", vus)
			}
		}, nil
	}
	s, err := execute(t, context.Background(), o, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != 30 || s.Succeeded != 30 || s.Failed != 0 || srv.count.Load() != 30 {
		t.Errorf("requests %d, succeeded %d, failed %d, the SUT counted %d: want 30, 30, 0, 30", s.Requests, s.Succeeded, s.Failed, srv.count.Load())
	}
	if s.Model != "closed" || s.VUsMax != 2 || s.Status["202"] != 30 {
		t.Errorf("model %s, VUs %d, status %v: want closed, 2, 202:30", s.Model, s.VUsMax, s.Status)
	}
	if plans != 1 || lives != 1 || stops != 1 {
		t.Errorf("Ready called %d times, Live %d, its stop %d: want 1 each", plans, lives, stops)
	}
}

// TestExecuteAborted: a threshold broken for good stops the run early;
// the full summary comes back with ErrAborted, naming the threshold.
func TestExecuteAborted(t *testing.T) {
	srv := newSUT(t, 2*time.Millisecond, 500)
	o := options(trafficFile(t, 10), srv.URL)
	o.Load.Mode, o.Load.Duration, o.Load.Iterations = "loop", 10*time.Second, 2000
	o.Thresholds, o.AbortOnFail = []string{"errors<20"}, true
	start := time.Now()
	s, err := execute(t, context.Background(), o, 20*time.Second)
	if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "errors<20") {
		t.Fatalf("got %v, want ErrAborted naming errors<20", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the run went on for %v after the threshold broke", took)
	}
	if s == nil || s.Failed < 20 || s.Requests != srv.count.Load() {
		t.Fatalf("summary %+v, want the requests sent (the SUT counted %d), 20 or more failed", s, srv.count.Load())
	}
}

// TestExecuteInterrupted: a cancelled context stops the run; the full
// summary comes back with ErrInterrupted and the context's cause.
func TestExecuteInterrupted(t *testing.T) {
	srv := newSUT(t, 10*time.Millisecond, 200)
	o := options(trafficFile(t, 10), srv.URL)
	o.Load.Mode, o.Load.Duration, o.Load.Iterations = "loop", 10*time.Second, 1000
	signal := errors.New("stopped by test signal")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	time.AfterFunc(300*time.Millisecond, func() { cancel(signal) })
	s, err := execute(t, ctx, o, 20*time.Second)
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, signal) {
		t.Fatalf("got %v, want ErrInterrupted with the context's cause", err)
	}
	if s == nil || s.Requests == 0 || s.Requests != srv.count.Load() || s.Succeeded != s.Requests {
		t.Fatalf("summary %+v, want every request the SUT counted (%d), all succeeded", s, srv.count.Load())
	}
}

// TestExecuteBadInputSendsNothing: every bad option or input fails before
// the first connection, naming the flag (or the file and line), and
// leaves the caller's hooks uncalled when it is found first.
func TestExecuteBadInputSendsNothing(t *testing.T) {
	srv := newSUT(t, 0, 200)
	good := trafficFile(t, 5)
	bad := trafficFile(t, 2, `not json`)
	for _, tt := range []struct {
		name  string
		edit  func(*Options)
		want  []string
		ready bool // Ready is called: the error comes after it
	}{
		{"bad line", func(o *Options) { o.File = bad }, []string{bad + ":3:1: invalid JSON"}, false},
		{"no file", func(o *Options) { o.File = "" }, []string{"--file: required"}, false},
		{"bad rate and timeout", func(o *Options) { o.Load.Rate, o.HTTP.Timeout = "fast", 0 }, []string{"--rate: want a rate", "--timeout: want a positive duration"}, false},
		{"bad mode", func(o *Options) { o.Load.Mode = "twice" }, []string{"--mode: want once or loop"}, false},
		{"zero vus", func(o *Options) { o.Load.VUs = 0 }, []string{"--vus: want at least 1"}, false},
		{"bad target", func(o *Options) { o.Load.Target = "localhost:80" }, []string{"--target"}, false},
		{"zero timeout", func(o *Options) { o.HTTP.Timeout = 0 }, []string{"--timeout: want a positive duration"}, false},
		{"bad host map", func(o *Options) { o.HTTP.HostMap = []string{"nohost"} }, []string{"--host-map", "want HOST=URL"}, false},
		{"bad shard", func(o *Options) { o.Shard.Shard = "3/3" }, []string{"--shard: want i/n"}, false},
		{"shards without index", func(o *Options) { o.Shard.Shards = 2 }, []string{"--shards 2: want JOB_COMPLETION_INDEX"}, false},
		{"unknown threshold endpoint", func(o *Options) { o.Thresholds = []string{"GET /nope: p99<1s"} }, []string{"--threshold", `no endpoint "GET /nope"`}, false},
		{"match without compare", func(o *Options) { o.Thresholds = []string{"match>99%"} }, []string{"--threshold: match needs --compare"}, false},
		{"bad set-header", func(o *Options) { o.Transforms.SetHeaders = []string{"NoColon"} }, []string{"--set-header"}, false},
		{"bad correlate", func(o *Options) { o.Events.Correlate = "sideways" }, []string{"--correlate"}, false},
		{"lost threshold, HTTP sink", func(o *Options) {
			o.Events.Correlate, o.Events.HTTP, o.Thresholds = "header", "127.0.0.1:0", []string{"lost<1%"}
		}, []string{`--threshold "lost<1%"`, "no sink of this run can prove an event lost", "pending<1%"}, false},
		{"lost threshold, no sink", func(o *Options) { o.Events.Correlate, o.Thresholds = "header", []string{"lost<=0"} }, []string{`--threshold "lost<=0"`, "no sink"}, false},
		{"dump-max", func(o *Options) { o.DumpFailures, o.DumpMax = filepath.Join(t.TempDir(), "d"), 0 }, []string{"--dump-max"}, false},
		{"unwritable dump", func(o *Options) { o.DumpFailures = filepath.Join(t.TempDir(), "no", "d") }, []string{"--dump-failures"}, true},
		{"pace without ts", func(o *Options) { o.Load.Pace = "recorded" }, []string{"no ts to pace by"}, true},
		{"bad http2", func(o *Options) { o.HTTP.HTTP2 = "maybe" }, []string{"--http2: want auto, on or off"}, false},
		{"h2c and http2 off", func(o *Options) { o.HTTP.HTTP2, o.HTTP.H2C = "off", true }, []string{"--h2c and --http2 off"}, false},
		{"gRPC without h2c", func(o *Options) {
			o.File = trafficFile(t, 2, `{"http":{"req":{"method":"POST","uri":"/s.S/M","host":"recorded:80","headers":{"content-type":["application/grpc"]},"bodyBase64":"AAAAAAA="}}}`)
		}, []string{":3: a gRPC call", "add --h2c"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := options(good, srv.URL)
			readied := false
			o.Ready = func(Plan) error { readied = true; return nil }
			o.Live = func(recording.LiveView) (func(), error) { return nil, nil }
			tt.edit(&o)
			s, err := execute(t, context.Background(), o, 10*time.Second)
			if s != nil || err == nil {
				t.Fatalf("got a summary %v, error %v; want none and an error", s, err)
			}
			for _, w := range append(tt.want, "nothing was sent") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if readied != tt.ready {
				t.Errorf("Ready called: %v, want %v", readied, tt.ready)
			}
			if n := srv.conns.Load(); n != 0 {
				t.Fatalf("the SUT saw %d connections, want none", n)
			}
		})
	}
}

// TestExecuteHookErrors: an error of Ready or Live ends the run with
// nothing sent.
func TestExecuteHookErrors(t *testing.T) {
	srv := newSUT(t, 0, 200)
	hookErr := errors.New("--out: no room")
	for name, edit := range map[string]func(*Options){
		"ready": func(o *Options) { o.Ready = func(Plan) error { return hookErr } },
		"live":  func(o *Options) { o.Live = func(recording.LiveView) (func(), error) { return nil, hookErr } },
	} {
		t.Run(name, func(t *testing.T) {
			o := options(trafficFile(t, 5), srv.URL)
			edit(&o)
			s, err := execute(t, context.Background(), o, 10*time.Second)
			if s != nil || !errors.Is(err, hookErr) || !strings.Contains(err.Error(), "nothing was sent") {
				t.Errorf("got %v, %v; want no summary and the hook's error, nothing sent", s, err)
			}
			if n := srv.conns.Load(); n != 0 {
				t.Errorf("the SUT saw %d connections, want none", n)
			}
		})
	}
}

// TestExecuteDryRun writes the requests as they would go, with the
// transforms of the flags, and sends nothing.
func TestExecuteDryRun(t *testing.T) {
	srv := newSUT(t, 0, 200)
	var out bytes.Buffer
	o := options(trafficFile(t, 5), srv.URL)
	o.DryRun, o.DryRunTo = 2, &out
	o.Transforms.SetHeaders = []string{"X-Env: dry"}
	o.Ready = func(Plan) error { t.Error("Ready called on a dry run"); return nil }
	s, err := execute(t, context.Background(), o, 10*time.Second)
	if s != nil || err != nil {
		t.Fatalf("got %v, %v; want neither summary nor error", s, err)
	}
	if got := strings.Count(out.String(), "### "); got != 2 || !strings.Contains(out.String(), "X-Env: dry\r\n") {
		t.Errorf("dry run wrote %d requests:\n%s", got, out.String())
	}
	if n := srv.conns.Load(); n != 0 {
		t.Errorf("the SUT saw %d connections during a dry run", n)
	}
}

// TestExecuteDryRunHTTP2: with --h2c a dry run shows the header list.
func TestExecuteDryRunHTTP2(t *testing.T) {
	var out bytes.Buffer
	o := options(trafficFile(t, 1), "http://127.0.0.1:9")
	o.DryRun, o.DryRunTo, o.HTTP.H2C = 1, &out, true
	if s, err := execute(t, context.Background(), o, 10*time.Second); s != nil || err != nil {
		t.Fatalf("got %v, %v; want neither summary nor error", s, err)
	}
	want := ":method: POST\n:scheme: http\n:authority: 127.0.0.1:9\n:path: /events/0\ncontent-length: 7\n\n{\"n\":0}"
	if !strings.Contains(out.String(), want) {
		t.Errorf("dry run wrote:\n%s\nwant the header list:\n%s", out.String(), want)
	}
}

// TestExecuteH2C runs over cleartext HTTP/2: every request answered, on
// one connection per VU.
func TestExecuteH2C(t *testing.T) {
	var count, h2 atomic.Int64
	addr, conns := serveH2C(t, func(w http.ResponseWriter, r *http.Request) {
		count.Add(1)
		if r.ProtoMajor == 2 {
			h2.Add(1)
		}
		w.WriteHeader(202)
	})
	o := options(trafficFile(t, 20), "http://"+addr)
	o.HTTP.H2C = true
	s, err := execute(t, context.Background(), o, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != 20 || s.Succeeded != 20 || count.Load() != 20 || h2.Load() != 20 || conns.Load() != 2 {
		t.Errorf("requests %d, succeeded %d; the SUT saw %d (%d over HTTP/2) on %d connections; want 20 of each on 2",
			s.Requests, s.Succeeded, count.Load(), h2.Load(), conns.Load())
	}
}

// TestExecuteShard: a shard replays its share of the iterations with its
// share of the VUs.
func TestExecuteShard(t *testing.T) {
	srv := newSUT(t, 0, 200)
	o := options(trafficFile(t, 14), srv.URL) // 7 sessions of 2
	o.Load.VUs = 4
	o.Shard.Shards, o.Shard.JobIndex = 2, "1"
	s, err := execute(t, context.Background(), o, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != 6 || s.VUsMax != 2 || srv.count.Load() != 6 {
		t.Errorf("requests %d on %d VUs (the SUT counted %d), want shard 1 of 2: 3 sessions of 2 requests on 2 VUs", s.Requests, s.VUsMax, srv.count.Load())
	}
}

func TestLoadTyped(t *testing.T) {
	for _, tt := range []struct {
		name string
		load Load
		want string
	}{
		{"closed", Load{VUs: 5, Duration: time.Minute, Speed: 1}, "{Model:closed Walk:loop VUs:5 MaxVUs:0 Duration:1m0s Iterations:0 Rate:0 Stages:[] Unit:iterations PerIteration:0 Speed:1 Think:false} most 5"},
		{"VU stages", Load{VUs: 1, Stages: "10s:8", Speed: 1}, "{Model:closed Walk:loop VUs:1 MaxVUs:0 Duration:10s Iterations:0 Rate:0 Stages:[{Duration:10s Target:8 Hold:false}] Unit:iterations PerIteration:0 Speed:1 Think:false} most 8"},
		{"rate", Load{VUs: 2, Rate: "100/s", Stages: "5s:50/s", Speed: 1}, "{Model:rate Walk:loop VUs:2 MaxVUs:1000 Duration:0s Iterations:0 Rate:100 Stages:[{Duration:5s Target:50 Hold:false}] Unit:iterations PerIteration:0 Speed:1 Think:false} most 1000"},
		{"requests", Load{VUs: 2, Rate: "600req/s", Stages: "5s:1200req/s", Speed: 1}, "{Model:rate Walk:loop VUs:2 MaxVUs:1000 Duration:0s Iterations:0 Rate:600 Stages:[{Duration:5s Target:1200 Hold:false}] Unit:requests PerIteration:0 Speed:1 Think:false} most 1000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tt.load.Typed()
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%+v most %d", l, l.MostVUs()); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := (Load{VUs: 1, Rate: "5/s", Pace: "recorded", Speed: 1}).Typed(); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("rate and recorded pacing: got %v", err)
	}
}

func TestCheckSinks(t *testing.T) {
	for _, tt := range []struct {
		o    Events
		want string
	}{
		{Events{}, "give at least one sink"},
		{Events{Redis: []string{"redis://127.0.0.1:6379?queue=x"}}, `--sink-redis: unknown parameter "queue"`},
		{Events{HTTP: "127.0.0.1:0"}, ""},
	} {
		err := CheckSinks(tt.o)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: got %v, want %q", tt.o, err, tt.want)
		}
	}
}

// serveH2C serves h over cleartext HTTP/2 (prior knowledge) and HTTP/1.1
// on a loopback port until the test ends; it returns the address and the
// count of connections accepted.
func serveH2C(t *testing.T, h http.HandlerFunc) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := new(atomic.Int64)
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	p.SetHTTP1(true)
	srv := &http.Server{Protocols: &p, Handler: h, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), conns
}
