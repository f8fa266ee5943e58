package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsCheckedAsTheFileIs: values a flag cannot mean are refused
// before anything is sent, naming the flag.
func TestFlagsCheckedAsTheFileIs(t *testing.T) {
	srv := newSUT(t, 0, 200)
	good := trafficFile(t, 5)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"port out of range", []string{"run", "-f", good, "--target", "http://127.0.0.1:99999"}, "--target: want a port in 1..65535"},
		{"port zero", []string{"run", "-f", good, "--target", "http://127.0.0.1:0"}, "--target: want a port in 1..65535"},
		{"host-map port out of range", []string{"run", "-f", good, "--target", srv.URL, "--host-map", "recorded:80=http://127.0.0.1:70000"}, "--host-map"},
		{"explicit zero duration", []string{"run", "-f", good, "--target", srv.URL, "--duration", "0s"}, "--duration: want a positive duration"},
		{"explicit zero max-vus", []string{"run", "-f", good, "--target", srv.URL, "--rate", "10/s", "--duration", "1s", "--max-vus", "0"}, "--max-vus: want at least 1"},
		{"export k6 zero duration", []string{"export", "k6", "-f", good, "--target", srv.URL, "--duration", "0s", "-o", t.TempDir() + "/x.js"}, "--duration: want a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, context.Background(), "", tt.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tt.want)
			}
			if n := srv.count.Load(); n != 0 {
				t.Fatalf("the SUT received %d requests, want 0", n)
			}
		})
	}
}

// TestEmptyShard: a shard that gets no iteration (more shards than
// iterations) sends nothing, writes a valid empty summary that report
// merge accepts, skips its thresholds and says so. It runs in a process
// of its own: it used to crash on an integer divide by zero.
func TestEmptyShard(t *testing.T) {
	srv := newSUT(t, 0, 200)
	file := trafficFile(t, 2) // two sessions: shard 2 of 3 gets none
	dir := t.TempDir()
	var parts []string
	for _, i := range []string{"0", "2"} {
		out := filepath.Join(dir, "shard-"+i+".json")
		parts = append(parts, out)
		cmd := exec.Command(os.Args[0], "run", "-f", file, "--target", srv.URL, "--shards", "3", "--rate", "20/s", "--duration", "500ms",
			"--threshold", "rps>100000", "--out", out, "-q", "--log-format", "json")
		cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1", "JOB_COMPLETION_INDEX="+i)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if i == "0" {
			continue // it sent traffic, and its threshold failed
		}
		if err != nil {
			t.Fatalf("empty shard: %v\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "got no iterations") || !strings.Contains(stderr.String(), "thresholds skipped") {
			t.Errorf("empty shard did not say so:\n%s", stderr.String())
		}
		if s := readSummary(t, out); s["requests"].(float64) != 0 {
			t.Errorf("empty shard: requests %v, want 0", s["requests"])
		}
	}
	total := filepath.Join(dir, "total.json")
	if r := runMain(t, context.Background(), "", append([]string{"report", "merge", "-o", total, "-q"}, parts...)...); r.code != 0 {
		t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
	}
	if got, want := readSummary(t, total)["requests"].(float64), float64(srv.count.Load()); got != want || got == 0 {
		t.Errorf("merged requests %v, the server counted %v", got, want)
	}
}
