package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/replay-dev/replay/pkg/demo"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// runK6 runs script with real k6 (never reporting usage) in its folder,
// with env added, and returns its summary export's metrics and its exit
// code; a k6 that could not run fails the test.
func runK6(t *testing.T, k6, script string, env ...string) (map[string]map[string]any, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	summary := filepath.Join(filepath.Dir(script), "k6-summary.json")
	cmd := exec.CommandContext(ctx, k6, "run", "--no-usage-report", "--quiet", "--no-color", "--summary-export", summary, script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(append(os.Environ(), "K6_NO_USAGE_REPORT=true"), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("k6 run: %v\n%s", err, out)
		}
		code = ee.ExitCode()
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatalf("k6 run: exit %d, no summary: %v\n%s", code, err, out)
	}
	var s struct {
		Metrics map[string]map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if code != 0 && code != 99 {
		t.Fatalf("k6 run: exit %d\n%s", code, out)
	}
	return s.Metrics, code
}

// TestExportK6DemoInK6: the demo traffic exported with the demo's
// transforms (timestamps shifted, the token re-signed with the key from
// the environment, order ids learned from the live answers) and run in
// real k6 against the demo SUT fails no more requests than replay run
// does with the same traffic, transforms and load (within one percentage
// point), and each transform did as much; the status checks carried by
// --threshold judge what k6 saw. Without the transforms, the script fails
// nearly every request (the recorded token expired): what the issue saw.
func TestExportK6DemoInK6(t *testing.T) {
	k6 := findK6(t)
	dir := t.TempDir()
	traffic, transforms := "../../testdata/demo.jsonl", "../../testdata/demo-transforms.yaml"
	load := []string{"--vus", "4", "--duration", "3s"}
	start := func() *demo.Server {
		srv, err := demo.StartWith("127.0.0.1:0", demo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		return srv
	}

	replaySUT := start()
	out := filepath.Join(dir, "replay.json")
	r := runMain(t, context.Background(), "", append([]string{"run", "-f", traffic, "--target", replaySUT.URL(), "--transforms", transforms, "--out", out, "-q"}, load...)...)
	if r.code != 0 {
		t.Fatalf("replay run: exit %d: %s", r.code, r.stderr)
	}
	s := readSummary(t, out)
	replayFailed := float64(num(s, "failed")) / float64(num(s, "requests"))

	k6SUT := start()
	script := filepath.Join(dir, "load.js")
	r = runMain(t, context.Background(), "", append([]string{"export", "k6", "-f", traffic, "--target", k6SUT.URL(), "--transforms", transforms,
		"--threshold", "status.5xx<50%", "--threshold", "POST /events: status.202>99.9%", "-o", script}, load...)...)
	if r.code != 0 || !strings.Contains(r.stderr, "the script reads REPLAY_JWT_KEY (the HS256 key) from the environment") {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	m, code := runK6(t, k6, script, "REPLAY_JWT_KEY=replay-demo-secret")
	k6Failed := m["http_req_failed"]["value"].(float64)
	k6Requests := m["http_reqs"]["count"].(float64)
	t.Logf("failed: replay run %.2f%% of %d requests, k6 %.2f%% of %.0f", 100*replayFailed, num(s, "requests"), 100*k6Failed, k6Requests)
	if k6Requests < 303 || k6Failed > replayFailed+0.01 {
		t.Errorf("k6 failed %.2f%% of %.0f requests, replay run %.2f%%: want no more than one point above", 100*k6Failed, k6Requests, 100*replayFailed)
	}
	// Each transform changed as many requests in k6, per request, as in
	// replay: the timestamps of every POST /events, the token of every
	// request, the order ids after each POST /orders.
	if changed := m["replay_transform_changed"]["count"].(float64) / k6Requests; changed < 1.5 {
		t.Errorf("transforms changed %.2f per request in k6, want about 1.6 (%v)", changed, m["replay_transform_changed"])
	}
	if _, ok := m["replay_transform_failed"]; ok {
		t.Errorf("transforms failed in k6: %v", m["replay_transform_failed"])
	}
	// The status checks: 5xx below half passes; POST /events answered 202
	// above 99.9% fails (the recording has its own 400s and a 503): k6
	// exits 99, as replay does.
	if code != 99 || m["checks{check:not status.5xx}"]["thresholds"].(map[string]any)["rate>0.5"] != false ||
		m["checks{check:status.202,endpoint:POST /events}"]["thresholds"].(map[string]any)["rate>0.999"] != true {
		t.Errorf("k6 exit %d, checks %v / %v", code, m["checks{check:not status.5xx}"], m["checks{check:status.202,endpoint:POST /events}"])
	}

	// Without the transforms: the recorded, expired token fails nearly all.
	r = runMain(t, context.Background(), "", "export", "k6", "-f", traffic, "--target", start().URL(), "--vus", "1", "-o", script)
	if r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	if m, _ := runK6(t, k6, script); m["http_req_failed"]["value"].(float64) < 0.9 {
		t.Errorf("without transforms k6 failed %v of the requests: want nearly all (the token expired)", m["http_req_failed"]["value"])
	}
}

// seenReq is a request as a loopback server received it, and when.
type seenReq struct {
	method, uri string
	header      http.Header
	body        string
	at          time.Time
}

// recordingServer answers POST /v2/orders with a live order id and
// cookie (o-live1, o-live2, ...), anything else 200 {}, and keeps what it
// received.
func recordingServer(t *testing.T) (*httptest.Server, func() []seenReq) {
	var mu sync.Mutex
	var seen []seenReq
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, seenReq{r.Method, r.RequestURI, r.Header.Clone(), string(body), time.Now()})
		n++
		id := n
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == "POST" && r.URL.Path == "/v2/orders" {
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: fmt.Sprintf("live%d", id)})
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"id":"o-live%d","status":"created"}`, id)
			return
		}
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seenReq {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenReq(nil), seen...)
	}
}

// jwtOf writes an unsigned-looking recorded token of header and claims
// (their JSON as given, big numbers and all).
func jwtOf(header, claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(claims)) + ".c2lnbmF0dXJl"
}

var (
	rfc3339RE = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}(?::|%3A)[0-9]{2}(?::|%3A)[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}(?::|%3A)[0-9]{2})`)
	epochRE   = regexp.MustCompile(`\b[0-9]{13}\b|\b[0-9]{10}\b`)
	jwtRE     = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)
	claimRE   = regexp.MustCompile(`"(iat|nbf|exp)":([0-9]+)`)
)

