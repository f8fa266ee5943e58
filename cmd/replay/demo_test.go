package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay"
)

// TestDemo runs the README's first command, shortened, from another
// directory: the traffic travels inside the binary.
func TestDemo(t *testing.T) {
	wd, _ := os.Getwd()
	t.Chdir(t.TempDir())
	defer os.Chdir(wd)
	out := filepath.Join(t.TempDir(), "demo.json")
	r := runMain(t, context.Background(), "", "demo", "--duration", "1s", "--vus", "4", "--out", out, "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	if num(s, "requests") < 100 {
		t.Errorf("requests: got %d, want the demo to replay a few seconds of traffic", num(s, "requests"))
	}
	if errs, _ := s["errors"].(map[string]any); len(errs) != 0 {
		t.Errorf("errors: got %v, want none against the demo SUT", errs)
	}
	status, _ := s["status"].(map[string]any)
	for code := range status {
		switch code {
		case "200", "201", "202", "400", "404", "503": // as recorded
		default:
			t.Errorf("status %s was never recorded", code)
		}
	}
	if e2e, _ := s["e2e"].(map[string]any); e2e == nil || len(e2e["stages"].([]any)) != 1 {
		t.Errorf("e2e: got %v, want the worker's deliveries at one stage", s["e2e"])
	}
	for _, want := range []string{"POST /events", "GET /users/{id}/feed", "Latency       [from due", "End-to-end (send → seen by a sink)", "processed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestDemoRawTransforms: --raw (as recorded) with --transforms (rewritten)
// says nothing coherent; the demo refuses it before starting.
func TestDemoRawTransforms(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(file, []byte("transforms:\n  - timestamps:\n      auto: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, context.Background(), "", "demo", "--raw", "--transforms", file, "--duration", "1s")
	if r.code != 1 || !strings.Contains(r.stderr, "--raw and --transforms") || strings.Contains(r.stderr, "demo SUT started") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 with --raw and --transforms, before the SUT starts", r.code, r.stderr)
	}
}

// TestDemoTransforms replays the demo traffic recorded as successful
// against the demo SUT, on real sockets: as recorded (--raw) nearly all of
// it fails (expired token, stale events, unknown orders); with the demo's
// transforms all of it succeeds.
func TestDemoTransforms(t *testing.T) {
	t.Parallel()
	run := func(extra ...string) map[string]any {
		out := filepath.Join(t.TempDir(), "demo.json")
		args := append([]string{"demo", "--keep", "status=2xx", "--duration", "1s", "--vus", "4", "--out", out, "-q", "--log-level", "warn"}, extra...)
		r := runMain(t, context.Background(), "", args...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		return readSummary(t, out)
	}
	raw := run("--raw")
	if ratio := float64(num(raw, "succeeded")) / float64(num(raw, "requests")); num(raw, "requests") < 50 || ratio > 0.05 {
		t.Errorf("--raw: %d of %d succeeded, want nearly none", num(raw, "succeeded"), num(raw, "requests"))
	}
	fixed := run()
	if num(fixed, "requests") < 50 || num(fixed, "succeeded") != num(fixed, "requests") {
		t.Errorf("with transforms: %d of %d succeeded (status %v), want all", num(fixed, "succeeded"), num(fixed, "requests"), fixed["status"])
	}
	names := map[string]bool{}
	for _, x := range fixed["transforms"].([]any) {
		m := x.(map[string]any)
		names[m["name"].(string)] = m["changed"].(float64) > 0 && m["failed"].(float64) == 0
	}
	for _, n := range []string{"timestamps", "jwt", "correlate json id"} {
		if !names[n] {
			t.Errorf("transform %s: changed nothing or failed (%v)", n, fixed["transforms"])
		}
	}
}

// TestDemoCompareBody: replay demo --compare body matches every answer
// it compares, out of the box: the event ids the demo SUT issues are
// correlated by the demo's transforms (POST /events, json: id; read back
// by GET /events/evt-N), and the fields it adds to the recorded answers
// are ignored by name (demo.CompareIgnore). It read 31% before: the
// issued ids differed, and the added fields.
func TestDemoCompareBody(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "demo.json")
	r := runMain(t, context.Background(), "", "demo", "--compare", "body", "--duration", "1s", "--vus", "4", "--out", out, "-q", "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	c, _ := readSummary(t, out)["compare"].(map[string]any)
	if c == nil || c["body"] != true {
		t.Fatalf("got compare %v, want a body comparison", c)
	}
	if num(c, "compared") < 100 || num(c, "matched") != num(c, "compared") {
		t.Errorf("got %d of %d answers matched (%v%%), want every one; mismatches: %v", num(c, "matched"), num(c, "compared"), c["match_pct"], c["mismatches"])
	}
	// Every endpoint of the traffic was compared, the ones correlated and
	// ignored in part among them.
	seen := map[string]bool{}
	for _, e := range c["endpoints"].([]any) {
		if m := e.(map[string]any); num(m, "compared") > 0 {
			seen[m["name"].(string)] = true
		}
	}
	for _, ep := range []string{"POST /events", "GET /events/{id}", "GET /users/{id}/feed", "POST /orders", "GET /orders/{id}"} {
		if !seen[ep] {
			t.Errorf("%s: got no answer compared, want some (%v)", ep, c["endpoints"])
		}
	}
}

// TestDemoTakenApart: the demo's traffic and transforms written as files,
// the SUT served alone with its worker delivering to a run's sink, and
// the files replayed against it with replay run: every workflow of the
// docs can be tried by hand on the demo. Run flags given to --serve or
// --write-traffic are refused, and the demo stays on loopback.
func TestDemoTakenApart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	r := runMain(t, context.Background(), "", "demo", "--write-traffic", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	traffic, transforms := filepath.Join(dir, "demo.jsonl"), filepath.Join(dir, "demo-transforms.yaml")
	for path, want := range map[string][]byte{traffic: replay.DemoTraffic, transforms: replay.DemoTransforms} {
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, %d bytes; want the demo's %d", path, err, len(got), len(want))
		}
	}

	sutAddr, sinkAddr := freeAddr(t), freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan runResult, 1)
	go func() {
		served <- runMain(t, ctx, "", "demo", "--serve", sutAddr, "--deliver-to", "http://"+sinkAddr, "--worker-rate", "5000")
	}()
	waitListening(t, sutAddr)
	out := filepath.Join(t.TempDir(), "run.json")
	r = runMain(t, context.Background(), "", "run", "-f", traffic, "--transforms", transforms, "--target", "http://"+sutAddr,
		"--vus", "2", "--iterations", "20", "--sink-http", sinkAddr, "--correlate-only", "POST /events", "--drain", "10s", "--drain-idle", "300ms",
		"--threshold", "errors<5%", "--out", out, "-q")
	stop()
	if s := <-served; s.code != 130 && s.code != 0 {
		t.Errorf("demo --serve ended with %d: %s", s.code, s.stderr)
	}
	if r.code != 0 {
		t.Fatalf("replay run of the written traffic against demo --serve: exit %d: %s", r.code, r.stderr)
	}
	var sum struct {
		E2E struct {
			Stages []struct {
				Name   string `json:"name"`
				Unique int64  `json:"unique"`
			} `json:"stages"`
		} `json:"e2e"`
	}
	if b, err := os.ReadFile(out); err != nil || json.Unmarshal(b, &sum) != nil {
		t.Fatalf("the run's summary: %v", err)
	}
	if len(sum.E2E.Stages) != 1 || sum.E2E.Stages[0].Name != "processed" || sum.E2E.Stages[0].Unique == 0 {
		t.Errorf("e2e stages %+v: want the events the served SUT's worker processed, delivered to the run's sink", sum.E2E.Stages)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--serve", sutAddr, "--vus", "5"}, "--serve: runs no replay, so --vus would do nothing"},
		{[]string{"demo", "--write-traffic", dir, "--rate", "5/s", "--out", "x.json"}, "--write-traffic: runs no replay, so --out, --rate would do nothing"},
		{[]string{"demo", "--serve", "0.0.0.0:0"}, "--serve: the demo stays on loopback"},
		{[]string{"demo", "--serve", "127.0.0.1:0", "--deliver-to", "http://10.1.2.3:9090"}, "--deliver-to: the demo stays on loopback"},
		{[]string{"demo", "--serve", "127.0.0.1:0", "--deliver-to", "ftp://127.0.0.1:9090"}, "--deliver-to: want http://HOST:PORT"},
	} {
		if r := runMain(t, context.Background(), "", tt.args...); r.code != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d %q, want 1 and %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// waitListening waits until something listens on addr (5 s at most).
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
