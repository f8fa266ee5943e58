package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// What a user asks for is what runs: a flag pair that would make a run do
// less or other than asked is refused before any traffic, naming both.
func TestNothingSilentlyLess(t *testing.T) {
	srv := newSUT(t, 0, 202)
	file := trafficFile(t, 21) // 7 sessions of 3 requests
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "10/s", "--stages", "10@1s,20@1s", "--duration", "1s"}, "--duration 1s and --stages (2s in all)"},
		{[]string{"--rate", "10/s", "--stages", "10@1s,20@1s", "--duration", "5s"}, "would run past them"},
		{[]string{"--stages", "2@1s,4@1s", "--iterations", "10"}, "--iterations 10 and --stages"},
		{[]string{"--stages", "2@1s", "--mode", "once"}, "--mode once and --stages"},
		{[]string{"--vus", "2", "--duration", "1s", "--speed", "2"}, "--speed 2"},
		{[]string{"--vus", "2", "--duration", "1s", "--late-after", "5ms"}, "--late-after 5ms"},
		{[]string{"--vus", "2", "--mode", "once", "--iterations", "100"}, "file's 7 iterations once"},
		{[]string{"--rate", "10/s", "--duration", "1s", "--iterations", "100"}, "only 10 iterations come due"},
		{[]string{"--rate", "1/s", "--duration", "2s", "--mode", "once"}, "would cut the walk after 2"},
		{[]string{"--rate", "30req/s", "--stages", "10/s@1s"}, "write both in iterations (/s) or both in requests (req/s)"},
		{[]string{"--stages", "30req/s@1s,10/s@1s"}, "--stages"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			before := srv.count.Load()
			args := append([]string{"run", "-f", file, "--target", srv.URL, "--log-level", "warn"}, c.args...)
			r := runMain(t, context.Background(), "", args...)
			if r.code != exitFailed || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", r.code, exitFailed, c.want, r.stderr)
			}
			if n := srv.count.Load() - before; n != 0 {
				t.Errorf("%d requests sent before the refusal", n)
			}
		})
	}
}

// The demo's default --duration yields to --stages: every step runs, and
// the report names them all.
func TestDemoStagesSetTheLength(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "s.json")
	r := runMain(t, context.Background(), "", "demo", "--rate", "20/s", "--stages", "20@1s,40@1s,60@1s", "--out", out, "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	steps, _ := s["steps"].([]any)
	if len(steps) != 3 {
		t.Fatalf("%d steps ran, want the 3 asked for:\n%s", len(steps), r.stdout)
	}
	if wall := s["wall_s"].(float64); wall < 2.9 {
		t.Errorf("the run lasted %.2fs, want the stages' 3s", wall)
	}
	if !strings.Contains(r.stdout, "20/s 1s, 40/s 1s, 60/s 1s") {
		t.Errorf("the report does not name the three stages:\n%s", r.stdout)
	}
}

