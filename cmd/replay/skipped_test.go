package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var speedscaleFile = filepath.Join("..", "..", "pkg", "rrpair", "testdata", "speedscale.jsonl")

// TestSpeedscaleShardsMergeSkippedOnce runs a Speedscale-shaped export in
// two shards against a loopback server and merges their summaries: the IN
// HTTP pairs are replayed once in all, and the merged summary counts the
// skipped lines once, as each shard does.
func TestSpeedscaleShardsMergeSkippedOnce(t *testing.T) {
	srv := newSUT(t, 0, 200)
	dir := t.TempDir()
	want := map[string]any{"protocol": map[string]any{"postgres": 2.0, "mysql": 1.0}, "response_only": 1.0, "direction_out": 2.0}
	var outs []string
	for _, shard := range []string{"0/2", "1/2"} {
		out := filepath.Join(dir, strings.Replace(shard, "/", "-", 1)+".json")
		r := runMain(t, context.Background(), "", "run", "-f", speedscaleFile, "--target", srv.URL, "--drop", "host=orders.svc:9090", "--shard", shard, "--out", out, "-q", "--log-format", "json")
		if r.code != 0 {
			t.Fatalf("shard %s: exit %d: %s", shard, r.code, r.stderr)
		}
		if got := readSummary(t, out)["skipped"]; !reflect.DeepEqual(got, want) {
			t.Errorf("shard %s skipped: got %v, want %v", shard, got, want)
		}
		if !strings.Contains(r.stderr, `"skipped":6`) {
			t.Errorf("shard %s: no log line counts the skipped lines:\n%s", shard, r.stderr)
		}
		outs = append(outs, out)
	}
	if n := srv.count.Load(); n != 3 {
		t.Errorf("the server got %d requests, want the 3 IN HTTP pairs", n)
	}
	merged := filepath.Join(dir, "merged.json")
	r := runMain(t, context.Background(), "", append([]string{"report", "merge", "-o", merged}, outs...)...)
	if r.code != 0 {
		t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
	}
	sum := readSummary(t, merged)
	if !reflect.DeepEqual(sum["skipped"], want) || sum["requests"] != 3.0 {
		t.Errorf("merged: skipped %v, requests %v; want %v, 3", sum["skipped"], sum["requests"], want)
	}
	r = runMain(t, context.Background(), "", "report", merged)
	if r.code != 0 || !strings.Contains(r.stdout, "6: postgres 2, mysql 1, response_only 1, direction_out 2") {
		t.Errorf("report: exit %d, the text lacks the skipped counts:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestInspectSpeedscale(t *testing.T) {
	r := runMain(t, context.Background(), "", "inspect", speedscaleFile)
	if r.code != 0 || !strings.Contains(r.stdout, "6 lines, not HTTP requests to replay: postgres 2, mysql 1, response_only 1, direction_out 2") {
		t.Errorf("inspect: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runMain(t, context.Background(), "", "inspect", "--json", "--keep", "direction=OUT", "--keep", "host=payments.example.com", speedscaleFile)
	var st struct {
		Pairs    int                        `json:"pairs"`
		Filtered int                        `json:"filtered_out"`
		Skipped  map[string]json.RawMessage `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Pairs != 1 || st.Filtered != 5 || st.Skipped["direction_out"] != nil {
		t.Errorf("inspect --json --keep direction=OUT: %v %+v\n%s", err, st, r.stderr)
	}
	r = runMain(t, context.Background(), "", "inspect", "--keep", "direction=SIDEWAYS", speedscaleFile)
	if r.code != 1 || !strings.Contains(r.stderr, "--keep: direction: want IN, OUT or IN,OUT") {
		t.Errorf("a bad direction: exit %d, stderr %q", r.code, r.stderr)
	}
}
