package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"github.com/replay-dev/replay/internal/testutil/daemons"
)

// queueSUT is the seeds' event-driven service on loopback: its API LPUSHes
// each event's ce-id to a Redis list and answers 202; its worker BRPOPs
// them and POSTs each to the sink, after some work.
type queueSUT struct {
	api     *httptest.Server
	redis   *redis.Client
	list    string
	sink    string        // replay's --sink-http address
	work    time.Duration // per event, in the worker
	stop    context.CancelFunc
	wg      sync.WaitGroup
	handled atomic.Int64
}

func newQueueSUT(t *testing.T, redisURL, list, sinkAddr string, work time.Duration) *queueSUT {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	s := &queueSUT{redis: redis.NewClient(opt), list: list, sink: "http://" + sinkAddr + "/stage/processed", work: work}
	s.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.redis.LPush(r.Context(), s.list, r.Header.Get("ce-id")).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.wg.Add(1)
	go s.worker(ctx)
	t.Cleanup(func() { cancel(); s.wg.Wait(); s.api.Close(); s.redis.Close() })
	return s
}

func (s *queueSUT) worker(ctx context.Context) {
	defer s.wg.Done()
	for ctx.Err() == nil {
		v, err := s.redis.BRPop(ctx, time.Second, s.list).Result()
		if err != nil {
			continue // timeout or stop
		}
		time.Sleep(s.work)
		req, _ := http.NewRequest("POST", s.sink, nil)
		req.Header.Set("ce-id", v[1])
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		s.handled.Add(1)
	}
}