// since writes how far instant ns lies from at as a test compares it: a
// whole minute when within 3 s of one (requests go out a few ms apart),
// else in seconds; ok is false more than two days away (not shifted).
func since(ns int64, at time.Time) (string, bool) {
	d := time.Duration(ns - at.UnixNano()).Seconds()
	if math.Abs(d) > 48*3600 {
		return "", false
	}
	if m := math.Round(d/60) * 60; math.Abs(d-m) < 3 {
		if m == 0 {
			m = 0 // not -0
		}
		return fmt.Sprintf("Δ%.0fs", m), true
	}
	return fmt.Sprintf("Δ%.1fs", d), true
}

// normalize writes what a request carries so that two tools that sent it
// by the same rules at different times write the same: header names
// canonical and sorted (without those each tool sets itself), each
// timestamp by its shape and its distance from the request's arrival,
// each JWT by its header, its claims (iat, nbf, exp as distances) and
// whether it verifies with key.
func normalize(t *testing.T, r seenReq, key any) string {
	var lines []string
	for name, vals := range r.header {
		switch name {
		case "User-Agent", "Content-Length", "Accept-Encoding", "Connection":
			continue
		}
		lines = append(lines, name+": "+strings.Join(vals, ", "))
	}
	sort.Strings(lines)
	text := r.method + " " + r.uri + "\n" + strings.Join(lines, "\n") + "\n" + r.body
	text = jwtRE.ReplaceAllStringFunc(text, func(tok string) string {
		_, err := jwt.NewParser(jwt.WithJSONNumber()).Parse(tok, func(*jwt.Token) (any, error) { return key, nil })
		parts := strings.Split(tok, ".")
		h, _ := base64.RawURLEncoding.DecodeString(parts[0])
		c, _ := base64.RawURLEncoding.DecodeString(parts[1])
		claims := claimRE.ReplaceAllStringFunc(string(c), func(m string) string {
			sub := claimRE.FindStringSubmatch(m)
			s, _ := strconv.ParseInt(sub[2], 10, 64)
			d, _ := since(s*1e9, r.at)
			return `"` + sub[1] + `":` + d
		})
		return fmt.Sprintf("<jwt %s %s verified:%v>", h, claims, err == nil)
	})
	text = rfc3339RE.ReplaceAllStringFunc(text, func(v string) string {
		st, ok := rrpair.ParseRFC3339([]byte(strings.ReplaceAll(v, "%3A", ":")))
		if !ok {
			return v
		}
		d, near := since(st.UnixNano, r.at)
		if !near {
			return v
		}
		return fmt.Sprintf("<time frac %d zone %q escaped %v %s>", st.Frac, rfc3339RE.FindStringSubmatch(v)[2], strings.Contains(v, "%3A"), d)
	})
	return epochRE.ReplaceAllStringFunc(text, func(v string) string {
		n, _ := strconv.ParseInt(v, 10, 64)
		unit := int64(time.Second)
		if len(v) == 13 {
			unit = int64(time.Millisecond)
		}
		if d, near := since(n*unit, r.at); near {
			return fmt.Sprintf("<epoch%d %s>", len(v), d)
		}
		return v
	})
}

