package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportAndMerge(t *testing.T) {
	srv := newSUT(t, 0, 202)
	dir := t.TempDir()
	var parts []string
	for i, n := range []string{"20", "35"} {
		out := filepath.Join(dir, "shard"+n+".json")
		hgrm := filepath.Join(dir, "shard"+n+".hgrm")
		r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 10), "--target", srv.URL,
			"--iterations", n, "--vus", "2", "--out", out, "--hgrm", hgrm, "-q")
		if r.code != 0 {
			t.Fatalf("shard %d: exit %d: %s", i, r.code, r.stderr)
		}
		if data, err := os.ReadFile(hgrm); err != nil || !strings.Contains(string(data), "1/(1-Percentile)") {
			t.Errorf("--hgrm: %v\n%s", err, data)
		}
		parts = append(parts, out)
	}

	r := runMain(t, context.Background(), "", "report", parts[0], "--threshold", "max<0.001ms", "--threshold", "errors<1%")
	if r.code != 99 || !strings.Contains(r.stdout, "Requests") || !strings.Contains(r.stdout, "pass  errors<1%") {
		t.Errorf("report: exit %d, want 99 (max<0.001ms cannot hold)\n%s%s", r.code, r.stdout, r.stderr)
	}

	total := filepath.Join(dir, "total.json")
	r = runMain(t, context.Background(), "", "report", "merge", parts[0], parts[1], "-o", total, "--threshold", "errors<1%")
	if r.code != 0 || !strings.Contains(r.stdout, "Requests") {
		t.Fatalf("merge: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	s := readSummary(t, total)
	// Every iteration of trafficFile is a session of 1 or 2 pairs; the
	// shards' request counts add up.
	a, b := readSummary(t, parts[0]), readSummary(t, parts[1])
	if num(s, "requests") != num(a, "requests")+num(b, "requests") || num(s, "iterations") != 55 || num(s, "vus_max") != 4 {
		t.Errorf("merged requests %v, iterations %v, vus_max %v", s["requests"], s["iterations"], s["vus_max"])
	}

	r = runMain(t, context.Background(), "", "report", "merge", parts[0], parts[1])
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); r.code != 0 || err != nil || num(m, "requests") != num(s, "requests") {
		t.Errorf("merge to stdout: exit %d, %v", r.code, err)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":1,"histogram":"nope"}`), 0o644)
	if r := runMain(t, context.Background(), "", "report", "merge", parts[0], bad); r.code != 1 || !strings.Contains(r.stderr, "summary 2") {
		t.Errorf("a corrupt summary: exit %d, %s", r.code, r.stderr)
	}
	if r := runMain(t, context.Background(), "", "report", filepath.Join(dir, "missing.json")); r.code != 1 {
		t.Errorf("a missing file: exit %d", r.code)
	}
}

// TestCompareWithRecorded: the SUT answers the recorded 202 except on one
// endpoint, and differs in the body only where ids live.
func TestCompareWithRecorded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/events/1") {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	file := trafficFile(t, 40) // every pair recorded 202; 11 paths start /events/1
	out := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--compare", "status",
		"--out", out, "--threshold", "match>90%", "--threshold", "POST /events/{id}: match>=72%")
	if r.code != 99 {
		t.Fatalf("exit %d, want 99 (match is 29/40): %s%s", r.code, r.stdout, r.stderr)
	}
	s := readSummary(t, out)
	c := s["compare"].(map[string]any)
	if c["compared"] != 40.0 || c["matched"] != 29.0 {
		t.Errorf("compare: %v", c)
	}
	m := c["mismatches"].([]any)[0].(map[string]any)
	if m["kind"] != "status" || m["recorded"] != "202" || m["replayed"] != "404" || m["count"] != 11.0 {
		t.Errorf("top mismatch: %v", m)
	}
	if !strings.Contains(r.stdout, "29 of 40 match (72.50%)") || !strings.Contains(r.stdout, "pass  POST /events/{id}: match>=72%") {
		t.Errorf("report:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"--threshold", "match>1%"}, {"--compare", "headers"}, {"--compare", "status", "--compare-ignore", "id"}} {
		if r := runMain(t, context.Background(), "", append([]string{"run", "-f", file, "--target", srv.URL}, args...)...); r.code != 1 {
			t.Errorf("%v: exit %d, want 1", args, r.code)
		}
	}
}
