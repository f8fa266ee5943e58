package run

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/rs/zerolog"
)

// tee records each result in both sinks.
type tee [2]result.Sink

func (t tee) Record(r result.Result) { t[0].Record(r); t[1].Record(r) }

// singleRequests writes n requests without a session: one request an
// iteration, so that an iteration's due time is its request's.
func singleRequests(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"http":{"req":{"method":"GET","uri":"/items/%d","host":"recorded:80"},"res":{"statusCode":200}}}`+"\n", i)
	}
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// executeCollecting runs o as Execute does, and also keeps every raw
// result the VUs record.
func executeCollecting(t *testing.T, o Options) (*report.Summary, []result.Result) {
	t.Helper()
	ctx := context.Background()
	pr, err := Prepare(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	r, err := pr.newRunner(Pass{Load: pr.Load(), Judge: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	runCtx, err := r.start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	col := &fixture.Collect{}
	r.pool.Sink = tee{r.rec, col}
	s, err := r.run(ctx, runCtx)
	if err != nil {
		t.Fatal(err)
	}
	return s, col.Results()
}

// TestStepsMatchRawResults: a three-step arrival rate reports three steps
// that offered their targets (the iterations that came due, within 2%),
// achieved what they offered (within 2%), and whose percentiles are those
// of the raw results due in each step, computed with the same histogram
// geometry. What a step achieved is held against what it offered, not
// against the target: a generator a busy machine held back (requests
// begun late, its own lag) may drop iterations, which the step then
// counts; one that was never late may not.
func TestStepsMatchRawResults(t *testing.T) {
	srv := newSUT(t, 0, 200)
	o := options(singleRequests(t, 50), srv.URL)
	o.Load.Mode, o.Load.Stages, o.Load.VUs = "loop", "100/s@1500ms,200/s@1500ms,300/s@1500ms", 20
	s, raw := executeCollecting(t, o)

	if len(s.Steps) != 3 {
		t.Fatalf("got %d steps, want 3: %+v", len(s.Steps), s.Steps)
	}
	base := s.Started.UnixNano()
	var lat, svc [3]*hdrhistogram.Histogram
	var reqs [3]int64
	for i := range lat {
		lat[i], svc[i] = hist.New(), hist.New()
	}
	for _, r := range raw {
		i := min(max(int((r.Due-base)/int64(1500*time.Millisecond)), 0), 2)
		reqs[i]++
		if r.Err == result.ErrNone {
			hist.RecordNanos(lat[i], r.End-r.Due)
			hist.RecordNanos(svc[i], r.End-r.Sent)
		}
	}
	for i, st := range s.Steps {
		want := float64(100 * (i + 1))
		if st.Target != fmt.Sprintf("%g/s", want) || st.Ramp || st.Unit != "rate" {
			t.Errorf("step %d: target %q ramp %v unit %q, want %g/s held, rate", i+1, st.Target, st.Ramp, st.Unit, want)
		}
		offered := float64(st.Scheduled) / st.DurationS
		if math.Abs(offered-want) > 0.02*want {
			t.Errorf("step %d: %d iterations came due in %.3fs (%.1f/s), want %g/s within 2%%", i+1, st.Scheduled, st.DurationS, offered, want)
		}
		behind := st.Late > 0 // the generator's own lag: requests it began late
		if math.Abs(st.IterationRate-offered) > 0.02*offered && !behind {
			t.Errorf("step %d: achieved %.1f/s of the %.1f/s offered, none begun late: want within 2%%", i+1, st.IterationRate, offered)
		}
		if st.Requests != reqs[i] {
			t.Errorf("step %d: %d requests, the raw results have %d", i+1, st.Requests, reqs[i])
		}
		if got, want := st.Latency, hist.LatencyOf(lat[i]); got != want {
			t.Errorf("step %d latency: got %+v, want %+v", i+1, got, want)
		}
		if got, want := st.Service, hist.LatencyOf(svc[i]); got != want {
			t.Errorf("step %d service: got %+v, want %+v", i+1, got, want)
		}
		t.Logf("step %d: target %s, offered %.2f/s, achieved %.2f/s, %d dropped, %d late, p50 %.3fms p99 %.3fms", st.Step, st.Target, offered, st.IterationRate, st.Dropped, st.Late, st.Latency.P50, st.Latency.P99)
		if st.Dropped != 0 && !behind || st.Errors["connect"] != 0 {
			t.Errorf("step %d: dropped %d (%d begun late), errors %v on a fast loopback server", i+1, st.Dropped, st.Late, st.Errors)
		}
	}
}

// TestStepPlans: a ramp step starts at the previous target (or --rate,
// or --vus), a hold does not ramp; a step in requests says so.
func TestStepPlans(t *testing.T) {
	tests := []struct {
		name, rate, stages string
		vus                int
		duration           time.Duration
		want               []string
	}{
		{"rate ramps", "100/s", "2s:500/s,500/s@1s,1s:0", 0, 0, []string{"100/s→500/s 2s", "500/s 1s", "500/s→0/s 1s"}},
		{"held from the start", "", "100/s@1s,300/s@2s", 0, 0, []string{"100/s 1s", "300/s 2s"}},
		{"vus", "", "1s:10,10@2s", 4, 0, []string{"4→10 VUs 1s", "10 VUs 2s"}},
		{"as long as given", "", "100/s@1s,300/s@2s", 0, 3 * time.Second, []string{"100/s 1s", "300/s 2s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := options("unused", "http://127.0.0.1:1")
			o.Load.Rate, o.Load.Stages, o.Load.Mode = tc.rate, tc.stages, ""
			if tc.vus > 0 {
				o.Load.VUs = tc.vus
			}
			if tc.duration > 0 {
				o.Load.Duration, o.Load.DurationGiven = tc.duration, true
			}
			p, err := parse(&o)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := configure(&o, p.load, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, pl := range stepPlans(schedule.New(cfg.Load), nil, cfg.Unit, 1) {
				got = append(got, report.TargetText(pl.From, pl.To, pl.Ramp, pl.VUs)+" "+pl.Duration.String())
			}
			if strings.Join(got, ", ") != strings.Join(tc.want, ", ") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
