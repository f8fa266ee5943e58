package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// misbehaving answers 500, stalls past the timeout, resets, hangs up or
// answers 202, in turn, and counts the requests it received.
func misbehaving(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 5 {
		case 0:
			w.WriteHeader(http.StatusInternalServerError)
		case 1:
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		case 2:
			c, _, _ := w.(http.Hijacker).Hijack()
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		case 3:
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func num(m map[string]any, key string) int64 {
	v, _ := m[key].(float64)
	return int64(v)
}

func sumValues(m map[string]any, key string) int64 {
	obj, _ := m[key].(map[string]any)
	var s int64
	for _, v := range obj {
		s += int64(v.(float64))
	}
	return s
}

// TestAccountingAddsUp checks docs/design.md's counting end to end, from the
// SUT's own count to the summary JSON.
func TestAccountingAddsUp(t *testing.T) {
	t.Parallel()
	srv, received := misbehaving(t)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()

	for _, tc := range []struct {
		name, target string
		received     *atomic.Int64
		want         map[string]int64 // expected error counts
	}{
		{"misbehaving", srv.URL, received, map[string]int64{"timeout": 4, "reset": 4, "eof": 4}},
		{"down", downURL, nil, map[string]int64{"connect": 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "summary.json")
			r := runMain(t, context.Background(), "", "run", "-f", trafficFile(t, 20), "--target", tc.target,
				"--vus", "3", "--timeout", "300ms", "--out", out, "-q", "--log-level", "error")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			s := readSummary(t, out)
			requests := num(s, "requests")
			if requests != 20 {
				t.Errorf("requests: got %d, want 20", requests)
			}
			if got := num(s, "succeeded") + num(s, "failed"); got != requests {
				t.Errorf("succeeded + failed = %d, want requests = %d", got, requests)
			}
			if got := sumValues(s, "status") + sumValues(s, "errors"); got != requests {
				t.Errorf("status counts + error counts = %d, want requests = %d", got, requests)
			}
			errs, _ := s["errors"].(map[string]any)
			for kind, want := range tc.want {
				if got := int64(errs[kind].(float64)); got != want {
					t.Errorf("errors.%s: got %d, want %d (%v)", kind, got, want, errs)
				}
			}
			var connect int64
			if v, ok := errs["connect"].(float64); ok {
				connect = int64(v)
			}
			var got int64
			if tc.received != nil {
				got = tc.received.Load()
			}
			if want := requests - connect - num(s, "unsent"); got != want {
				t.Errorf("the SUT received %d, want requests − errors.connect − unsent = %d", got, want)
			}
		})
	}
}
