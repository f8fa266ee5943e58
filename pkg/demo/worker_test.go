package demo

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// sink is a loopback receiver that keeps the ce-ids delivered to it.
type sink struct {
	*httptest.Server
	mu  sync.Mutex
	ids []string
	at  []time.Time
}

func newSink(t *testing.T) *sink {
	s := &sink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stage/processed" || r.Header.Get("ce-type") != "demo.event.processed" {
			http.Error(w, "unexpected delivery", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.ids = append(s.ids, r.Header.Get("ce-id"))
		s.at = append(s.at, time.Now())
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

func postEvent(t *testing.T, url, id string) {
	t.Helper()
	tok, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte(JWTSecret))
	req, _ := http.NewRequest("POST", url+"/events", strings.NewReader(`{"type":"click"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	if id != "" {
		req.Header.Set("ce-id", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /events: %d", resp.StatusCode)
	}
}

func TestWorkerDeliversEachEventOnce(t *testing.T) {
	sk := newSink(t)
	srv, err := StartWith("127.0.0.1:0", Options{SinkURL: sk.URL, WorkerRate: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	start := time.Now()
	for i := range 20 {
		postEvent(t, srv.URL(), fmt.Sprintf("ev-%d", i))
	}
	postEvent(t, srv.URL(), "") // no ID: nothing to deliver
	deadline := time.Now().Add(10 * time.Second)
	// The sink keeps an event before it answers; the worker counts it after.
	for (len(sk.received()) < 20 || srv.Queue().Delivered < 20) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := sk.received()
	if len(got) != 20 {
		t.Fatalf("delivered %d events, want 20; queue %+v", len(got), srv.Queue())
	}
	for i, id := range got {
		if id != fmt.Sprintf("ev-%d", i) {
			t.Errorf("delivery %d: %s, want ev-%d (in order)", i, id, i)
		}
	}
	// 20 events at 200/s take at least ~95 ms: the worker is rate-bound.
	if took := sk.at[len(sk.at)-1].Sub(start); took < 80*time.Millisecond {
		t.Errorf("20 deliveries took %v, want the worker's rate (200/s) to show", took)
	}
	if q := srv.Queue(); q.Delivered != 20 || q.Backlog != 0 || q.Dropped != 0 {
		t.Errorf("queue %+v", q)
	}
}

func TestWorkerLoopbackOnly(t *testing.T) {
	if _, err := StartWith("127.0.0.1:0", Options{SinkURL: "http://example.com:80"}); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Errorf("got %v, want the demo to refuse a sink outside loopback", err)
	}
}

// With a delay, the worker delivers no event sooner than the delay after
// it was queued, and still each once, in order.
func TestWorkerDelay(t *testing.T) {
	const delay = 400 * time.Millisecond
	sk := newSink(t)
	srv, err := StartWith("127.0.0.1:0", Options{SinkURL: sk.URL, WorkerRate: 1000, WorkerDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	posted := make([]time.Time, 5)
	for i := range posted {
		posted[i] = time.Now() // queued after this
		postEvent(t, srv.URL(), fmt.Sprintf("ev-%d", i))
		time.Sleep(50 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sk.received()) < len(posted) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if len(sk.ids) != len(posted) {
		t.Fatalf("got %d deliveries, want %d", len(sk.ids), len(posted))
	}
	for i, id := range sk.ids {
		if want := fmt.Sprintf("ev-%d", i); id != want {
			t.Errorf("delivery %d: got %s, want %s", i, id, want)
		}
		if got := sk.at[i].Sub(posted[i]); got < delay {
			t.Errorf("event %d delivered %v after it was posted, want at least %v", i, got, delay)
		}
	}
}
