package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// reactionFile writes a file as a Speedscale snapshot's reaction file
// holds it (two answers to one signature, instance 1 first), with a
// Postgres line and a recorded IN request pair beside them.
func reactionFile(t *testing.T) string {
	t.Helper()
	sig := func(instance string) string {
		return `{"l7protocol":"https","direction":"OUT","command":"GET","location":"/planetary/apod","network_address":"api.nasa.gov:443",` +
			`"http":{"res":{"statusCode":429,"body":"slow down"},"sig":{"host":"api.nasa.gov","method":"GET","url":"/planetary/apod"}},` +
			`"mutableSignature":{"http:host":"api.nasa.gov","http:method":"GET","http:queryparams:api_key":"DEMO_KEY","http:url":"/planetary/apod","instance":"` + instance + `"}}` + "\n"
	}
	content := sig("1") + sig("0") +
		`{"l7protocol":"postgres","direction":"OUT","postgres":{"query":"SELECT 1"}}` + "\n" +
		`{"l7protocol":"http","direction":"IN","http":{"req":{"method":"GET","uri":"/api/nasa","host":"svc"},"res":{"statusCode":200}}}` + "\n"
	path := filepath.Join(t.TempDir(), "snapshot-reaction.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInspectCountsSignatureLines: inspect reads the signature lines as
// pairs and counts them, and the Postgres line by protocol.
func TestInspectCountsSignatureLines(t *testing.T) {
	path := reactionFile(t)
	r := runMain(t, context.Background(), "", "inspect", path)
	for _, want := range []string{"Pairs            3", "Signature lines  2: answers whose request is a Speedscale signature", "1 line, not HTTP requests to replay: postgres 1", "GET /planetary/apod"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("inspect: exit %d, want %q in:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	r = runMain(t, context.Background(), "", "inspect", "--json", path)
	var st struct {
		Pairs          int            `json:"pairs"`
		SignatureLines int            `json:"signature_lines"`
		Skipped        map[string]any `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Pairs != 3 || st.SignatureLines != 2 || !reflect.DeepEqual(st.Skipped, map[string]any{"protocol": map[string]any{"postgres": 1.0}}) {
		t.Errorf("inspect --json: %v %+v, want 3 pairs, 2 signature lines, postgres 1 skipped\n%s", err, st, r.stderr)
	}
}

// TestRunSkipsSignatureLines: a run has no request to send for a
// signature line: it replays the request pair and counts the signature
// lines as such in its summary.
func TestRunSkipsSignatureLines(t *testing.T) {
	srv := newSUT(t, 0, 200)
	out := filepath.Join(t.TempDir(), "run.json")
	r := runMain(t, context.Background(), "", "run", "-f", reactionFile(t), "--target", srv.URL, "--out", out, "-q", "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := map[string]any{"protocol": map[string]any{"postgres": 1.0}, "signature": 2.0}
	if got := readSummary(t, out)["skipped"]; !reflect.DeepEqual(got, want) {
		t.Errorf("skipped: got %v, want %v", got, want)
	}
	if !strings.Contains(r.stderr, `"signature":2`) || !strings.Contains(r.stderr, "signature lines: answers without their request, which replay mock serves") {
		t.Errorf("the run's log does not count the signature lines:\n%s", r.stderr)
	}
	if n := srv.count.Load(); n != 1 {
		t.Errorf("the server got %d requests, want the 1 request pair", n)
	}
}
