package demo

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/valyala/fasthttp"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// clock is a settable clock, safe to read from the server's goroutines.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.Set(t)
	return c
}

func (c *clock) Now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// testNow is the tests' "now": a while after the demo traffic was recorded.
var testNow = time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC)

func start(t *testing.T) *Server {
	t.Helper()
	return startAt(t, newClock(testNow))
}

func startAt(t *testing.T, c *clock) *Server {
	t.Helper()
	s, err := StartWith("127.0.0.1:0", Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sign makes a token with the given claims, method and key.
func sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// validToken is a token good at now for an hour.
func validToken(t *testing.T, now time.Time) string {
	return sign(t, jwt.SigningMethodHS256, []byte(JWTSecret), jwt.MapClaims{
		"sub": "test", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	})
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

type response struct {
	status int
	body   string
	header http.Header
}

func do(t *testing.T, method, url, body string, hdr map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, string(b), res.Header}
}

// ms is t in epoch milliseconds, as events carry "ts".
func ms(t time.Time) string { return fmt.Sprint(t.UnixMilli()) }

// sentAt is t as events carry "sent_at".
func sentAt(t time.Time) string { return t.UTC().Format(sentAtLayout) }

func TestEndpoints(t *testing.T) {
	s := start(t)
	auth := bearer(validToken(t, testNow))
	fresh := `{"type":"click","ts":` + ms(testNow) + `,"sent_at":"` + sentAt(testNow) + `"}`
	tests := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		contains                 string
	}{
		{"ingest", "POST", "/events", fresh, auth, 202, `"status":"accepted"`},
		{"ingest without times", "POST", "/events", `{"type":"click"}`, auth, 202, `"status":"accepted"`},
		{"ingest bad JSON", "POST", "/events", `{"type":`, auth, 400, "not a JSON object"},
		{"ingest JSON not an object", "POST", "/events", `[1]`, auth, 400, "not a JSON object"},
		{"batch", "POST", "/events/batch", `[` + fresh + `,{"b":2}]`, auth, 202, `"count":2`},
		{"batch not an array", "POST", "/events/batch", `{}`, auth, 400, "array"},
		{"event", "GET", "/events/42", "", auth, 200, `"id":"42"`},
		{"feed", "GET", "/users/7/feed?limit=3", "", auth, 200, `"evt-3"`},
		{"feed bad limit", "GET", "/users/7/feed?limit=x", "", auth, 400, "limit"},
		{"health", "GET", "/health", "", nil, 200, "ok"},
		{"health wrong method", "POST", "/health", "", nil, 405, "method not allowed"},
		{"unknown", "GET", "/nope", "", auth, 404, "not found"},
		{"unknown without a token", "GET", "/nope", "", nil, 401, "missing token"},
		{"wrong method", "GET", "/events", "", auth, 405, "method not allowed"},
		{"orders wrong method", "GET", "/orders", "", auth, 405, "method not allowed"},
		{"order not JSON", "POST", "/orders", `{"items":`, auth, 400, "not a JSON object"},
		{"forced failure", "POST", "/events", `{}`, map[string]string{"X-Demo-Fail": "1"}, 503, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, tt.method, s.URL()+tt.path, tt.body, tt.hdr)
			if res.status != tt.status || !strings.Contains(res.body, tt.contains) {
				t.Errorf("got %d %q, want %d containing %q", res.status, res.body, tt.status, tt.contains)
			}
		})
	}
	if got := s.Requests(); got != int64(len(tests)) {
		t.Errorf("Requests: got %d, want %d", got, len(tests))
	}
}