// TestExportK6TransformsAsReplay: every kind of transform a script
// carries, done by real k6 inside the exported script, sends what replay
// run sends with the same transforms file: timestamps moved by the same
// shift in each shape (RFC 3339 with its offset and fraction digits, in a
// query escaped, epoch s and ms; a far one left), the JWTs re-signed
// (header, query, cookie, JSON body; claims kept byte for byte, the big
// uid too; iat now, exp an hour on), headers, query, path and host
// rewritten, the order id learned from the live answer, the cookie jar's
// live sid. Requests are compared as a server received them, at
// different times, by the same normal form.
func TestExportK6TransformsAsReplay(t *testing.T) {
	k6 := findK6(t)
	dir := t.TempDir()
	tok := jwtOf(`{"alg":"HS256","typ":"JWT"}`, `{"sub":"shop-web","uid":12345678901234567890,"iat":1793527200,"exp":1793530800}`)
	pair := func(ts, method, uri, headers, body, res string) string {
		return fmt.Sprintf(`{"ts":%q,"tags":{"session":"s1"},"http":{"req":{"method":%q,"uri":%q,"host":"api.test","headers":%s,"body":%q},"res":%s}}`, ts, method, uri, headers, body, res)
	}
	lines := []string{
		pair("2026-11-01T10:00:00.250Z", "POST", "/v1/orders?since=2026-11-01T10%3A00%3A00Z&debug=1",
			`{"Authorization":["Bearer `+tok+`"],"X-Request-Time":["1793527200"],"X-Debug":["1"],"X-Old":["v"],"Content-Type":["application/json"],"Cookie":["sid=rec; theme=dark"]}`,
			`{"sent_at":"2026-11-01T12:00:00.250+02:00","ts":1793527200250,"born":"1990-01-01T00:00:00Z","auth":{"token":"`+tok+`"}}`,
			`{"statusCode":201,"headers":{"Set-Cookie":["sid=rec1; Path=/"]},"body":"{\"id\":\"o-1000\",\"status\":\"created\"}"}`),
		pair("2026-11-01T10:00:01Z", "GET", "/v1/orders/o-1000?token="+tok, `{"Cookie":["sid=rec1; theme=dark; jwt=`+tok+`"]}`, "",
			`{"statusCode":200,"body":"{\"id\":\"o-1000\"}"}`),
		pair("2026-11-01T10:00:02Z", "POST", "/v1/orders/o-1000/pay", `{"Content-Type":["application/json"]}`, `{"order":"o-1000","ref":"o-10001"}`,
			`{"statusCode":200,"body":"{}"}`),
	}
	traffic, transforms := filepath.Join(dir, "traffic.jsonl"), filepath.Join(dir, "transforms.yaml")
	os.WriteFile(traffic, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(transforms, []byte(`transforms:
  - timestamps: {auto: true, headers: [X-Request-Time]}
  - jwt: {secret: s3cret, query: [token], json: [auth.token]}
  - headers: {set: {X-Env: staging}, remove: [X-Debug], rename: {X-Old: X-New}}
  - query: {set: {api_key: k}, remove: [debug]}
  - path: {prefix: /v1/, to: /v2/}
  - host: api.staging
  - correlate: {endpoint: POST /v1/orders, json: id}
`), 0o644)

	replaySrv, replaySeen := recordingServer(t)
	if r := runMain(t, context.Background(), "", "run", "-f", traffic, "--target", replaySrv.URL, "--transforms", transforms, "--vus", "1", "-q"); r.code != 0 {
		t.Fatalf("replay run: exit %d: %s", r.code, r.stderr)
	}
	k6Srv, k6Seen := recordingServer(t)
	script := filepath.Join(dir, "load.js")
	if r := runMain(t, context.Background(), "", "export", "k6", "-f", traffic, "--target", k6Srv.URL, "--transforms", transforms, "--embed-secrets", "-o", script); r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	runK6(t, k6, script)
	want, got := replaySeen(), k6Seen()
	if len(want) != 3 || len(got) != 3 {
		t.Fatalf("replay sent %d requests, k6 %d: want 3 each", len(want), len(got))
	}
	key := []byte("s3cret")
	for i := range want {
		w, g := normalize(t, want[i], key), normalize(t, got[i], key)
		if w != g {
			t.Errorf("request %d:\nreplay run sent\n%s\nk6 sent\n%s", i+1, w, g)
		}
	}
	first := normalize(t, got[0], key)
	for _, w := range []string{"POST /v2/orders?since=<time frac 0 zone \"Z\" escaped true Δ0s>&api_key=k", `"uid":12345678901234567890`,
		`"iat":Δ0s,"exp":Δ3600s} verified:true>`, "X-New: v", "X-Env: staging", "Cookie: sid=rec; theme=dark", "X-Request-Time: <epoch10 Δ0s>",
		`"sent_at":"<time frac 3 zone "+02:00" escaped false Δ0s>"`, `"ts":<epoch13 Δ0s>`, `"born":"1990-01-01T00:00:00Z"`} {
		if !strings.Contains(first, w) {
			t.Errorf("k6's first request lacks %q:\n%s", w, first)
		}
	}
	if second := normalize(t, got[1], key); !strings.Contains(second, "GET /v2/orders/o-live1?token=<jwt") || !strings.Contains(second, "Cookie: sid=live1; theme=dark; jwt=<jwt") {
		t.Errorf("k6's second request: want the live order id and sid:\n%s", second)
	}
	if h := got[0].header.Get("X-Debug") + got[2].header.Get("Host"); h != "" {
		t.Errorf("X-Debug or a Host header seen: %q", h)
	}
}

// TestExportK6SignsEveryAlgorithm: the script re-signs through k6's
// WebCrypto with RSA (RS256, a PKCS #1 key), EC (ES256, a SEC 1 key),
// RSA-PSS (PS256, a PKCS #8 key) and HMAC (HS384 with kid and ttl), each
// key read from the environment variable the script names: the server
// verifies every token with the public key, and finds kid and exp as
// configured.
func TestExportK6SignsEveryAlgorithm(t *testing.T) {
	k6 := findK6(t)
	dir := t.TempDir()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, _ := x509.MarshalECPrivateKey(ecKey)
	pssDER, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	keys := map[string][]byte{
		"rsa.pem": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}),
		"ec.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}),
		"pss.pem": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pssDER}),
	}
	for name, b := range keys {
		os.WriteFile(filepath.Join(dir, name), b, 0o600)
	}
	tok := jwtOf(`{"alg":"HS256","typ":"JWT","kid":"old"}`, `{"sub":"u-1","iat":1793527200,"exp":1793530800}`)
	traffic, transforms := filepath.Join(dir, "traffic.jsonl"), filepath.Join(dir, "transforms.yaml")
	os.WriteFile(traffic, []byte(`{"ts":"2026-11-01T10:00:00Z","http":{"req":{"method":"GET","uri":"/me","host":"api.test","headers":{"X-RS":["`+tok+`"],"X-ES":["`+tok+`"],"X-PS":["`+tok+`"],"Authorization":["Bearer `+tok+`"]}}}}`+"\n"), 0o644)
	os.WriteFile(transforms, []byte(`transforms:
  - jwt: {key_file: rsa.pem, headers: [X-RS]}
  - jwt: {key_file: ec.pem, headers: [X-ES]}
  - jwt: {key_file: pss.pem, alg: PS256, headers: [X-PS]}
  - jwt: {secret: s3cret, alg: HS384, kid: key-2026, ttl: 10m}
`), 0o644)
	srv, seen := recordingServer(t)
	script := filepath.Join(dir, "load.js")
	r := runMain(t, context.Background(), "", "export", "k6", "-f", traffic, "--target", srv.URL, "--transforms", transforms, "-o", script)
	if r.code != 0 || !strings.Contains(r.stderr, "REPLAY_JWT_KEY (the RS256 key), REPLAY_JWT_KEY_2 (the ES256 key), REPLAY_JWT_KEY_3 (the PS256 key), REPLAY_JWT_KEY_4 (the HS384 key)") {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(script); strings.Contains(string(b), strings.Split(string(keys["rsa.pem"]), "\n")[1]) || strings.Contains(string(b), "s3cret") {
		t.Fatal("a key is in the script without --embed-secrets")
	}
	runK6(t, k6, script, "REPLAY_JWT_KEY="+string(keys["rsa.pem"]), "REPLAY_JWT_KEY_2="+string(keys["ec.pem"]),
		"REPLAY_JWT_KEY_3="+string(keys["pss.pem"]), "REPLAY_JWT_KEY_4=s3cret")
	got := seen()
	if len(got) != 1 {
		t.Fatalf("the server saw %d requests, want 1", len(got))
	}
	for _, tt := range []struct {
		header, alg string
		key         any
		kid         string
		life        time.Duration
	}{
		{"X-Rs", "RS256", &rsaKey.PublicKey, "old", time.Hour},
		{"X-Es", "ES256", &ecKey.PublicKey, "old", time.Hour},
		{"X-Ps", "PS256", &rsaKey.PublicKey, "old", time.Hour},
		{"Authorization", "HS384", []byte("s3cret"), "key-2026", 10 * time.Minute},
	} {
		v := strings.TrimPrefix(got[0].header.Get(tt.header), "Bearer ")
		parsed, err := jwt.Parse(v, func(*jwt.Token) (any, error) { return tt.key, nil }, jwt.WithValidMethods([]string{tt.alg}))
		if err != nil {
			t.Errorf("%s: %v (%s)", tt.header, err, v)
			continue
		}
		c := parsed.Claims.(jwt.MapClaims)
		iat, _ := c.GetIssuedAt()
		exp, _ := c.GetExpirationTime()
		if parsed.Header["kid"] != tt.kid || exp.Sub(iat.Time) != tt.life || time.Since(iat.Time) > time.Minute {
			t.Errorf("%s: kid %v, iat %v, exp %v: want kid %s, iat now, exp %v on", tt.header, parsed.Header["kid"], iat, exp, tt.kid, tt.life)
		}
	}
	// Without the key in the environment, the script refuses to start,
	// naming the variable.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k6, "run", "--no-usage-report", "--quiet", script)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "K6_NO_USAGE_REPORT=true")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "REPLAY_JWT_KEY: set it to the JWT signing key") || len(seen()) != 1 {
		t.Errorf("k6 without the key: %v\n%s", err, out)
	}
}