// eventFile is n recorded event POSTs.
func eventFile(t *testing.T, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"http":{"req":{"method":"POST","uri":"/events","host":"api","headers":{"Content-Type":["application/json"]},"body":"{\"n\":%d}"},"res":{"statusCode":202}}}`+"\n", i)
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type e2eResult struct {
	summary  map[string]any
	stages   map[string]map[string]any
	apiP50   float64
	apiP90   float64
	accepted int64
	stdout   string
	stderr   string
}

// runE2E replays file against target with an HTTP sink on sinkAddr.
func runE2E(t *testing.T, file, target, sinkAddr string, extra ...string) e2eResult {
	t.Helper()
	out := filepath.Join(t.TempDir(), "s.json")
	args := append([]string{"run", "-f", file, "--target", target, "--vus", "4", "--sink-http", sinkAddr,
		"--drain", "20s", "--drain-idle", "500ms", "--out", out, "--log-level", "warn"}, extra...)
	r := runMain(t, context.Background(), "", args...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	e2e, ok := s["e2e"].(map[string]any)
	if !ok {
		t.Fatalf("no e2e section:\n%s", r.stdout)
	}
	res := e2eResult{summary: s, stages: map[string]map[string]any{}, accepted: int64(e2e["accepted"].(float64)), stdout: r.stdout, stderr: r.stderr}
	for _, x := range e2e["stages"].([]any) {
		st := x.(map[string]any)
		res.stages[st["name"].(string)] = st
	}
	lat := s["latency_ms"].(map[string]any)
	res.apiP50, res.apiP90 = lat["p50"].(float64), lat["p90"].(float64)
	return res
}

func stageLatency(st map[string]any, stat string) float64 {
	return st["latency_ms"].(map[string]any)[stat].(float64)
}

func TestEndToEndThroughRedis(t *testing.T) {
	redisURL := daemons.Redis(t)
	file := eventFile(t, 300)

	// Both runs send 150 events a second (2s): a worker taking 1ms an event
	// keeps up whatever the machine's load, one taking 15ms falls behind.
	//
	// A worker keeping up: every event arrives once, none is lost, and
	// the time to the sink exceeds the API's answer.
	sinkAddr := freeAddr(t)
	sut := newQueueSUT(t, redisURL, "jobs-fast", sinkAddr, time.Millisecond)
	fast := runE2E(t, file, sut.api.URL, sinkAddr, "--rate", "150/s")
	st := fast.stages["processed"]
	if st == nil || fast.accepted != 300 || num(st, "unique") != 300 || num(st, "duplicates") != 0 || num(st, "lost") != 0 {
		t.Fatalf("accepted %d, stage %v; want 300 received once, none lost\n%s", fast.accepted, st, fast.stdout)
	}
	if p50 := stageLatency(st, "p50"); p50 < fast.apiP50 {
		t.Errorf("end-to-end p50 %.3fms below the API's %.3fms", p50, fast.apiP50)
	}
	if !strings.Contains(fast.stdout, "End-to-end (send → seen by a sink): 300 events sent, 300 accepted") {
		t.Errorf("text report:\n%s", fast.stdout)
	}

	// A slow worker: the backlog grows, and the end-to-end percentiles
	// with it, while the API answers as fast as before.
	sinkAddr = freeAddr(t)
	slowSUT := newQueueSUT(t, redisURL, "jobs-slow", sinkAddr, 15*time.Millisecond)
	slow := runE2E(t, file, slowSUT.api.URL, sinkAddr, "--rate", "150/s")
	sst := slow.stages["processed"]
	if sst == nil || num(sst, "unique") != 300 || num(sst, "lost") != 0 {
		t.Fatalf("slow: stage %v", sst)
	}
	if fp, sp := stageLatency(st, "p90"), stageLatency(sst, "p90"); sp < 5*fp || sp < 200 {
		t.Errorf("slow worker: end-to-end p90 %.1fms, fast %.1fms: want the backlog to show (5x, and 200ms at least)", sp, fp)
	}
	if slow.apiP90 > 10*fast.apiP90+20 {
		t.Errorf("slow worker: API p90 %.2fms, fast %.2fms: the API should not slow down", slow.apiP90, fast.apiP90)
	}
}

// lossySUT delivers each event straight to the sink from its handler, at
// two stages, dropping every 100th event and delivering every other 50th
// twice.
func lossySUT(t *testing.T, sinkAddr string) *httptest.Server {
	var n atomic.Int64
	deliver := func(stage, id string) {
		req, _ := http.NewRequest("POST", "http://"+sinkAddr+"/stage/"+stage, strings.NewReader(`{"id":"`+id+`"}`))
		req.Header.Set("Content-Type", "application/cloudevents+json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("ce-id")
		w.WriteHeader(http.StatusAccepted)
		deliver("queued", id) // every event, once
		switch k := n.Add(1); {
		case k%100 == 0: // lost
		case k%50 == 0:
			deliver("settled", id)
			deliver("settled", id)
		default:
			deliver("settled", id)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestEndToEndLossDuplicatesStages(t *testing.T) {
	t.Parallel()
	sinkAddr := freeAddr(t)
	srv := lossySUT(t, sinkAddr)
	res := runE2E(t, eventFile(t, 1000), srv.URL, sinkAddr)
	q, s := res.stages["queued"], res.stages["settled"]
	if q == nil || s == nil || len(res.stages) != 2 {
		t.Fatalf("stages %v, want queued and settled", res.stages)
	}
	if num(q, "unique") != 1000 || num(q, "lost") != 0 || num(q, "duplicates") != 0 {
		t.Errorf("queued: %v", q)
	}
	// An HTTP sink cannot prove that an event will never come: the 10
	// events never delivered are pending, not lost; the report and the
	// log say so and suggest a longer --drain.
	if num(s, "unique") != 990 || num(s, "duplicates") != 10 || num(s, "received") != 1000 {
		t.Errorf("settled: %v; want 990 unique, 10 duplicates", s)
	}
	checkPending(t, res, s, 10)

	// Thresholds on it: pending is 1% at settled, so pending<0.5% fails
	// (exit 99, reports written) while the queued stage's latency passes.
	out := filepath.Join(t.TempDir(), "s.json")
	r := runMain(t, context.Background(), "", "run", "-f", eventFile(t, 1000), "--target", srv.URL, "--sink-http", sinkAddr,
		"--drain-idle", "300ms", "--threshold", "pending<0.5%", "--threshold", "e2e.queued.p99<5s", "--out", out, "-q")
	if r.code != 99 {
		t.Fatalf("exit %d, want 99: %s", r.code, r.stderr)
	}
	ths := readSummary(t, out)["thresholds"].([]any)
	if len(ths) != 2 || ths[0].(map[string]any)["pass"] != false || ths[1].(map[string]any)["pass"] != true {
		t.Errorf("thresholds %v, want pending failing and e2e.queued.p99 passing", ths)
	}
}

// checkPending checks that the stage st of res has n events pending and
// none lost, and that the summary, the text report and the log say so.
func checkPending(t *testing.T, res e2eResult, st map[string]any, n int) {
	t.Helper()
	if num(st, "pending") != int64(n) || num(st, "lost") != 0 {
		t.Errorf("stage %v: want %d pending, none lost", st, n)
	}
	if known, ok := res.summary["e2e"].(map[string]any)["loss_known"]; !ok || known != false {
		t.Errorf("loss_known %v (present %v), want false", known, ok)
	}
	if !strings.Contains(res.stdout, fmt.Sprintf("%d events pending", n)) || !strings.Contains(res.stdout, "try a longer --drain") {
		t.Errorf("text report does not say what is pending:\n%s", res.stdout)
	}
	if !strings.Contains(res.stderr, "pending") || !strings.Contains(res.stderr, "a longer --drain") {
		t.Errorf("log does not say what is pending:\n%s", res.stderr)
	}
}

// TestLostThresholdRefused: no sink of today proves loss, so a lost
// threshold could never be measured; it is refused before any traffic.
func TestLostThresholdRefused(t *testing.T) {
	srv := newSUT(t, 0, 202)
	r := runMain(t, context.Background(), "", "run", "-f", eventFile(t, 5), "--target", srv.URL, "--sink-http", freeAddr(t),
		"--threshold", "lost<0.5%", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, `--threshold "lost<0.5%"`) || !strings.Contains(r.stderr, "no sink of this run can prove") ||
		!strings.Contains(r.stderr, "nothing was sent") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming --threshold and why", r.code, r.stderr)
	}
	if n := srv.count.Load(); n != 0 {
		t.Errorf("the SUT received %d requests, want 0", n)
	}
}

// TestRedisSinkInRun follows events that the SUT publishes to a Redis
// stream, with --sink-redis.
func TestRedisSinkInRun(t *testing.T) {
	t.Parallel()
	redisURL := daemons.Redis(t)
	opt, _ := redis.ParseURL(redisURL)
	client := redis.NewClient(opt)
	defer client.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := client.XAdd(r.Context(), &redis.XAddArgs{Stream: "stored", Values: map[string]any{"id": r.Header.Get("ce-id")}}).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer api.Close()
	out := filepath.Join(t.TempDir(), "s.json")
	r := runMain(t, context.Background(), "", "run", "-f", eventFile(t, 200), "--target", api.URL, "--vus", "2",
		"--sink-redis", redisURL+"?stream=stored&group=replay", "--drain-idle", "300ms", "--out", out, "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	st := onlyStage(t, out)
	if st["name"] != "stored" || num(st, "unique") != 200 || num(st, "lost") != 0 {
		t.Errorf("stage %v, want 200 stored, none lost", st)
	}
}

// TestSinkStandalone runs replay sink on its own while a run stamps its
// requests; the merge of their summaries works out the loss.
func TestSinkStandalone(t *testing.T) {
	t.Parallel()
	sinkAddr := freeAddr(t)
	srv := lossySUT(t, sinkAddr)
	dir := t.TempDir()
	sinkOut, runOut, merged := filepath.Join(dir, "sink.json"), filepath.Join(dir, "run.json"), filepath.Join(dir, "merged.json")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan runResult)
	go func() {
		var out, errb strings.Builder
		code := Main(ctx, []string{"sink", "--sink-http", sinkAddr, "--out", sinkOut}, strings.NewReader(""), &out, &errb)
		done <- runResult{code, out.String(), errb.String()}
	}()
	// The sink is up once it answers.
	for i := 0; i < 100; i++ {
		if resp, err := http.Post("http://"+sinkAddr+"/", "text/plain", nil); err == nil {
			resp.Body.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := runMain(t, context.Background(), "", "run", "-f", eventFile(t, 1000), "--target", srv.URL, "--correlate", "header", "--out", runOut, "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	stop()
	sr := <-done
	if sr.code != 0 || !strings.Contains(sr.stdout, "settled") {
		t.Fatalf("sink: exit %d\n%s%s", sr.code, sr.stdout, sr.stderr)
	}
	checkSinkLossUnknown(t, sr.stdout, sinkOut)
	if r := runMain(t, context.Background(), "", "report", "merge", runOut, sinkOut, "-o", merged, "-q"); r.code != 0 {
		t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
	}
	e2e := readSummary(t, merged)["e2e"].(map[string]any)
	if num(e2e, "accepted") != 1000 {
		t.Errorf("accepted %v", e2e["accepted"])
	}
	if known := e2e["loss_known"]; known != false {
		t.Errorf("merged loss_known %v, want false", known)
	}
	wants := map[string][2]int64{"queued": {1000, 0}, "settled": {990, 10}} // unique, pending
	stages := e2e["stages"].([]any)
	if len(stages) != len(wants) {
		t.Errorf("%d stages %v, want queued and settled", len(stages), stages)
	}
	for _, x := range stages {
		st := x.(map[string]any)
		want, ok := wants[st["name"].(string)]
		if !ok {
			t.Errorf("stage %v: unexpected, or twice", st)
		} else if num(st, "unique") != want[0] || num(st, "pending") != want[1] || num(st, "lost") != 0 {
			t.Errorf("stage %v: want unique %d, pending %d, none lost", st, want[0], want[1])
		}
		delete(wants, st["name"].(string))
	}
}

// checkSinkLossUnknown checks that a standalone sink says, in its report
// and its summary, that it cannot know loss.
func checkSinkLossUnknown(t *testing.T, stdout, summary string) {
	t.Helper()
	if !strings.Contains(stdout, "loss not known") {
		t.Errorf("sink report does not say loss is not known:\n%s", stdout)
	}
	if known, ok := readSummary(t, summary)["e2e"].(map[string]any)["loss_known"]; !ok || known != false {
		t.Errorf("sink summary: loss_known %v (present %v), want false", known, ok)
	}
}

func TestSinkErrorsSendNothing(t *testing.T) {
	t.Parallel()
	srv := newSUT(t, 0, 202)
	file := eventFile(t, 5)
	down := freeAddr(t) // nothing listens there
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--sink-redis", "redis://" + down + "/0?list=done"}, "--sink-redis: redis://" + down + "/0"},
		{[]string{"--sink-redis", "redis://127.0.0.1:6379?queue=x"}, `--sink-redis: unknown parameter "queue"`},
		{[]string{"--correlate", "sideways"}, "--correlate"},
		{[]string{"--correlate-only", "GET /nowhere"}, `"GET /nowhere" is not an endpoint of the file`},
		{[]string{"--sink-http", "127.0.0.1:99999"}, "--sink-http"},
	} {
		r := runMain(t, context.Background(), "", append([]string{"run", "-f", file, "--target", srv.URL}, tt.args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "nothing was sent") {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 1 with %q and nothing was sent", tt.args, r.code, r.stderr, tt.want)
		}
	}
	if n := srv.count.Load(); n != 0 {
		t.Errorf("the SUT received %d requests, want 0", n)
	}
}

// TestNATSSinkInRun follows events that the SUT publishes on NATS, with
// --sink-nats.
func TestNATSSinkInRun(t *testing.T) {
	natsURL := daemons.NATS(t)
	pub, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pub.Publish("events.accepted", []byte(r.Header.Get("ce-id")))
		w.WriteHeader(http.StatusAccepted)
	}))
	defer api.Close()
	out := filepath.Join(t.TempDir(), "s.json")
	r := runMain(t, context.Background(), "", "run", "-f", eventFile(t, 200), "--target", api.URL, "--vus", "2",
		"--sink-nats", natsURL+"?subject=events.*", "--drain-idle", "300ms", "--out", out, "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	st := onlyStage(t, out)
	if st["name"] != "events.*" || num(st, "unique") != 200 || num(st, "lost") != 0 {
		t.Errorf("stage %v, want 200 seen, none lost", st)
	}
}

// onlyStage is the one e2e stage of the summary at path.
func onlyStage(t *testing.T, path string) map[string]any {
	t.Helper()
	stages := readSummary(t, path)["e2e"].(map[string]any)["stages"].([]any)
	if len(stages) != 1 {
		t.Fatalf("stages %v, want one", stages)
	}
	return stages[0].(map[string]any)
}

// TestSinkBadOut: replay sink with an --out it cannot create fails at
// once, before any sink starts, rather than after the session.
func TestSinkBadOut(t *testing.T) {
	sinkAddr := freeAddr(t)
	bad := filepath.Join(t.TempDir(), "no-such-dir", "sink.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := runMain(t, ctx, "", "sink", "--sink-http", sinkAddr, "--out", bad)
	if ctx.Err() != nil {
		t.Fatal("replay sink ran its session with a bad --out")
	}
	if r.code != 1 || !strings.Contains(r.stderr, "--out: open "+bad) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and --out: open %s", r.code, r.stderr, bad)
	}
	if strings.Contains(r.stderr, "sink listening") {
		t.Errorf("a sink started:\n%s", r.stderr)
	}
}
