package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/report"
)

type fakeRecorder struct{ live report.Live }

func (f fakeRecorder) Live() report.Live { return f.live }

func TestMetricsText(t *testing.T) {
	live := report.Live{Requests: 10, Succeeded: 7, Failed: 3, Errors: map[string]int64{"timeout": 2},
		Latency: report.Latency{P99: 250, Max: 1000}}
	live.StatusClass[2], live.StatusClass[5] = 7, 1
	s, err := Listen("127.0.0.1:0", Sources{Recorder: fakeRecorder{live}, VUs: func() (int, int64) { return 4, 2 }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		"replay_requests_total 10", "replay_failed_total 3", `replay_errors_total{kind="timeout"} 2`,
		`replay_responses_total{class="2xx"} 7`, `replay_responses_total{class="5xx"} 1`,
		"replay_vus 4", "replay_in_flight 2", `replay_latency_seconds{quantile="0.99"} 0.25`, `replay_latency_seconds{quantile="1"} 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("missing %q in:\n%s", want, body)
		}
	}
	if _, err := Listen("127.0.0.1:notaport", Sources{}); err == nil {
		t.Error("a bad address listened")
	}
}
