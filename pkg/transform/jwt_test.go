package transform

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// recordedToken is a token as recorded: signed with a key the replay does
// not have, expired by now, with a big integer claim, a kid and an audience
// list that must survive re-signing byte for byte.
const recordedPayload = `{"sub":"u1","uid":12345678901234567890,"iat":1793527200,"exp":1793530800,"aud":["a","b"]}`

func recordedToken(t testing.TB, header string) string {
	t.Helper()
	signing := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(recordedPayload))
	sig, err := jwt.SigningMethodHS256.Sign(signing, []byte("the recording's key"))
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + b64.EncodeToString(sig)
}

func writePEM(t *testing.T, dir string, key any) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("key-%d.pem", len(der)))
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestJWTResign(t *testing.T) {
	dir := t.TempDir()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name, config, alg string
		verify            any
	}{
		{"hmac", `{secret: s3cret}`, "HS256", []byte("s3cret")},
		{"hmac 512", `{secret: s3cret, alg: HS512}`, "HS512", []byte("s3cret")},
		{"rsa", "{key_file: " + writePEM(t, dir, rsaKey) + "}", "RS256", &rsaKey.PublicKey},
		{"rsa pss", "{key_file: " + writePEM(t, dir, rsaKey) + ", alg: PS384}", "PS384", &rsaKey.PublicKey},
		{"ecdsa p256", "{key_file: " + writePEM(t, dir, ec256) + "}", "ES256", &ec256.PublicKey},
		{"ecdsa p384", "{key_file: " + writePEM(t, dir, ec384) + "}", "ES384", &ec384.PublicKey},
		{"ed25519", "{key_file: " + writePEM(t, dir, edKey) + "}", "EdDSA", edKey.Public()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The recorded alg is never trusted: "none" here.
			tok := recordedToken(t, `{"alg":"none","typ":"JWT","kid":"k1"}`)
			c := chain(t, "transforms:\n  - jwt: "+tt.config+"\n")
			_, ps := pairs(t, line("GET", "/me", `{"Authorization":["Bearer `+tok+`"]}`, ""))
			p := ps[0]
			c.Rewrite(0, &p.Req, &p)
			v := string(p.Req.Headers[0].Value)
			got, ok := strings.CutPrefix(v, "Bearer ")
			if !ok || got == tok {
				t.Fatalf("not re-signed: %s", v)
			}
			parsed, err := jwt.NewParser(jwt.WithValidMethods([]string{tt.alg}), jwt.WithTimeFunc(func() time.Time { return now })).
				Parse(got, func(*jwt.Token) (any, error) { return tt.verify, nil })
			if err != nil {
				t.Fatalf("the new token does not verify: %v", err)
			}
			if parsed.Header["kid"] != "k1" {
				t.Errorf("kid %v, want k1", parsed.Header["kid"])
			}
			parts := strings.Split(got, ".")
			header, _ := b64.DecodeString(parts[0])
			payload, _ := b64.DecodeString(parts[1])
			if want := `{"alg":"` + tt.alg + `","typ":"JWT","kid":"k1"}`; string(header) != want {
				t.Errorf("header %s, want %s", header, want)
			}
			// iat now, exp now + the original hour, the rest byte for byte.
			if want := `{"sub":"u1","uid":12345678901234567890,"iat":1795422615,"exp":1795426215,"aud":["a","b"]}`; string(payload) != want {
				t.Errorf("payload\n%s\nwant\n%s", payload, want)
			}
		})
	}
}

