package report

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestJudge: a saved summary is judged by thresholds given later; one
// naming an endpoint it has not is refused, and the verdict lists what
// failed with what it measured.
func TestJudge(t *testing.T) {
	s := &Summary{Requests: 100, Failed: 5, Answered: 100, Latency: Latency{P99: 250}, Endpoints: []Endpoint{{Name: "GET /a"}, {Name: "POST /b"}}}
	if got := s.EndpointNames(); !reflect.DeepEqual(got, []string{"GET /a", "POST /b"}) {
		t.Errorf("endpoint names %v", got)
	}
	if err := Judge(s, []string{"GET /c: p99<1s"}); err == nil || !strings.Contains(err.Error(), `no endpoint "GET /c"`) {
		t.Errorf("an unknown endpoint: got %v", err)
	}
	if err := Judge(s, []string{"p99<200ms", "errors<10%"}); err != nil {
		t.Fatal(err)
	}
	if got := s.FailedThresholds(); !reflect.DeepEqual(got, []string{"p99<200ms (measured 250.000 ms)"}) {
		t.Errorf("failed %q, want p99 only", got)
	}
	if err := Judge(s, nil); err != nil || s.FailedThresholds() != nil || len(s.Thresholds) != 0 {
		t.Errorf("judged by nothing: %v %v", err, s.Thresholds)
	}
	if _, err := ParseThresholds([]string{"p99<1s", "p99 < fast"}); err == nil || !strings.Contains(err.Error(), "p99 < fast") {
		t.Errorf("a bad expression: got %v, want it named", err)
	}
}

func TestReadSummaryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, []byte(`{"version": 2, "requests": 3`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSummaryFile(path); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("a truncated summary: got %v, want an error naming the file", err)
	}
	if err := os.WriteFile(path, []byte(`{"version": 2, "requests": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := ReadSummaryFile(path); err != nil || s.Requests != 3 {
		t.Errorf("got %+v %v", s, err)
	}
}