func TestAuth(t *testing.T) {
	s := start(t)
	now := testNow
	key := []byte(JWTSecret)
	claims := func(iat, exp time.Time) jwt.MapClaims {
		return jwt.MapClaims{"sub": "shop-web", "iat": iat.Unix(), "exp": exp.Unix()}
	}
	hs256 := func(c jwt.MapClaims) string { return sign(t, jwt.SigningMethodHS256, key, c) }
	none := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(now, now.Add(time.Hour)))
	tests := []struct {
		name     string
		hdr      map[string]string
		status   int
		contains string
	}{
		{"fresh token", bearer(hs256(claims(now, now.Add(time.Hour)))), 200, `"id":"42"`},
		{"scheme in lower case", map[string]string{"Authorization": "bearer " + hs256(claims(now, now.Add(time.Hour)))}, 200, `"id":"42"`},
		{"missing", nil, 401, "missing token"},
		{"not bearer", map[string]string{"Authorization": "Basic c2hvcDpwdw=="}, 401, "not a Bearer token"},
		{"empty bearer", map[string]string{"Authorization": "Bearer "}, 401, "not a Bearer token"},
		{"malformed", bearer("not.a.jwt"), 401, "malformed token"},
		{"expired", bearer(hs256(claims(now.Add(-2*time.Hour), now.Add(-time.Hour)))), 401, "token expired 1h ago"},
		{"expired within leeway", bearer(hs256(claims(now.Add(-time.Hour), now.Add(-3*time.Second)))), 200, `"id":"42"`},
		{"expired just past leeway", bearer(hs256(claims(now.Add(-time.Hour), now.Add(-6*time.Second)))), 401, "token expired 6s ago"},
		{"no exp", bearer(hs256(jwt.MapClaims{"sub": "shop-web", "iat": now.Unix()})), 401, "no exp claim"},
		{"iat in the future", bearer(hs256(claims(now.Add(time.Minute), now.Add(time.Hour)))), 401, "issued 1m in the future"},
		{"iat within leeway", bearer(hs256(claims(now.Add(3*time.Second), now.Add(time.Hour)))), 200, `"id":"42"`},
		{"nbf in the future", bearer(hs256(jwt.MapClaims{"nbf": now.Add(time.Hour).Unix(), "exp": now.Add(2 * time.Hour).Unix()})), 401, "not valid for another 1h"},
		{"wrong key", bearer(sign(t, jwt.SigningMethodHS256, []byte("guessed"), claims(now, now.Add(time.Hour)))), 401, "bad signature"},
		{"tampered payload", bearer(tamper(t, hs256(claims(now, now.Add(time.Hour))))), 401, "bad signature"},
		{"alg none", bearer(none), 401, "signing method none is not accepted"},
		{"HS512 with the right key", bearer(sign(t, jwt.SigningMethodHS512, key, claims(now, now.Add(time.Hour)))), 401, "signing method HS512 is not accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, "GET", s.URL()+"/events/42", "", tt.hdr)
			if res.status != tt.status || !strings.Contains(res.body, tt.contains) {
				t.Errorf("got %d %q, want %d containing %q", res.status, res.body, tt.status, tt.contains)
			}
			if res.status == 401 && res.header.Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
}

// tamper changes the token's payload, keeping its signature.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	payload = bytes.Replace(payload, []byte("shop-web"), []byte("shop-adm"), 1)
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// TestAuthHeaderAnyCase sends a lower-case header name on a raw
// connection (net/http would canonicalize it): replay keeps recorded names
// as they are, and the server must still find the token.
func TestAuthHeaderAnyCase(t *testing.T) {
	s := start(t)
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /events/42 HTTP/1.1\r\nHost: demo\r\nauthorization: Bearer %s\r\nConnection: close\r\n\r\n", validToken(t, testNow))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("got %d, want 200", res.StatusCode)
	}
}

// TestTokenExpiresWhileCached checks that a cached token's expiry is still
// checked on every request.
func TestTokenExpiresWhileCached(t *testing.T) {
	c := newClock(testNow)
	s := startAt(t, c)
	tok := validToken(t, testNow)
	steps := []struct {
		at     time.Time
		status int
	}{
		{testNow, 200},
		{testNow.Add(59 * time.Minute), 200},
		{testNow.Add(61 * time.Minute), 401},
		{testNow.Add(30 * time.Minute), 200}, // cached, not refused for good
	}
	for _, st := range steps {
		c.Set(st.at)
		if res := do(t, "GET", s.URL()+"/events/42", "", bearer(tok)); res.status != st.status {
			t.Errorf("at %s: got %d %q, want %d", st.at.Format(time.TimeOnly), res.status, res.body, st.status)
		}
	}
	s.tokens.mu.RLock()
	n := len(s.tokens.m)
	s.tokens.mu.RUnlock()
	if n != 1 {
		t.Errorf("token cache holds %d tokens, want 1", n)
	}
}