// --rate in requests a second is scheduled as iterations of the file's
// mean requests each; the report says both, and --sut-cpus divides the
// achieved rates by the SUT's vCPUs.
func TestRateInRequests(t *testing.T) {
	srv := newSUT(t, 0, 202)
	file := trafficFile(t, 21) // 7 sessions of 3 requests: 3 requests an iteration
	out := filepath.Join(t.TempDir(), "s.json")
	html := filepath.Join(t.TempDir(), "r.html")
	r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--rate", "60req/s", "--duration", "2s",
		"--sut-cpus", "2", "--out", out, "--html", html, "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	f := func(k string) float64 {
		v, ok := s[k].(float64)
		if !ok {
			t.Fatalf("summary has no %s: %v", k, s[k])
		}
		return v
	}
	if s["rate_unit"] != "requests" || f("requests_per_iteration") != 3 || f("target_rate") != 20 || f("target_request_rate") != 60 {
		t.Errorf("rate_unit %v, requests_per_iteration %v, target_rate %v, target_request_rate %v; want requests, 3, 20 (iterations), 60",
			s["rate_unit"], s["requests_per_iteration"], s["target_rate"], s["target_request_rate"])
	}
	// 40 iterations of 3 requests come due in 2 s: 120 requests offered,
	// by the clock. What was sent is held against that offer: all of it
	// but what the generator dropped (none on an idle machine; a busy one
	// may hold every VU back), and the rates by the same share.
	sched, _ := s["schedule"].(map[string]any)
	due, _ := sched["scheduled"].(float64)
	if due < 38 || due > 41 {
		t.Errorf("%v iterations came due in 2s at 20 iterations/s, want about 40", due)
	}
	share := 1 - f("dropped")/max(due, 1) // of the offer, what the generator began
	if req := int64(f("requests")); req < int64(114*share) || req > 123 {
		t.Errorf("%d requests in 2s at 60req/s (%v iterations due, %v dropped), want about 120 less 3 a dropped one", req, due, s["dropped"])
	}
	if rr, ir := f("request_rate"), f("iteration_rate"); math.Abs(rr-3*ir) > 0.5 || rr < 50*share || rr > 65 {
		t.Errorf("request_rate %.2f, iteration_rate %.2f (%.0f%% of the offer begun): want about 60 and 20", rr, ir, 100*share)
	}
	if math.Abs(f("rps_per_vcpu")-f("rps")/2) > 1e-9 || math.Abs(f("throughput_per_vcpu")-f("throughput")/2) > 1e-9 {
		t.Errorf("per vCPU %v, %v; rps %v, throughput %v over 2 vCPUs", s["rps_per_vcpu"], s["throughput_per_vcpu"], s["rps"], s["throughput"])
	}
	for _, want := range []string{"60.00 req/s (20.00 iterations/s at 3.00 requests an iteration)", "per vCPU"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, r.stdout)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"target 60.00 req/s (20.00 iterations/s)", `id="per-vcpu"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
}

// With a sink and no event ever seen, the sink's stage is listed with
// every accepted event pending from the start, not left out.
func TestPendingFromTheStart(t *testing.T) {
	srv := newSUT(t, 0, 202) // accepts, and never delivers
	res := runE2E(t, eventFile(t, 30), srv.URL, freeAddr(t), "--drain", "300ms", "--drain-idle", "200ms")
	st, ok := res.stages["delivered"]
	if !ok {
		t.Fatalf("the HTTP sink's stage is not listed when no event arrived:\n%s", res.stdout)
	}
	if res.accepted != 30 {
		t.Fatalf("accepted %d, want 30", res.accepted)
	}
	checkPending(t, res, st, 30)
}

// A stepped run says per step whether it kept up, and in one line where
// it stopped: here the SUT fails everything after a second and a half,
// so step 1 keeps up and step 2 does not.
func TestStepVerdict(t *testing.T) {
	t.Parallel()
	var start atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start.CompareAndSwap(0, time.Now().UnixNano())
		if time.Since(time.Unix(0, start.Load())) > 1500*time.Millisecond {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "s.json")
	r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 20), "--target", srv.URL,
		"--rate", "20/s", "--stages", "20@1s,20@2s", "--out", out, "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	v, ok := s["steps_verdict"].(map[string]any)
	if !ok {
		t.Fatalf("no steps_verdict:\n%s", r.stdout)
	}
	if num(v, "kept_up_through") != 1 || num(v, "fell_behind") != 2 {
		t.Errorf("verdict %v: want kept up through 1, fell behind in 2", v)
	}
	steps := s["steps"].([]any)
	if k := steps[0].(map[string]any)["kept_up"]; k != true {
		t.Errorf("step 1 kept_up %v", k)
	}
	if k := steps[1].(map[string]any)["kept_up"]; k != false {
		t.Errorf("step 2 kept_up %v", k)
	}
	line := fmt.Sprint(v["line"])
	t.Logf("verdict: %s", line)
	if !strings.Contains(strings.ToLower(r.stdout), strings.ToLower(line)) || !strings.Contains(line, "step 2") {
		t.Errorf("the text report does not carry the verdict %q:\n%s", line, r.stdout)
	}
}

// find-max takes its rates in requests a second too: each hold is
// scheduled in iterations of the file's requests, and the result gives
// the sustainable rate in both units and per vCPU.
func TestFindMaxInRequests(t *testing.T) {
	t.Parallel()
	srv := newSUT(t, 0, 202)
	out := filepath.Join(t.TempDir(), "search.json")
	args := []string{"find-max", "-f", trafficFile(t, 21), "--target", srv.URL, "--hold", "1s", "--warmup", "300ms",
		"--grace", "2s", "--budget", "50s", "--progress", "off", "--log-level", "warn",
		"--start-rate", "30req/s", "--max-rate", "45req/s", "--sut-cpus", "2", "--threshold", "p99<500ms", "--out", out}
	r := runMain(t, context.Background(), "", args...)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	res := readSummary(t, out)
	f := func(k string) float64 { v, _ := res[k].(float64); return v }
	if res["rate_unit"] != "requests" || f("requests_per_iteration") != 3 {
		t.Fatalf("rate_unit %v, requests_per_iteration %v; want requests, 3", res["rate_unit"], res["requests_per_iteration"])
	}
	// 45req/s is reached on a quiet machine; a busy one may hold only 30.
	sus, susReq := f("sustainable_rate"), f("sustainable_request_rate")
	if (susReq != 45 && susReq != 30) || susReq != 3*sus {
		t.Errorf("sustainable %v req/s, %v iterations/s; want 45 (or 30) and a third of it", susReq, sus)
	}
	if f("requests_per_vcpu") != susReq/2 || f("per_vcpu") != sus/2 {
		t.Errorf("per vCPU %v req/s, %v iterations/s; want half of %v and %v", res["requests_per_vcpu"], res["per_vcpu"], susReq, sus)
	}
	first := res["steps"].([]any)[0].(map[string]any)
	if first["target_rate"] != 10.0 || first["target_request_rate"] != 30.0 {
		t.Errorf("the first hold targets %v iterations/s, %v req/s; want 10 and 30", first["target_rate"], first["target_request_rate"])
	}
	if !strings.Contains(r.stdout, "req/s") {
		t.Errorf("the report does not state the requests unit:\n%s", r.stdout)
	}
}