// TestExportK6RefusesWhatK6CannotExpress: a transform or threshold a k6
// script cannot carry is refused, each named (where it was configured),
// all at once, and nothing is written.
func TestExportK6RefusesWhatK6CannotExpress(t *testing.T) {
	traffic, script := oneGET(t)
	dir := filepath.Dir(traffic)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(ed)
	os.WriteFile(filepath.Join(dir, "ed.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	transforms := filepath.Join(dir, "t.yaml")
	os.WriteFile(transforms, []byte(`transforms:
  - fresh: {headers: [X-Request-Id]}
  - path: {regex: '^/a', to: /b}
  - correlate: {header: Location, regex: '/orders/([^/]+)'}
  - jwt: {key_file: ed.pem}
  - timestamps: {auto: true}
`), 0o644)
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--transforms", transforms}, []string{
			"t.yaml:2: fresh: values unique across every VU and shard of a run",
			"t.yaml:3: path regex: Go's regular expressions (RE2) are not JavaScript's",
			"t.yaml:4: correlate regex",
			"t.yaml:5: jwt: EdDSA: k6's WebCrypto does not sign with Ed25519"}},
		{[]string{"--threshold", "step 2: status.202>99%", "--threshold", "status.5xx<10", "--threshold", "grpc.OK>99%", "--threshold", "p99<200ms", "--threshold", "status.202>99%"}, []string{
			`--threshold "step 2: status.202>99%": k6 has no steps`,
			`--threshold "status.5xx<10": k6 thresholds on checks are rates: write it as a share (status.5xx<1%)`,
			`--threshold "grpc.OK>99%": k6's http module replays no gRPC call`,
			`--threshold "p99<200ms": export k6 carries status checks (status.CODE, status.Nxx, as shares) and errors% only`}},
		{[]string{"--threshold", "GET /nope: status.200>99%"}, []string{`no endpoint "GET /nope"`}},
		{[]string{"--embed-secrets"}, []string{"--embed-secrets: embeds the JWT keys of --transforms; give --transforms"}},
		{[]string{"--transforms", filepath.Join(dir, "missing.yaml")}, []string{"--transforms: open"}},
	} {
		r := runMain(t, context.Background(), "", append([]string{"export", "k6", "-f", traffic, "-o", script}, tt.args...)...)
		for _, w := range tt.want {
			if r.code != 1 || !strings.Contains(r.stderr, w) {
				t.Errorf("%v: exit %d, want %q in:\n%s", tt.args, r.code, w, r.stderr)
			}
		}
		if fileExists(script) {
			t.Errorf("%v: a script was written", tt.args)
		}
	}
}