func TestTokenCacheBounded(t *testing.T) {
	c := tokenCache{max: 3}
	for i := range 10 {
		c.put(fmt.Sprint("tok", i), tokenTimes{exp: testNow})
		if len(c.m) > c.max {
			t.Fatalf("after %d puts: %d tokens, want at most %d", i+1, len(c.m), c.max)
		}
	}
	if _, ok := c.get([]byte("tok9")); !ok {
		t.Error("the last token put is not cached")
	}
}

func TestEventTimes(t *testing.T) {
	s := start(t)
	auth := bearer(validToken(t, testNow))
	ev := func(ts, sent string) string {
		return `{"type":"click","ts":` + ts + `,"sent_at":` + sent + `}`
	}
	q := func(t time.Time) string { return `"` + sentAt(t) + `"` }
	now := testNow
	const refused = "events older than 5m are refused"
	tests := []struct {
		name, path, body string
		status           int
		contains         string
	}{
		{"fresh", "/events", ev(ms(now), q(now)), 202, "accepted"},
		{"4m old", "/events", ev(ms(now.Add(-4*time.Minute)), q(now.Add(-4*time.Minute))), 202, "accepted"},
		{"4m ahead", "/events", ev(ms(now.Add(4*time.Minute)), q(now.Add(4*time.Minute))), 202, "accepted"},
		{"ts 3h old", "/events", ev(ms(now.Add(-3*time.Hour)), q(now)), 422, "stale event: ts is 3h ago; " + refused},
		{"ts 6m old", "/events", ev(ms(now.Add(-6*time.Minute)), q(now)), 422, "stale event: ts is 6m ago"},
		{"ts 22 days old", "/events", ev(ms(now.Add(-22*24*time.Hour)), q(now)), 422, "ts is 22d ago"},
		{"ts 1h ahead", "/events", ev(ms(now.Add(time.Hour)), q(now)), 422, "stale event: ts is 1h in the future"},
		{"ts not a number", "/events", ev(`"yesterday"`, q(now)), 422, "ts must be a number"},
		{"sent_at 3h old", "/events", ev(ms(now), q(now.Add(-3*time.Hour))), 422, "stale event: sent_at is 3h ago; " + refused},
		{"sent_at 1h ahead", "/events", ev(ms(now), q(now.Add(time.Hour))), 422, "stale event: sent_at is 1h in the future"},
		{"sent_at not RFC 3339", "/events", ev(ms(now), `"23/11/2026"`), 422, "sent_at must be an RFC 3339 time"},
		{"sent_at a number", "/events", ev(ms(now), ms(now)), 422, "sent_at must be an RFC 3339 time"},
		{"only ts, stale", "/events", `{"ts":` + ms(now.Add(-time.Hour)) + `}`, 422, "ts is 1h ago"},
		{"only sent_at, stale", "/events", `{"sent_at":` + q(now.Add(-time.Hour)) + `}`, 422, "sent_at is 1h ago"},
		{"batch fresh", "/events/batch", "[" + ev(ms(now), q(now)) + "," + ev(ms(now), q(now)) + "]", 202, `"count":2`},
		{"batch with a stale ts", "/events/batch", "[" + ev(ms(now), q(now)) + "," + ev(ms(now.Add(-3*time.Hour)), q(now)) + "]", 422, "stale event 2 of 2: ts is 3h ago"},
		{"batch with a stale sent_at", "/events/batch", "[" + ev(ms(now), q(now.Add(-3*time.Hour))) + "]", 422, "stale event 1 of 1: sent_at is 3h ago"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, "POST", s.URL()+tt.path, tt.body, auth)
			if res.status != tt.status || !strings.Contains(res.body, tt.contains) {
				t.Errorf("got %d %q, want %d containing %q", res.status, res.body, tt.status, tt.contains)
			}
		})
	}
}

var orderIDPattern = regexp.MustCompile(`^o-[a-z0-9]{10}$`)

