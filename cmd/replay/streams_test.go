package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
)

// TestRunStreams runs replay with --streams against a cleartext HTTP/2
// server: the run says before traffic how many connections its VUs
// share, every request is answered over HTTP/2, and the summary's
// connections are the ones the server saw, a group's each at most.
func TestRunStreams(t *testing.T) {
	seen := h2peer.NewSeen()
	target := h2peer.H2CServer(t, seen)
	out := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 60), "--target", target, "--h2c",
		"--vus", "20", "--streams", "10", "--out", out, "-q", "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `"streams":10,"connections":2`) || !strings.Contains(r.stderr, "VUs share HTTP/2 connections") {
		t.Errorf("the run did not say before traffic that 20 VUs share 2 connections:\n%s", r.stderr)
	}
	sum := readSummary(t, out)
	conns := sum["connections"].(float64)
	if sum["requests"].(float64) != 60 || sum["succeeded"].(float64) != 60 || seen.Protos[2] != 60 {
		t.Errorf("requests %v, succeeded %v, %d over HTTP/2; want 60 answered over HTTP/2", sum["requests"], sum["succeeded"], seen.Protos[2])
	}
	if conns < 1 || conns > 2 || int64(conns) != seen.Conns.Load() {
		t.Errorf("summary: %v connections, the server saw %d; want the same, 2 at most (20 VUs, 10 a connection)", conns, seen.Conns.Load())
	}

	r = runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 6), "--target", target, "--vus", "4", "--streams", "2")
	if r.code == 0 || !strings.Contains(r.stderr, "--streams 2 shares HTTP/2 connections") || !strings.Contains(r.stderr, "add --h2c") {
		t.Errorf("without --h2c: exit %d, stderr %q; want a refusal naming --streams and --h2c", r.code, r.stderr)
	}
}
