package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const testSecret = "t-secret"

// orderSUT is a loopback server that checks what transforms fix: a JWT
// signed with testSecret and not expired, a fresh X-Sent, orders that
// exist, and the session cookie it set. It answers 401, 422 or 404 when
// one is wrong, and keeps what it received.
type orderSUT struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []*http.Request
	orders map[string]bool
	next   atomic.Int64
}

func newOrderSUT(t *testing.T) *orderSUT {
	s := &orderSUT{orders: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

func (s *orderSUT) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r)
	s.mu.Unlock()
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return []byte(testSecret), nil }, jwt.WithValidMethods([]string{"HS256"})); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if sent, err := time.Parse(time.RFC3339Nano, r.Header.Get("X-Sent")); err != nil || time.Since(sent).Abs() > time.Minute {
		http.Error(w, "stale X-Sent", http.StatusUnprocessableEntity)
		return
	}
	switch {
	case r.Method == "POST" && r.URL.Path == "/orders":
		id := fmt.Sprintf("o-live%d", s.next.Add(1))
		s.mu.Lock()
		s.orders[id] = true
		s.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "live-" + id, Path: "/"})
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, id)
	case strings.HasPrefix(r.URL.Path, "/orders/"):
		s.mu.Lock()
		ok := s.orders[strings.TrimPrefix(r.URL.Path, "/orders/")]
		s.mu.Unlock()
		c, err := r.Cookie("sid")
		if !ok || err != nil || c.Value != "live-"+strings.TrimPrefix(r.URL.Path, "/orders/") {
			http.Error(w, "no such order in this session", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, `{"status":"created"}`)
	default:
		http.NotFound(w, r)
	}
}

// orderTraffic is a session recorded on 2026-11-01 with a token that
// expired then: create an order, then read it with the cookie it got.
func orderTraffic(t *testing.T, sessions int) string {
	signing := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u1", "iat": 1793527200, "exp": 1793530800})
	tok, err := signing.SignedString([]byte("the recording's key"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range sessions {
		fmt.Fprintf(&b, `{"ts":"2026-11-01T10:00:00Z","tags":{"session":"s%d"},"http":{"req":{"method":"POST","uri":"/orders","host":"shop","headers":{"Authorization":["Bearer %s"],"X-Sent":["2026-11-01T10:00:00Z"]},"body":"{}"},"res":{"statusCode":201,"headers":{"Set-Cookie":["sid=live-o-123; Path=/"]},"body":"{\"id\":\"o-123\"}"}}}`+"\n", i, tok)
		fmt.Fprintf(&b, `{"ts":"2026-11-01T10:00:01.5Z","tags":{"session":"s%d"},"http":{"req":{"method":"GET","uri":"/orders/o-123","host":"shop","headers":{"Authorization":["Bearer %s"],"X-Sent":["2026-11-01T10:00:01.500Z"],"Cookie":["theme=dark; sid=live-o-123"]}},"res":{"statusCode":200,"body":"{}"}}}`+"\n", i, tok)
	}
	path := filepath.Join(t.TempDir(), "orders.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeTransforms(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "transforms.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTransformsEndToEnd(t *testing.T) {
	srv := newOrderSUT(t)
	file := orderTraffic(t, 6)
	tf := writeTransforms(t, `transforms:
  - timestamps: {headers: [X-Sent]}
  - jwt: {secret: `+testSecret+`}
  - correlate: {endpoint: POST /orders, json: id}
`)
	raw := filepath.Join(t.TempDir(), "raw.json")
	r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--vus", "2", "--out", raw, "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if s := readSummary(t, raw); num(s, "succeeded") != 0 {
		t.Fatalf("without transforms %d requests succeeded, want 0: the test SUT does not check", num(s, "succeeded"))
	}
	out := filepath.Join(t.TempDir(), "s.json")
	r = runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--vus", "2", "--out", out,
		"--transforms", tf, "--set-header", "X-Env: test", "--host-header", "shop.test")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	if num(s, "requests") != 12 || num(s, "succeeded") != 12 {
		t.Errorf("requests %d, succeeded %d, want 12 and 12\n%s", num(s, "requests"), num(s, "succeeded"), r.stdout)
	}
	counts := map[string][2]int64{}
	for _, x := range s["transforms"].([]any) {
		m := x.(map[string]any)
		counts[m["name"].(string)] = [2]int64{int64(m["changed"].(float64)), int64(m["failed"].(float64))}
	}
	want := map[string][2]int64{"timestamps": {12, 0}, "jwt": {12, 0}, "correlate json id": {6, 0}, "host": {12, 0}, "headers": {12, 0}, "cookies": {6, 0}}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("transform counts %v, want %v", counts, want)
	}
	if !strings.Contains(r.stdout, "Transforms") || !strings.Contains(r.stdout, "correlate json id") {
		t.Errorf("the text report does not show the transforms:\n%s", r.stdout)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, req := range srv.seen[12:] {
		if req.Host != "shop.test" || req.Header.Get("X-Env") != "test" {
			t.Errorf("Host %q, X-Env %q: want shop.test and test", req.Host, req.Header.Get("X-Env"))
		}
	}
}

func TestTransformErrorsSendNothing(t *testing.T) {
	srv := newOrderSUT(t)
	file := orderTraffic(t, 1)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown key", []string{"--transforms", writeTransforms(t, "transforms:\n  - jwt:\n      secrett: x\n")}, `transforms.yaml:3: unknown key "secrett" in jwt`},
		{"no such file", []string{"--transforms", "nope.yaml"}, "--transforms: open nope.yaml"},
		{"bad key file", []string{"--jwt-key", "nope.pem"}, "--jwt-key: jwt: key_file: open nope.pem"},
		{"correlate endpoint", []string{"--transforms", writeTransforms(t, "transforms:\n  - correlate: {endpoint: GET /x, json: id}\n")}, `transforms.yaml:2: correlate: endpoint: "GET /x" is not an endpoint of the file; it has POST /orders, GET /orders/{id}`},
		{"set-header", []string{"--set-header", "NoColon"}, "--set-header"},
		{"set-header injecting a header", []string{"--set-header", "X-Env: a\r\nX-Evil: 1"}, `X-Env: the value "a\r\nX-Evil: 1" holds CR, LF or NUL`},
		{"set-header name not a token", []string{"--set-header", "X@Env: a"}, `"X@Env" is not a header name`},
		{"both keys", []string{"--jwt-key", "k.pem", "--jwt-secret", "s"}, "--jwt-secret and --jwt-key: give one"},
		{"cookies", []string{"--cookies", "maybe"}, `cookies: want auto, on or off, got "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "-f", file, "--target", srv.URL}, tt.args...)
			r := runMain(t, context.Background(), "", args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "nothing was sent") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 with %q and nothing was sent", r.code, r.stderr, tt.want)
			}
		})
	}
	if len(srv.seen) != 0 {
		t.Errorf("the SUT received %d requests, want 0", len(srv.seen))
	}
}

func TestDryRunShowsTransforms(t *testing.T) {
	file := orderTraffic(t, 1)
	r := runMain(t, context.Background(), "", "run", "-f", file, "--target", "http://127.0.0.1:1", "--dry-run", "1",
		"--set-header", "X-Env: dry", "--shift-time")
	if r.code != 0 || !strings.Contains(r.stdout, "X-Env: dry\r\n") || strings.Contains(r.stdout, "2026-11-01T10:00:00Z") {
		t.Errorf("exit %d, dry run does not show the rewritten request:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
