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