func TestJWTLocationsAndCache(t *testing.T) {
	tok := recordedToken(t, `{"alg":"HS256","typ":"JWT"}`)
	clock := now
	spec, err := Parse([]byte(`transforms:
  - jwt:
      secret: s3cret
      headers: [Authorization, X-Token]
      query: [access_token]
      json: [auth.token]
      reuse: 10s
`), "t.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(spec, false, Options{VUs: 2, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	l := line("POST", "/x?access_token="+tok+"&b=1",
		`{"Authorization":["Bearer `+tok+`"],"X-Token":["`+tok+`"],"Cookie":["theme=dark; session=`+tok+`; x=1"]}`,
		`{"auth":{"token":"`+tok+`"},"other":"`+tok+`"}`)
	rewrite := func(vu int) string {
		_, ps := pairs(t, l)
		p := ps[0]
		c.Rewrite(vu, &p.Req, &p)
		return wire(&p.Req)
	}
	first := rewrite(0)
	if n := strings.Count(first, tok); n != 1 { // only "other", not configured
		t.Errorf("recorded token left %d times, want 1 (the unconfigured field):\n%s", n, first)
	}
	fresh := first[strings.Index(first, "Bearer ")+7:]
	fresh = fresh[:strings.IndexByte(fresh, '\n')]
	if n := strings.Count(first, fresh); n != 5 {
		t.Errorf("fresh token appears %d times, want 5:\n%s", n, first)
	}
	if !strings.Contains(first, "Cookie: theme=dark; session="+fresh+"; x=1\n") {
		t.Errorf("cookie not rewritten in place:\n%s", first)
	}
	clock = now.Add(5 * time.Second)
	if again := rewrite(1); again != first {
		t.Errorf("within reuse, another VU got another token:\n%s\nwant\n%s", again, first)
	}
	clock = now.Add(11 * time.Second)
	if later := rewrite(0); later == first {
		t.Errorf("after reuse the token was not signed again")
	}
	if n := c.Counts()[0]; n.Changed != 3 || n.Failed != 0 {
		t.Errorf("counts %+v, want 3 changed", n)
	}
}

func TestJWTCannotParse(t *testing.T) {
	c := chain(t, `{transforms: [jwt: {secret: s}]}`)
	bad := "eyJub3QganNvbg.eyJ4IjoxfQ.c2ln" // header is not JSON
	_, ps := pairs(t, line("GET", "/", `{"Authorization":["Bearer `+bad+`"]}`, ""))
	p := ps[0]
	c.Rewrite(0, &p.Req, &p)
	if got := string(p.Req.Headers[0].Value); got != "Bearer "+bad {
		t.Errorf("changed an unparsable token: %s", got)
	}
	if n := c.Counts()[0]; n.Failed != 1 || n.Changed != 0 {
		t.Errorf("counts %+v, want 1 failed", n)
	}
}

// TestJWTKidControlCharacter checks that a kid with a control character
// is written into the header as JSON (\u0001), not as Go (\x01).
func TestJWTKidControlCharacter(t *testing.T) {
	c := chain(t, `{transforms: [jwt: {secret: s, kid: "k\x01"}]}`)
	for _, header := range []string{`{"alg":"HS256"}`, `{"alg":"HS256","kid":"old"}`} {
		tok := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(`{"sub":"x"}`)) + ".c2ln"
		_, ps := pairs(t, line("GET", "/", `{"Authorization":["`+tok+`"]}`, ""))
		p := ps[0]
		c.Rewrite(0, &p.Req, &p)
		parts := strings.Split(string(p.Req.Headers[0].Value), ".")
		got, _ := b64.DecodeString(parts[0])
		var h map[string]string
		if !json.Valid(got) || json.Unmarshal(got, &h) != nil || h["kid"] != "k\x01" || h["alg"] != "HS256" {
			t.Errorf("%s: header %q: want valid JSON with kid \"k\\u0001\"", header, got)
		}
	}
}