// TestExportK6FractionalRatesRunInK6: a rate k6 cannot write as a whole
// number a second (1200 req/s of the demo's iterations of 6.06 requests:
// 198.02 iterations/s; 150/m: 2.5/s) is exported as a whole rate per a
// longer timeUnit, exactly, and real k6 loads and runs the script against
// the demo SUT, starting (or dropping, on a busy machine) as many
// iterations as the rate asks for in the duration. Before, the script
// said "rate: 198.02" and k6 refused it (exit 104).
func TestExportK6FractionalRatesRunInK6(t *testing.T) {
	dir := t.TempDir()
	srv, err := demo.StartWith("127.0.0.1:0", demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rateRE := regexp.MustCompile(`\n      rate: ([0-9]+),\n      timeUnit: '([0-9]+)s',\n`)
	type exported struct {
		name, script string
		want         float64 // iterations the rate asks for in 2s
	}
	var scripts []exported
	for _, tt := range []struct {
		rate string
		want float64 // iterations a second
	}{
		{"40/s", 40},
		{"150/m", 2.5},
		{"1200req/s", 1200.0 * 50 / 303},
	} {
		script := filepath.Join(dir, strings.ReplaceAll(tt.rate, "/", "-")+".js")
		r := runMain(t, context.Background(), "", "export", "k6", "-f", "../../testdata/demo.jsonl", "--target", srv.URL(),
			"--rate", tt.rate, "--duration", "2s", "--max-vus", "50", "-o", script)
		if r.code != 0 || strings.Contains(r.stderr, "warning") {
			t.Fatalf("export --rate %s: exit %d: %s", tt.rate, r.code, r.stderr)
		}
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		m := rateRE.FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("--rate %s: got no whole rate per whole seconds in the script:\n%s", tt.rate, b)
		}
		count, _ := strconv.ParseFloat(m[1], 64)
		unit, _ := strconv.ParseFloat(m[2], 64)
		if got := count / unit; math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("--rate %s: got %s per %ss = %v iterations/s, want %v", tt.rate, m[1], m[2], got, tt.want)
		}
		scripts = append(scripts, exported{tt.rate, script, 2 * tt.want})
	}

	k6 := findK6(t)
	for _, e := range scripts {
		t.Run(e.name, func(t *testing.T) {
			m, code := runK6(t, k6, e.script)
			started := m["iterations"]["count"].(float64)
			if d, ok := m["dropped_iterations"]["count"].(float64); ok {
				started += d
			}
			t.Logf("--rate %s: k6 exit %d, %.0f iterations started or dropped in 2s, %v requests", e.name, code, started, m["http_reqs"]["count"])
			if code != 0 || math.Abs(started-e.want) > 2+0.05*e.want {
				t.Errorf("--rate %s: k6 exit %d, %.0f iterations started or dropped; want exit 0 and %.0f", e.name, code, started, e.want)
			}
		})
	}
}

