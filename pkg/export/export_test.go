package export

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/golden"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func open(t *testing.T) *rrpair.File {
	f, err := rrpair.Open(filepath.Join("testdata", "traffic.jsonl"), rrpair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestVegetaGolden(t *testing.T) {
	var buf bytes.Buffer
	n, err := Vegeta(&buf, open(t), "", func(int, string) { t.Error("skipped") })
	if err != nil || n != 3 {
		t.Fatalf("%d targets, %v", n, err)
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
		{"rate", K6Load{VUs: 5, MaxVUs: 100, Rate: 50}},
		{"rate-stages", K6Load{VUs: 5, Rate: 0, RateStages: true, Stages: []K6Stage{{30 * time.Second, 100}, {time.Minute, 100}}}},
		{"vu-stages", K6Load{VUs: 5, Stages: []K6Stage{{10 * time.Second, 50}, {20 * time.Second, 0}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var script, data bytes.Buffer
			iters, reqs, err := K6(&script, &data, "./load.data.json", open(t), "http://127.0.0.1:8080", "traffic.jsonl", tt.load, func(int, string) { t.Error("skipped") })
			if err != nil || iters != 2 || reqs != 3 {
				t.Fatalf("%d iterations, %d requests, %v", iters, reqs, err)
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
	n, err := Vegeta(&bytes.Buffer{}, f, "", func(line int, _ string) { lines = append(lines, line) })
	if err != nil || n != 0 || len(lines) != 1 || lines[0] != 1 {
		t.Errorf("n %d, skipped %v, %v", n, lines, err)
	}
}
