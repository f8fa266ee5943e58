package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// idempotentSUT is a loopback payments API that deduplicates as real ones
// do: a POST whose Idempotency-Key, payment_id or req it has seen is
// answered 409 from its "cache". A GET of a payment must carry the key of
// the POST that created it on the same connection (the same session).
type idempotentSUT struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]string // key, payment_id or req → who used it first
	last map[string]string // connection → the key of its last POST
	keys []string          // every POST's key, in order
	errs []string
}

func newIdempotentSUT(t *testing.T) *idempotentSUT {
	s := &idempotentSUT{seen: map[string]string{}, last: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

var paymentID = regexp.MustCompile(`"payment_id":"([^"]*)"`)

func (s *idempotentSUT) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case "POST":
		s.keys = append(s.keys, key)
		s.last[r.RemoteAddr] = key
		m := paymentID.FindSubmatch(body)
		if m == nil {
			s.errs = append(s.errs, "a POST without payment_id: "+string(body))
			http.Error(w, "no payment_id", http.StatusBadRequest)
			return
		}
		dup := false
		for _, v := range []string{"key " + key, "payment " + string(m[1]), "req " + r.URL.Query().Get("req")} {
			if first, ok := s.seen[v]; ok {
				s.errs = append(s.errs, fmt.Sprintf("%s again (first %s)", v, first))
				dup = true
			}
			s.seen[v] = r.RemoteAddr
		}
		if dup {
			http.Error(w, "duplicate: answered from the idempotency cache", http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusCreated)
	default:
		if want := s.last[r.RemoteAddr]; key != want {
			s.errs = append(s.errs, fmt.Sprintf("GET with key %s after the session's POST with %s", key, want))
			http.Error(w, "not this session's payment", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

// paymentsTraffic: two sessions, each a POST with an idempotency key, a
// payment id in the body and a request number in the query, then a GET
// with the same key.
func paymentsTraffic(t *testing.T) string {
	var b strings.Builder
	for i, key := range []string{"3f1c9a2e-5b7d-4e8f-9a01-b2c3d4e5f607", "8d0e7f6a-1b2c-4d3e-8f4a-5b6c7d8e9f00"} {
		fmt.Fprintf(&b, `{"tags":{"session":"s%d"},"http":{"req":{"method":"POST","uri":"/payments?req=10000000000%d","host":"pay","headers":{"Idempotency-Key":["%s"],"Content-Type":["application/json"]},"body":"{\"payment_id\":\"pay_A1b2C3d4\",\"amount\":5}"},"res":{"statusCode":201}}}`+"\n", i, i, key)
		fmt.Fprintf(&b, `{"tags":{"session":"s%d"},"http":{"req":{"method":"GET","uri":"/payments/status?req=10000000000%d","host":"pay","headers":{"Idempotency-Key":["%s"]}},"res":{"statusCode":200}}}`+"\n", i, i, key)
	}
	path := filepath.Join(t.TempDir(), "payments.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFreshEndToEnd replays a payments file against a SUT that
// deduplicates, twice, with two VUs in loop mode: with the fresh transform
// no key, payment id or request number repeats within or across the runs,
// and each session's GET carries the fresh key of its own POST. The same
// --seed gives the same values again; two shards sharing it, never. Without the transform the SUT
// answers the replays from its cache.
func TestFreshEndToEnd(t *testing.T) {
	file := paymentsTraffic(t)
	tf := writeTransforms(t, `transforms:
  - fresh:
      headers: [Idempotency-Key]
      json: [payment_id]
      query: [req]
`)
	srv := newIdempotentSUT(t)
	run := func(extra ...string) map[string]any {
		t.Helper()
		out := filepath.Join(t.TempDir(), "s.json")
		args := append([]string{"run", "-f", file, "--target", srv.URL, "--vus", "2", "--mode", "loop", "--iterations", "20", "--out", out, "-q"}, extra...)
		if r := runMain(t, context.Background(), "", args...); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		return readSummary(t, out)
	}
	for i := range 2 {
		s := run("--transforms", tf)
		if num(s, "requests") != 40 || num(s, "succeeded") != 40 {
			t.Errorf("run %d: requests %d, succeeded %d, want 40 and 40; status %v", i, num(s, "requests"), num(s, "succeeded"), s["status"])
		}
		tr := s["transforms"].([]any)[0].(map[string]any)
		if !strings.HasPrefix(tr["name"].(string), "fresh (seed ") || tr["changed"].(float64) != 40 || tr["failed"].(float64) != 0 {
			t.Errorf("run %d: transforms %v, want fresh with 40 changed, 0 failed", i, tr)
		}
	}
	srv.mu.Lock()
	if len(srv.errs) > 0 || len(srv.keys) != 40 {
		t.Errorf("%d POSTs; the SUT saw %d problems: %q", len(srv.keys), len(srv.errs), srv.errs)
	}
	for _, k := range srv.keys {
		if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(k) {
			t.Errorf("key %q is not a UUID v4 as recorded", k)
		}
	}
	srv.keys, srv.errs = nil, nil
	srv.mu.Unlock()

	// The same --seed, the same values (each VU makes the same sequence;
	// one VU, so that scheduling cannot hand iterations to another): the
	// second run is all duplicates.
	for range 2 {
		run("--transforms", tf, "--seed", "77", "--vus", "1")
	}
	srv.mu.Lock()
	if len(srv.keys) != 40 || len(srv.errs) != 20*3 {
		t.Errorf("--seed 77 twice: %d POSTs, %d repeats, want 40 and 60 (each key, id and req once again)", len(srv.keys), len(srv.errs))
	} else if !slices.Equal(srv.keys[:20], srv.keys[20:]) {
		t.Errorf("--seed 77 twice gave different keys:\n%q\n%q", srv.keys[:20], srv.keys[20:])
	}
	srv.keys, srv.errs = nil, nil
	srv.mu.Unlock()

	// Two shards of one run (one VU and 10 iterations each, sharing
	// --seed): none repeats the other's values.
	for _, sh := range []string{"0/2", "1/2"} {
		run("--transforms", tf, "--seed", "78", "--shard", sh)
	}
	srv.mu.Lock()
	if len(srv.keys) != 20 || len(srv.errs) != 0 {
		t.Errorf("two shards: %d POSTs, want 20; the SUT saw %d problems: %q", len(srv.keys), len(srv.errs), srv.errs)
	}
	srv.keys = nil
	srv.mu.Unlock()

	// Without the transform the recorded keys repeat at once.
	s := run()
	if num(s, "succeeded") == 40 {
		t.Errorf("without fresh all 40 requests succeeded: the SUT does not deduplicate")
	}
}
