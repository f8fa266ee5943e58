package run

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/rs/zerolog"
)

// pathSUT is a loopback server that notes the method and target of every
// request it answers.
type pathSUT struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // mu guards seen
}

func newPathSUT(t *testing.T) *pathSUT {
	s := &pathSUT{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Method+" "+r.RequestURI)
		s.mu.Unlock()
		w.WriteHeader(200)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *pathSUT) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.seen)
	slices.Sort(out)
	return out
}

// TestSpeedscaleFileReplaysOnlyINHTTP runs a Speedscale-shaped export
// (HTTP pairs IN and OUT, postgres and mysql queries, a response-only
// record, gRPC calls, left out by their hosts as an HTTP/1.1 SUT needs)
// against a loopback server: exactly the IN HTTP pairs reach it, and the
// summary and the log count the rest by kind.
func TestSpeedscaleFileReplaysOnlyINHTTP(t *testing.T) {
	file := filepath.Join("..", "..", "pkg", "rrpair", "testdata", "speedscale.jsonl")
	tests := []struct {
		name    string
		keep    []string
		want    []string
		skipped *report.Skipped
	}{
		{
			name:    "default",
			want:    []string{"GET /health", "GET /orders/1", "POST /orders"},
			skipped: &report.Skipped{Protocol: map[string]int{"postgres": 2, "mysql": 1}, ResponseOnly: 1, DirectionOut: 2},
		},
		{
			name:    "--keep direction=IN,OUT",
			keep:    []string{"direction=IN,OUT"},
			want:    []string{"GET /health", "GET /orders/1", "POST /orders", "POST /v1/charges"},
			skipped: &report.Skipped{Protocol: map[string]int{"postgres": 2, "mysql": 1}, ResponseOnly: 1},
		},
		{
			name:    "--keep tag.tenant=acme",
			keep:    []string{"tag.tenant=acme"},
			want:    []string{"GET /health", "GET /orders/1"},
			skipped: &report.Skipped{Protocol: map[string]int{"postgres": 2, "mysql": 1}, ResponseOnly: 1, DirectionOut: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newPathSUT(t)
			o := options(file, srv.URL)
			o.Filter.Keep = tt.keep
			o.Filter.Drop = []string{"host=orders.svc:9090,inventory.svc:9090"} // the gRPC services
			var logs bytes.Buffer
			o.Log = zerolog.New(&logs)
			sum, err := execute(t, context.Background(), o, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got := srv.requests(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("the server got %q, want %q", got, tt.want)
			}
			if sum.Requests != int64(len(tt.want)) || sum.Succeeded != int64(len(tt.want)) {
				t.Errorf("summary: %d requests, %d succeeded; want %d", sum.Requests, sum.Succeeded, len(tt.want))
			}
			if !reflect.DeepEqual(sum.Skipped, tt.skipped) {
				t.Errorf("summary skipped: got %+v, want %+v", sum.Skipped, tt.skipped)
			}
			checkSkippedLog(t, logs.String(), tt.skipped)
		})
	}
}

// checkSkippedLog finds the one log line that counts the skipped lines
// and checks its counts against want.
func checkSkippedLog(t *testing.T, logs string, want *report.Skipped) {
	t.Helper()
	var found int
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var total struct {
			Skipped *int `json:"skipped"`
		}
		var counts report.Skipped // its keys are the line's top-level keys
		if err := json.Unmarshal([]byte(line), &total); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if total.Skipped == nil {
			continue
		}
		found++
		json.Unmarshal([]byte(line), &counts)
		if *total.Skipped != want.Total() || !reflect.DeepEqual(counts, *want) {
			t.Errorf("log line %s: want %d skipped, %+v", line, want.Total(), *want)
		}
	}
	if found != 1 {
		t.Errorf("%d log lines count the skipped lines, want 1:\n%s", found, logs)
	}
}
