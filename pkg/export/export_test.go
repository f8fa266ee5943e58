package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/golden"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func open(t *testing.T) *rrpair.File { return openFile(t, "traffic.jsonl") }

func openFile(t *testing.T, name string) *rrpair.File {
	f, err := rrpair.Open(filepath.Join("testdata", name), rrpair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestVegetaGolden(t *testing.T) {
	var buf bytes.Buffer
	st, err := Vegeta(&buf, open(t), "", func(int, string) { t.Error("skipped") })
	if err != nil || st.Requests != 3 {
		t.Fatalf("%+v, %v", st, err)
	}
	golden.Check(t, "targets.golden.json", buf.Bytes())
}

func TestK6Golden(t *testing.T) {
	for _, tt := range []struct {
		name string
		load K6Load
	}{
		{"once", K6Load{VUs: 10}},
		{"vus", K6Load{VUs: 20, Duration: time.Minute}},
		{"rate", K6Load{VUs: 5, MostVUs: 100, Rate: 50}},
		{"rate-stages", K6Load{VUs: 5, MostVUs: 1000, Rate: 0, RateStages: true, Stages: []K6Stage{{30 * time.Second, 100}, {time.Minute, 100}}}},
		// 1200 req/s of iterations of 6.06 requests, 150/m: whole counts per a longer timeUnit.
		{"rate-fraction", K6Load{VUs: 5, MostVUs: 100, RateStages: true, Rate: 1200 / 6.06}},
		{"rate-stages-fraction", K6Load{VUs: 5, MostVUs: 100, Rate: 0, RateStages: true, Stages: []K6Stage{{30 * time.Second, 2.5}, {time.Minute, 1.25}}}},
		{"iterations-duration", K6Load{VUs: 4, Iterations: 50, Duration: 20 * time.Second}},
		{"vu-stages", K6Load{VUs: 5, Stages: []K6Stage{{10 * time.Second, 50}, {20 * time.Second, 0}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var script, data bytes.Buffer
			st, err := K6(&script, &data, "./load.data.json", open(t), K6Options{Target: "http://127.0.0.1:8080", Source: "traffic.jsonl", Load: tt.load}, func(int, string) { t.Error("skipped") })
			if err != nil || st.Iterations != 2 || st.Requests != 3 {
				t.Fatalf("%+v, %v", st, err)
			}
			golden.Check(t, "k6-"+tt.name+".golden.js", script.Bytes())
			golden.Check(t, "k6.golden.data.json", data.Bytes())
		})
	}
}

func TestSkipsWithoutHost(t *testing.T) {
	f, err := rrpair.OpenReader(bytes.NewReader([]byte(`{"http":{"req":{"method":"GET","uri":"/a"}}}`+"\n")), "t.jsonl", rrpair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []int
	st, err := Vegeta(&bytes.Buffer{}, f, "", func(line int, _ string) { lines = append(lines, line) })
	if err != nil || st.Requests != 0 || len(lines) != 1 || lines[0] != 1 {
		t.Errorf("%+v, skipped %v, %v", st, lines, err)
	}
}

// TestK6Session: a session with repeated Cookie fields (as an HTTP/2
// recording has them), a header spelled twice, recorded gaps and a gRPC
// call. Cookies are joined with "; ", the two spellings are one header,
// --think recorded becomes the sleep before each request, and the gRPC
// pair is skipped and counted.
func TestK6Session(t *testing.T) {
	var script, data bytes.Buffer
	var skipped []string
	st, err := K6(&script, &data, "./load.data.json", openFile(t, "session.jsonl"), K6Options{Target: "http://127.0.0.1:8080", Source: "session.jsonl",
		Load: K6Load{VUs: 2, Duration: time.Minute, Think: true, Speed: 2}}, func(line int, why string) { skipped = append(skipped, fmt.Sprintf("%d: %s", line, why)) })
	if err != nil || st != (Stats{Iterations: 1, Requests: 3, GRPC: 1}) {
		t.Fatalf("%+v, %v", st, err)
	}
	if len(skipped) != 1 || !strings.HasPrefix(skipped[0], "3: a gRPC pair") {
		t.Errorf("skipped %q, want line 3, a gRPC pair", skipped)
	}
	golden.Check(t, "k6-session.golden.js", script.Bytes())
	golden.Check(t, "k6-session.golden.data.json", data.Bytes())
	var iters [][]k6Request
	if err := json.Unmarshal(data.Bytes(), &iters); err != nil {
		t.Fatal(err)
	}
	reqs := iters[0]
	// 10:00:00 + 250ms answered, next at 10:00:01.75: 1.5s, at speed 2;
	// then 10:00:01.75 + 100ms to 10:00:03 (the gRPC pair skipped): 1.15s.
	for i, want := range []struct {
		cookie string
		think  float64
	}{{"a=1; b=2", 0}, {"a=1; b=2", 0.75}, {"", 0.575}} {
		if got := reqs[i].Headers["Cookie"] + reqs[i].Headers["cookie"]; got != want.cookie || reqs[i].Think != want.think {
			t.Errorf("request %d: cookie %q, think %v; want %q, %v", i, got, reqs[i].Think, want.cookie, want.think)
		}
	}
	if got := reqs[0].Headers["X-Tag"]; got != "x, y" || len(reqs[0].Headers) != 3 {
		t.Errorf("X-Tag %q in %v, want \"x, y\" under the first spelling", got, reqs[0].Headers)
	}

	var targets bytes.Buffer
	vst, err := Vegeta(&targets, openFile(t, "session.jsonl"), "", func(int, string) {})
	if err != nil || vst != (Stats{Requests: 3, GRPC: 1}) || strings.Contains(targets.String(), "grpc") {
		t.Errorf("vegeta: %+v, %v:\n%s", vst, err, targets.String())
	}
}