// TestJWTBadTokenCached checks that a token that cannot be re-signed is
// parsed once per reuse window, not on every request, and still counts a
// failure on every request that carries it.
func TestJWTBadTokenCached(t *testing.T) {
	clock := now
	spec, err := Parse([]byte(`{transforms: [jwt: {secret: s, reuse: 10s}]}`), "t.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(spec, false, Options{VUs: 2, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	bad := "eyJub3QganNvbg.eyJ4IjoxfQ.c2ln" // header is not JSON
	_, ps := pairs(t, line("GET", "/", `{"Authorization":["Bearer `+bad+`"]}`, ""))
	orig := ps[0]
	hs := make([]rrpair.Header, 0, 4)
	p := orig
	rewrite := func(vu int) {
		p.Req = orig.Req
		p.Req.Headers = append(hs[:0], orig.Req.Headers...)
		c.Rewrite(vu, &p.Req, &p)
	}
	rewrite(0) // parses, fails, remembers
	if got := string(p.Req.Headers[0].Value); got != "Bearer "+bad {
		t.Fatalf("changed an unparsable token: %s", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { rewrite(0) }); allocs != 0 {
		t.Errorf("the same bad token again: %.1f allocations a request, want 0 (parsed again?)", allocs)
	}
	rewrite(1) // another VU: from the shared cache
	if allocs := testing.AllocsPerRun(100, func() { rewrite(1) }); allocs != 0 {
		t.Errorf("the same bad token on another VU: %.1f allocations a request, want 0", allocs)
	}
	want := int64(1 + 101 + 1 + 101) // AllocsPerRun calls once more to warm up
	if n := c.Counts()[0]; n.Failed != want || n.Changed != 0 {
		t.Errorf("counts %+v, want %d failed: one a request", n, want)
	}
	clock = now.Add(11 * time.Second) // past reuse: parsed again, still bad
	rewrite(0)
	if n := c.Counts()[0]; n.Failed != want+1 {
		t.Errorf("after reuse: %d failed, want %d", n.Failed, want+1)
	}
}

func TestJWTLifetime(t *testing.T) {
	tests := []struct{ name, config, payload, want string }{
		{"from nbf", `{secret: s}`, `{"nbf":1793527200,"exp":1793527500}`, `{"nbf":1795422615,"exp":1795422915}`},
		{"from the recorded ts", `{secret: s}`, `{"exp":1793527260}`, `{"exp":1795422675}`},
		{"ttl", `{secret: s, ttl: 2h}`, `{"iat":1793527200,"exp":1793527500}`, `{"iat":1795422615,"exp":1795429815}`},
		{"ttl adds exp", `{secret: s, ttl: 1m}`, `{"sub":"x"}`, `{"sub":"x","exp":1795422675}`},
		{"no exp stays so", `{secret: s}`, `{"sub":"x","iat":1}`, `{"sub":"x","iat":1795422615}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := chain(t, "transforms:\n  - jwt: "+tt.config+"\n")
			tok := b64.EncodeToString([]byte(`{"alg":"HS256"}`)) + "." + b64.EncodeToString([]byte(tt.payload)) + ".c2ln"
			_, ps := pairs(t, line("GET", "/", `{"Authorization":["`+tok+`"]}`, ""))
			p := ps[0]
			c.Rewrite(0, &p.Req, &p)
			parts := strings.Split(string(p.Req.Headers[0].Value), ".")
			payload, _ := b64.DecodeString(parts[1])
			if string(payload) != tt.want {
				t.Errorf("payload %s, want %s", payload, tt.want)
			}
		})
	}
}

// FuzzJWT feeds the JWT finder and re-signer anything: no panic, and a
// token it re-signs verifies with the key.
func FuzzJWT(f *testing.F) {
	f.Add(recordedToken(f, `{"alg":"HS256","typ":"JWT"}`))
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
	f.Add("eyJ.eyJ.x")
	j, err := newJWT(&JWTSpec{Secret: "k"}, "")
	if err != nil {
		f.Fatal(err)
	}
	_, ps := pairs(f, line("GET", "/", "", ""))
	f.Fuzz(func(t *testing.T, tok string) {
		if !looksLikeJWT([]byte(tok)) {
			return
		}
		out, _, err := j.resign([]byte(tok), now.UnixNano(), &ps[0])
		if err != nil {
			return
		}
		if _, err := jwt.Parse(string(out), func(*jwt.Token) (any, error) { return []byte("k"), nil },
			jwt.WithValidMethods([]string{"HS256"}), jwt.WithoutClaimsValidation()); err != nil {
			t.Fatalf("%s re-signed as %s, which does not verify: %v", tok, out, err)
		}
	})
}

func TestJWTKidAndSecretFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret"), []byte("from-file\n"), 0o600)
	spec, err := Parse([]byte("transforms:\n  - jwt: {secret_file: secret, kid: key-2026}\n"), "t.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(spec, false, Options{VUs: 1, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, header := range []string{`{"alg":"HS256"}`, `{"alg":"HS256","kid":"old"}`} {
		tok := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(`{"exp":1793530800,"iat":1793527200}`)) + ".c2ln"
		_, ps := pairs(t, line("GET", "/", `{"Authorization":["Bearer `+tok+`"]}`, ""))
		p := ps[0]
		c.Rewrite(0, &p.Req, &p)
		got := strings.TrimPrefix(string(p.Req.Headers[0].Value), "Bearer ")
		parsed, err := jwt.Parse(got, func(*jwt.Token) (any, error) { return []byte("from-file"), nil },
			jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(func() time.Time { return now }))
		if err != nil {
			t.Errorf("%s: %v: want signed with the file's secret", header, err)
		} else if parsed.Header["kid"] != "key-2026" {
			t.Errorf("%s: kid %v, want key-2026", header, parsed.Header["kid"])
		}
	}
}