func TestOrders(t *testing.T) {
	s := start(t)
	auth := bearer(validToken(t, testNow))
	res := do(t, "POST", s.URL()+"/orders", `{"items":[{"sku":"p-1","qty":2}],"user_id":"u-0000001"}`, auth)
	var created struct{ ID, Status string }
	if err := json.Unmarshal([]byte(res.body), &created); err != nil || res.status != 201 {
		t.Fatalf("POST /orders: got %d %q, want 201 and a JSON body", res.status, res.body)
	}
	if !orderIDPattern.MatchString(created.ID) || created.Status != "created" {
		t.Errorf("POST /orders: got %+v, want an id like o-k3j9x0p2qa and status created", created)
	}
	if got, want := res.header.Get("Location"), "/orders/"+created.ID; got != want {
		t.Errorf("Location: got %q, want %q", got, want)
	}
	id := created.ID
	steps := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"get", "GET", "/orders/" + id, 200, `{"id":"` + id + `","status":"created"}`},
		{"pay", "POST", "/orders/" + id + "/pay", 200, `{"id":"` + id + `","status":"paid"}`},
		{"get after pay", "GET", "/orders/" + id, 200, `{"id":"` + id + `","status":"paid"}`},
		{"get unknown", "GET", "/orders/o-k3j9x0p2qa", 404, `{"error":"no such order"}`},
		{"pay unknown", "POST", "/orders/o-k3j9x0p2qa/pay", 404, `{"error":"no such order"}`},
		{"pay wrong method", "GET", "/orders/" + id + "/pay", 405, `{"error":"method not allowed"}`},
		{"get without a token", "GET", "/orders/" + id, 401, `{"error":"missing token: send Authorization: Bearer <JWT>"}`},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			hdr := auth
			if strings.HasSuffix(st.name, "without a token") {
				hdr = nil
			}
			if res := do(t, st.method, s.URL()+st.path, `{"method":"card"}`, hdr); res.status != st.status || res.body != st.body {
				t.Errorf("got %d %s, want %d %s", res.status, res.body, st.status, st.body)
			}
		})
	}
}

func TestOrderSetBounded(t *testing.T) {
	o := orderSet{max: 3}
	var ids []string
	for range 5 {
		ids = append(ids, o.create())
	}
	for i, id := range ids {
		_, ok := o.status(id)
		if want := i >= 2; ok != want {
			t.Errorf("order %d of 5 known: got %v, want %v", i+1, ok, want)
		}
	}
	if len(o.byID) != 3 {
		t.Errorf("got %d orders stored, want 3", len(o.byID))
	}
}

// TestOrderIDs checks the id form, and that replay's endpoint names see
// an id in it, so every order shares one endpoint in a report.
func TestOrderIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		id := newOrderID(rand.IntN)
		if !orderIDPattern.MatchString(id) {
			t.Fatalf("id %q, want o- and 10 lower-case letters and digits", id)
		}
		seen[id] = true
		if got := string(rrpair.AppendEndpointName(nil, []byte("GET"), []byte("/orders/"+id))); got != "GET /orders/{id}" {
			t.Fatalf("endpoint of /orders/%s: got %q, want GET /orders/{id}", id, got)
		}
	}
	if len(seen) < 1990 {
		t.Errorf("%d distinct ids of 2000", len(seen))
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:80"} {
		if s, err := Start(addr); err == nil {
			s.Close()
			t.Errorf("Start(%q) succeeded, want a refusal", addr)
		}
	}
}

func TestCloseStopsListening(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := s.URL()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("the server still answers after Close")
	}
}

// BenchmarkAuthenticate is the cost of checking a token the server has seen
// before: a map lookup and a time comparison, no parse.
func BenchmarkAuthenticate(b *testing.B) {
	s := &Server{now: func() time.Time { return testNow }}
	s.tokens.max = maxTokens
	var ctx fasthttp.RequestCtx
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"exp": testNow.Add(time.Hour).Unix()}).SignedString([]byte(JWTSecret))
	if err != nil {
		b.Fatal(err)
	}
	ctx.Request.Header.Set("Authorization", "Bearer "+tok)
	if msg := s.authenticate(&ctx); msg != "" {
		b.Fatal(msg)
	}
	b.ReportAllocs()
	for b.Loop() {
		if msg := s.authenticate(&ctx); msg != "" {
			b.Fatal(msg)
		}
	}
}
