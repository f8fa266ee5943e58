package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestShardsSendEachPairOnce: three shards of one file, merged, equal the
// server's own count; together they sent every pair exactly once.
func TestShardsSendEachPairOnce(t *testing.T) {
	srv, received := uriServer(t)
	file := trafficFile(t, 40) // 40 pairs in 7 sessions
	dir := t.TempDir()
	// Three real processes at once, as three pods would run.
	var parts []string
	var cmds []*exec.Cmd
	for i := 0; i < 3; i++ {
		out := filepath.Join(dir, "shard"+string(rune('0'+i))+".json")
		parts = append(parts, out)
		args := []string{"run", "-f", file, "--target", srv.URL, "--mode", "once", "--vus", "4", "--out", out, "-q", "--log-format", "json"}
		env := append(os.Environ(), "REPLAY_BE_MAIN=1")
		if i == 2 { // the Indexed Job way
			env = append(env, "JOB_COMPLETION_INDEX=2")
			args = append(args, "--shards", "3")
		} else {
			args = append(args, "--shard", string(rune('0'+i))+"/3")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if s := readSummary(t, parts[i]); num(s, "vus_max") > 2 {
			t.Errorf("shard %d ran %v VUs, want its share of 4", i, s["vus_max"])
		}
	}
	got := received()
	if len(got) != 40 || len(slices.Compact(slices.Clone(got))) != 40 {
		t.Fatalf("the shards sent %d requests (%d distinct), want each of 40 once", len(got), len(slices.Compact(slices.Clone(got))))
	}
	total := filepath.Join(dir, "total.json")
	if r := runMain(t, context.Background(), "", append([]string{"report", "merge", "-o", total, "-q"}, parts...)...); r.code != 0 {
		t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, total)
	if num(s, "requests") != 40 || sumValues(s, "status") != 40 {
		t.Errorf("merged: %v requests, statuses %v; the server received 40", s["requests"], s["status"])
	}
	var epRequests int64
	for _, e := range s["endpoints"].([]any) {
		epRequests += int64(e.(map[string]any)["requests"].(float64))
	}
	if epRequests != 40 {
		t.Errorf("merged endpoints hold %d requests, want 40", epRequests)
	}
	for _, args := range [][]string{{"--shard", "3/3"}, {"--shard", "x"}, {"--shards", "3"}, {"--shard", "0/2", "--shards", "2"}} {
		t.Setenv("JOB_COMPLETION_INDEX", "")
		r := runMain(t, context.Background(), "", append([]string{"run", "-f", file, "--target", srv.URL}, args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "--shard") {
			t.Errorf("%v: exit %d, %s", args, r.code, r.stderr)
		}
	}
	if n := len(received()); n != 0 {
		t.Errorf("bad shard flags sent %d requests", n)
	}
}

func TestFlagsFromEnv(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	vus := fs.Int("vus", 1, "")
	rate := fs.String("rate", "", "")
	timeout := fs.Duration("timeout", 0, "")
	fs.Parse([]string{"--rate", "5/s"})
	env := map[string]string{"REPLAY_VUS": "50", "REPLAY_RATE": "9/s", "REPLAY_TIMEOUT": "2s"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := flagsFromEnv(fs, lookup); err != nil {
		t.Fatal(err)
	}
	if *vus != 50 || *rate != "5/s" || timeout.String() != "2s" {
		t.Errorf("got vus %d, rate %s, timeout %v; want 50, the command line's 5/s, 2s", *vus, *rate, *timeout)
	}
	env["REPLAY_VUS"] = "many"
	fs2 := pflag.NewFlagSet("y", pflag.ContinueOnError)
	fs2.Int("vus", 1, "")
	if err := flagsFromEnv(fs2, lookup); err == nil || !strings.Contains(err.Error(), "REPLAY_VUS") {
		t.Errorf("got %v, want an error naming REPLAY_VUS", err)
	}
}

// TestShardWarnsOnlyWhenShardsRunMore: "the shards run more in all than
// asked" is said when they do (one VU, or a stage of one VU, in two
// shards: each runs one), and not for a rate run, whose shards divide the
// rate exactly whatever the VUs the pool starts with (the README's shard
// step, --rate 200/s in two shards, said it falsely).
func TestShardWarnsOnlyWhenShardsRunMore(t *testing.T) {
	t.Parallel()
	srv, _ := uriServer(t)
	file := trafficFile(t, 10)
	for _, tt := range []struct {
		name string
		load []string
		warn bool
	}{
		{"rate", []string{"--rate", "40/s", "--duration", "500ms"}, false},
		{"rate in requests", []string{"--rate", "40req/s", "--duration", "500ms"}, false},
		{"closed, two VUs", []string{"--vus", "2", "--duration", "300ms"}, false},
		{"closed, one VU", []string{"--vus", "1", "--duration", "300ms"}, true},
		{"closed stages ending at one VU", []string{"--stages", "2@200ms,1@200ms"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "-f", file, "--target", srv.URL, "--shard", "0/2", "-q", "--log-format", "json"}, tt.load...)
			r := runMain(t, context.Background(), "", args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if got := strings.Contains(r.stderr, "more in all than asked"); got != tt.warn {
				t.Errorf("got the warning %v, want %v:\n%s", got, tt.warn, r.stderr)
			}
		})
	}
}
