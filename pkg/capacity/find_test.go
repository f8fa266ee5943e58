package capacity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/run"
	"github.com/rs/zerolog"
)

// TestFindPreparesOnce: a search opens and validates its traffic once and
// holds every step on it; each hold is judged on its own requests.
func TestFindPreparesOnce(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.WriteHeader(202)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	line := `{"http":{"req":{"method":"POST","uri":"/events","host":"recorded:80","body":"{}"},"res":{"statusCode":202}}}` + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 5)), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Run.File, o.Run.Load.Target, o.Run.Load.VUs, o.Run.Log = path, srv.URL, 2, zerolog.Nop()
	o.Run.Load.LateAfter = time.Second // a busy machine's timers late by a few ms are not the generator's limit here
	opened := 0
	o.Run.Open = func(opt rrpair.Options) (*rrpair.File, error) {
		opened++
		return rrpair.Open(path, opt)
	}
	o.StartRate, o.MaxRate, o.Hold, o.Warmup = "20/s", "80/s", 300*time.Millisecond, 100*time.Millisecond
	o.Thresholds, o.Tolerance, o.Log = []string{"errors<50%"}, 0.5, zerolog.Nop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Find(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) < 3 || res.Outcome != AtLeast || res.Sustainable != 80 {
		t.Fatalf("outcome %s after %d steps, sustainable %v/s; want at least 80/s (--max-rate) after 20, 40, 80", res.Outcome, len(res.Steps), res.Sustainable)
	}
	if opened != 1 {
		t.Errorf("the traffic was opened %d times for %d steps, want once", opened, len(res.Steps))
	}
	var held int64
	for _, st := range res.Steps {
		held += st.Requests
		if st.Requests == 0 || st.Requests > int64(st.Target*o.Hold.Seconds())+2 {
			t.Errorf("step %d at %v/s judged %d requests over a %v hold", st.N, st.Target, st.Requests, o.Hold)
		}
	}
	if served.Load() <= held {
		t.Errorf("the SUT served %d requests, the holds counted %d: the warm-ups' were counted too", served.Load(), held)
	}
	if res.Params == nil || res.Params.StartRate != 20 || res.Params.MaxRate != 80 {
		t.Errorf("params %+v, want the search's settings", res.Params)
	}
}

// Options.Validate names the flag of each bad setting, before anything
// is opened.
func TestOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no file", func(o *Options) { o.Run.File = "" }, "--file: required"},
		{"stdin", func(o *Options) { o.Run.File = "-" }, "--file -"},
		{"start rate", func(o *Options) { o.StartRate = "fast" }, "--start-rate"},
		{"max below start", func(o *Options) { o.MaxRate = "5/s" }, "--max-rate"},
		{"no threshold", func(o *Options) { o.Thresholds = nil }, "--threshold: give at least one"},
		{"threshold on a step", func(o *Options) { o.Thresholds = []string{"step 2: p99<10ms"} }, "a hold is one rate"},
		{"sharded", func(o *Options) { o.Run.Shard.Shard = "0/2" }, "cannot be sharded"},
		{"hold", func(o *Options) { o.Hold = 0 }, "--hold"},
		{"tolerance", func(o *Options) { o.Tolerance = 1 }, "--tolerance"},
		{"sut cpus", func(o *Options) { o.SUTCPUs = -1 }, "--sut-cpus"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Run.File, o.Thresholds = "traffic.jsonl", []string{"p99<10ms"}
			tt.edit(&o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestStepCost: a step's cost is its worst case: each run's schedule,
// then --grace (or --timeout, when shorter), and the hold's --drain when
// its requests are stamped for events.
func TestStepCost(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Options)
		want time.Duration
	}{
		{"defaults", func(*Options) {}, 10*time.Second + 10*time.Second + 30*time.Second + 10*time.Second + 2*run.Overhead},
		{"timeout under grace", func(o *Options) { o.Run.HTTP.Timeout = 2 * time.Second },
			10*time.Second + 2*time.Second + 30*time.Second + 2*time.Second + 2*run.Overhead},
		{"no warm-up", func(o *Options) { o.Warmup = 0 }, 30*time.Second + 10*time.Second + run.Overhead},
		{"events drained after the hold", func(o *Options) { o.Run.Events.HTTP = "127.0.0.1:0" },
			10*time.Second + 10*time.Second + 30*time.Second + 10*time.Second + 30*time.Second + 2*run.Overhead},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Run.File, o.Thresholds = "traffic.jsonl", []string{"p99<10ms"}
			tt.edit(&o)
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if o.Search.StepCost != tt.want {
				t.Errorf("step cost %v, want %v", o.Search.StepCost, tt.want)
			}
			o.Search.Budget = tt.want - time.Millisecond
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--budget: want 0 (none) or room for one step at its longest ("+tt.want.String()) {
				t.Errorf("a budget short of one step: %v, want it refused naming the step's cost", err)
			}
		})
	}
}

// TestBudgetKept (finding 10): against a SUT whose answers are still on
// their way at each run's stop, the search ends within --budget: it
// counts each step's grace, where it used to count the warm-up and the
// hold alone and overran (18.6 s for --budget 10s). A budget too small
// for one step is refused before any traffic.
func TestBudgetKept(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		select {
		case <-time.After(600 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.WriteHeader(202)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(`{"http":{"req":{"method":"GET","uri":"/","host":"recorded:80"}}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Run.File, o.Run.Load.Target, o.Run.Log, o.Log = path, srv.URL, zerolog.Nop(), zerolog.Nop()
	o.Run.Grace, o.Run.HTTP.Timeout = time.Second, 5*time.Second
	o.Run.Load.LateAfter = time.Second // a busy machine's timers late by a few ms are not the generator's limit here
	o.StartRate, o.Hold, o.Warmup, o.Tolerance = "20/s", 500*time.Millisecond, 0, 0.7
	o.Thresholds = []string{"errors<50%"}

	o.Search.Budget = time.Second
	if _, err := Find(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--budget") || served.Load() != 0 {
		t.Fatalf("budget of 1s: %v, SUT served %d; want --budget refused before traffic", err, served.Load())
	}
	o.Search.Budget = 3 * time.Second
	start := time.Now()
	res, err := Find(context.Background(), o)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > o.Search.Budget || res.Stopped != "budget" || len(res.Steps) == 0 {
		t.Errorf("took %v for --budget %v (%d steps, stopped %q): want it kept", took, o.Search.Budget, len(res.Steps), res.Stopped)
	}
	t.Logf("%d steps in %v of a %v budget (a step's worst case %v)", len(res.Steps), took, o.Search.Budget, 500*time.Millisecond+time.Second+run.Overhead)
}