// TestExportK6InexactRate: a rate no timeUnit up to an hour writes
// exactly is exported with a warning, before the summary, naming what was
// asked for and what was written; one further than 1% off is refused,
// naming the flags, and nothing is written.
func TestExportK6InexactRate(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "pi.js")
	r := runMain(t, context.Background(), "", "export", "k6", "-f", "../../testdata/demo.jsonl", "--target", "http://127.0.0.1:8080",
		"--rate", "3.14159265/s", "--duration", "2s", "-o", script)
	warn, wrote := strings.Index(r.stderr, "replay: warning: k6 takes a whole number of iterations per timeUnit"), strings.Index(r.stderr, "replay: wrote")
	if r.code != 0 || warn < 0 || wrote < warn || !strings.Contains(r.stderr, "3.14159 iterations/s exactly: written as 355 per 113s") {
		t.Errorf("--rate 3.14159265/s: exit %d, stderr %q; want exit 0 and the warning before the summary", r.code, r.stderr)
	}
	bad := filepath.Join(dir, "bad.js")
	r = runMain(t, context.Background(), "", "export", "k6", "-f", "../../testdata/demo.jsonl", "--target", "http://127.0.0.1:8080",
		"--rate", "1/s", "--stages", "1m:0.0001/s", "-o", bad)
	if r.code == 0 || !strings.Contains(r.stderr, "--rate/--stages: k6 takes a whole number") || fileExists(bad) {
		t.Errorf("--stages 1m:0.0001/s: exit %d, stderr %q, script written %v; want refused, naming the flags, nothing written", r.code, r.stderr, fileExists(bad))
	}
}
