package transform

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// JWTSpec configures JWT re-signing: each JWT found is parsed without
// verifying, gets iat and nbf set to now and exp to now + its original
// lifetime (exp − iat, or TTL), keeps every other claim and header field
// byte for byte, and is signed with the configured key. The algorithm comes
// from the key (and Alg, which must fit it), never from the recorded token.
// The same recorded token maps to the same re-signed one for Reuse, so
// signing costs per distinct token, not per request.
//
//   - jwt:
//     secret: s3cret                # HMAC (HS256; alg: HS384/HS512)
//     # key_file: keys/signing.pem  # or a PEM private key: RSA (RS256, alg: PS256...), EC (ES256/384/512 by curve), Ed25519 (EdDSA)
//     # kid: key-2026               # set the header's kid
//     # ttl: 1h                     # exp = now + ttl, instead of the token's own lifetime
//     reuse: 30s                    # default 30s; 0 signs every request
//     headers: [Authorization]      # default; a value "Bearer <jwt>" or just "<jwt>"
//     cookies: true                 # default: cookie values that are JWTs
//     query: [access_token]
//     json: [auth.token]
type JWTSpec struct {
	Secret     string         `yaml:"secret"`
	SecretFile string         `yaml:"secret_file"`
	KeyFile    string         `yaml:"key_file"`
	Alg        string         `yaml:"alg"`
	Kid        string         `yaml:"kid"`
	TTL        time.Duration  `yaml:"ttl"`
	Reuse      *time.Duration `yaml:"reuse"`
	Headers    []string       `yaml:"headers"`
	Cookies    *bool          `yaml:"cookies"`
	Query      []string       `yaml:"query"`
	JSON       []string       `yaml:"json"`
}

// DefaultReuse is how long a re-signed token is reused for the same
// recorded token.
const DefaultReuse = 30 * time.Second

// maxCached bounds the cache of re-signed tokens; past it, it starts over.
const maxCached = 10000

type jwtSigner struct {
	method  jwt.SigningMethod
	key     any
	kid     []byte
	ttl     int64 // ns; 0: the token's own lifetime
	reuse   int64 // ns
	headers [][]byte
	cookies bool
	query   [][]byte
	paths   []jsonPath

	mu    sync.RWMutex // guards cache
	cache map[string]signed
}

// renew gives a run its own cache of re-signed tokens, on the same key.
func (j *jwtSigner) renew(Options) (step, error) {
	return &jwtSigner{method: j.method, key: j.key, kid: j.kid, ttl: j.ttl, reuse: j.reuse, headers: j.headers,
		cookies: j.cookies, query: j.query, paths: j.paths, cache: map[string]signed{}}, nil
}

// signed is a re-signed token and until when to reuse it; bad marks a
// token that could not be re-signed, remembered so that it is not parsed
// again on every request.
type signed struct {
	token []byte
	until int64 // Unix ns
	bad   bool
}

// lastJWT is a VU's last re-signed token, checked before the shared cache.
type lastJWT struct {
	from []byte // the recorded token
	signed
}

// newJWT loads the key (files relative to dir) and checks that it signs.
func newJWT(s *JWTSpec, dir string) (*jwtSigner, error) {
	j := &jwtSigner{kid: []byte(s.Kid), ttl: int64(s.TTL), reuse: int64(DefaultReuse),
		headers: toBytes(s.Headers), cookies: s.Cookies == nil || *s.Cookies, query: toBytes(s.Query),
		cache: map[string]signed{}}
	if s.Reuse != nil {
		if *s.Reuse < 0 {
			return nil, fmt.Errorf("reuse: want a duration of 0 or more, got %s", *s.Reuse)
		}
		j.reuse = int64(*s.Reuse)
	}
	if s.TTL < 0 {
		return nil, fmt.Errorf("ttl: want a positive duration, got %s", s.TTL)
	}
	if s.Headers == nil {
		j.headers = [][]byte{[]byte("Authorization")}
	}
	var err error
	if j.paths, err = parseJSONPaths(s.JSON, "auth.token"); err != nil {
		return nil, err
	}
	if j.method, j.key, err = loadKey(s, dir); err != nil {
		return nil, err
	}
	if _, err := j.method.Sign("e30.e30", j.key); err != nil {
		return nil, fmt.Errorf("the key does not sign with %s: %w", j.method.Alg(), err)
	}
	return j, nil
}

// loadKey reads the configured key and picks the signing method from it.
func loadKey(s *JWTSpec, dir string) (jwt.SigningMethod, any, error) {
	given := 0
	for _, v := range []string{s.Secret, s.SecretFile, s.KeyFile} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return nil, nil, fmt.Errorf("give exactly one of secret, secret_file or key_file")
	}
	if s.KeyFile == "" {
		return loadSecret(s, dir)
	}
	return loadPrivateKey(s, dir)
}

// readKeyFile reads a file named by the spec's key, relative to dir
// unless absolute.
func readKeyFile(dir, key, name string) ([]byte, error) {
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return b, nil
}

// pickAlg is the signing method of alg (def when empty), which must be one
// of those the key allows.
func pickAlg(alg, def string, allowed ...string) (jwt.SigningMethod, error) {
	if alg == "" {
		alg = def
	}
	for _, a := range allowed {
		if a == alg {
			return jwt.GetSigningMethod(alg), nil
		}
	}
	return nil, fmt.Errorf("alg: %s does not fit this key; want one of %v", alg, allowed)
}

// loadSecret reads an HMAC secret, given inline or in secret_file (its
// line end trimmed).
func loadSecret(s *JWTSpec, dir string) (jwt.SigningMethod, any, error) {
	secret := []byte(s.Secret)
	if s.SecretFile != "" {
		b, err := readKeyFile(dir, "secret_file", s.SecretFile)
		if err != nil {
			return nil, nil, err
		}
		secret = bytes.TrimRight(b, "\r\n")
	}
	if len(secret) == 0 {
		return nil, nil, fmt.Errorf("secret: empty")
	}
	m, err := pickAlg(s.Alg, "HS256", "HS256", "HS384", "HS512")
	return m, secret, err
}

// loadPrivateKey reads key_file's PEM private key: RSA, EC (P-256, P-384,
// P-521) or Ed25519, and the algorithms that key signs with.
func loadPrivateKey(s *JWTSpec, dir string) (jwt.SigningMethod, any, error) {
	pem, err := readKeyFile(dir, "key_file", s.KeyFile)
	if err != nil {
		return nil, nil, err
	}
	if k, err := jwt.ParseRSAPrivateKeyFromPEM(pem); err == nil {
		m, err := pickAlg(s.Alg, "RS256", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
		return m, k, err
	}
	if k, err := jwt.ParseECPrivateKeyFromPEM(pem); err == nil {
		alg := map[int]string{256: "ES256", 384: "ES384", 521: "ES512"}[k.Curve.Params().BitSize]
		if alg == "" {
			return nil, nil, fmt.Errorf("key_file: EC curve %s is not one JWT signs with (P-256, P-384, P-521)", k.Curve.Params().Name)
		}
		m, err := pickAlg(s.Alg, alg, alg)
		return m, k, err
	}
	if k, err := jwt.ParseEdPrivateKeyFromPEM(pem); err == nil {
		m, err := pickAlg(s.Alg, "EdDSA", "EdDSA")
		return m, k, err
	}
	return nil, nil, fmt.Errorf("key_file %s: not a PEM private key of RSA, EC or Ed25519", s.KeyFile)
}

func (j *jwtSigner) name() string { return "jwt" }

func (j *jwtSigner) apply(c *call) {
	req := c.req
	buf := c.buf(0)
	*buf = (*buf)[:0]
	for i := range req.Headers {
		h := &req.Headers[i]
		switch {
		case containsFold(j.headers, h.Name):
			v := h.Value
			prefix := bytes.IndexByte(v, ' ') + 1 // after "Bearer ", or 0
			if tok, ok := j.token(c, v[prefix:]); ok {
				start := len(*buf)
				*buf = append(append(*buf, v[:prefix]...), tok...)
				h.Value = (*buf)[start:]
			}
		case j.cookies && bytes.EqualFold(h.Name, []byte("Cookie")):
			if v, ok := j.cookieHeader(c, buf, h.Value); ok {
				h.Value = v
			}
		}
	}
	if len(j.query) > 0 {
		j.rewriteQuery(c)
	}
	if len(j.paths) > 0 && c.bodyAllowed() && isJSON(req.Body) {
		j.rewriteJSON(c)
	}
}

// token returns the re-signed form of tok, from the cache when it is
// fresh; ok is false when tok is not a JWT or cannot be re-signed. It
// counts a change, or a failure when tok looks like a JWT but cannot be
// re-signed (a failure is cached too, for as long as a token would be, and
// counted each time it is met).
func (j *jwtSigner) token(c *call, tok []byte) ([]byte, bool) {
	last := &c.st.lastJWT
	if c.now < last.until && bytes.Equal(last.from, tok) {
		return last.use(c) // the VU's last token: no lock, no hashing
	}
	if !looksLikeJWT(tok) {
		return nil, false
	}
	j.mu.RLock()
	s, ok := j.cache[string(tok)]
	j.mu.RUnlock()
	if !ok || c.now >= s.until {
		s = signed{until: c.now + j.reuse}
		out, exp, err := j.resign(tok, c.now, c.pair)
		if err != nil {
			s.bad = true
		} else {
			s.token = out
			if exp != 0 && s.until > c.now+(exp-c.now)/2 {
				s.until = c.now + (exp-c.now)/2 // never hand out a token near its end
			}
		}
		j.mu.Lock()
		if len(j.cache) >= maxCached {
			clear(j.cache)
		}
		j.cache[string(tok)] = s
		j.mu.Unlock()
	}
	last.from, last.signed = append(last.from[:0], tok...), s
	return s.use(c)
}

// use hands out s for a request: its token, counted as a change, or a
// failure when s is bad.
func (s *signed) use(c *call) ([]byte, bool) {
	if s.bad {
		c.failed = true
		return nil, false
	}
	c.changed = true
	return s.token, true
}

// cookieHeader re-signs the JWT values of a Cookie header into buf.
func (j *jwtSigner) cookieHeader(c *call, buf *[]byte, v []byte) ([]byte, bool) {
	return rewriteCookies(buf, v, func(_, value []byte) ([]byte, bool) {
		return j.token(c, value)
	})
}

func (j *jwtSigner) rewriteQuery(c *call) {
	out := c.buf(1)
	if uri, ok := rewriteQuery(out, c.req.URI, func(name, value []byte) bool {
		if !containsExact(j.query, name) {
			return false
		}
		tok, ok := j.token(c, value)
		if ok {
			*out = append(*out, tok...)
		}
		return ok
	}); ok {
		c.req.URI = uri
	}
}

func (j *jwtSigner) rewriteJSON(c *call) {
	f := &c.st.jwtFinder
	f.paths = j.paths
	body := c.req.Body
	spans := c.st.spans[:0]
	for _, at := range f.find(&c.st.walker, body) {
		v := body[at[0]:at[1]]
		if len(v) < 2 || v[0] != '"' {
			continue
		}
		if tok, ok := j.token(c, v[1:len(v)-1]); ok {
			spans = append(spans, span{start: at[0] + 1, end: at[1] - 1, repl: tok})
		}
	}
	c.st.spans = spans
	if len(spans) > 0 {
		out := c.buf(2)
		*out = splice((*out)[:0], body, spans)
		c.req.Body = *out
	}
}

// looksLikeJWT reports whether b is three base64url segments, the first
// one a JSON object ("eyJ").
func looksLikeJWT(b []byte) bool {
	if len(b) < 10 || b[0] != 'e' || b[1] != 'y' || b[2] != 'J' {
		return false
	}
	dots := 0
	for _, c := range b {
		switch jwtByte[c] {
		case 0:
			return false
		case 2:
			dots++
		}
	}
	return dots == 2
}

// jwtByte is 1 for the bytes of base64url (and '='), 2 for '.'.
var jwtByte = func() (t [256]byte) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=") {
		t[c] = 1
	}
	t['.'] = 2
	return t
}()

var b64 = base64.RawURLEncoding

// resign makes the fresh token for tok at now; exp is its new exp in Unix
// ns (0: none).
func (j *jwtSigner) resign(tok []byte, now int64, pair interface{ UnixNano() (int64, bool) }) (out []byte, exp int64, err error) {
	parts := bytes.Split(tok, []byte("."))
	if len(parts) != 3 {
		return nil, 0, errors.New("not three segments")
	}
	t, _, err := jwt.NewParser(jwt.WithJSONNumber()).ParseUnverified(string(tok), jwt.MapClaims{})
	if err != nil {
		return nil, 0, err
	}
	header, err := b64.DecodeString(string(bytes.TrimRight(parts[0], "=")))
	if err != nil {
		return nil, 0, err
	}
	payload, err := b64.DecodeString(string(bytes.TrimRight(parts[1], "=")))
	if err != nil {
		return nil, 0, err
	}
	tm := timesOf(t.Claims.(jwt.MapClaims))
	nowS := now / int64(time.Second)
	life, err := j.lifetime(tm, pair)
	if err != nil {
		return nil, 0, err
	}
	newPayload, exp, err := j.payload(payload, tm, nowS, life)
	if err != nil {
		return nil, 0, err
	}
	newHeader, err := j.header(header, t)
	if err != nil {
		return nil, 0, err
	}
	signing := b64.EncodeToString(newHeader) + "." + b64.EncodeToString(newPayload)
	sig, err := j.method.Sign(signing, j.key)
	if err != nil {
		return nil, 0, err
	}
	return []byte(signing + "." + b64.EncodeToString(sig)), exp, nil
}

// jwtTimes are a token's time claims (seconds), each with whether it is
// there as a number.
type jwtTimes struct {
	iat, nbf, exp          float64
	hasIat, hasNbf, hasExp bool
}

// timesOf reads the iat, nbf and exp claims.
func timesOf(claims jwt.MapClaims) jwtTimes {
	num := func(name string) (float64, bool) {
		n, ok := claims[name].(json.Number)
		if !ok {
			return 0, false
		}
		f, err := n.Float64()
		return f, err == nil
	}
	var tm jwtTimes
	tm.iat, tm.hasIat = num("iat")
	tm.nbf, tm.hasNbf = num("nbf")
	tm.exp, tm.hasExp = num("exp")
	return tm
}

// lifetime is the re-signed token's lifetime in seconds: the ttl when set,
// else the recorded token's (exp less iat, nbf, or the pair's recorded
// time); 0 when there is neither a ttl nor an exp.
func (j *jwtSigner) lifetime(tm jwtTimes, pair interface{ UnixNano() (int64, bool) }) (int64, error) {
	life := j.ttl / int64(time.Second)
	if life != 0 || !tm.hasExp {
		return life, nil
	}
	switch {
	case tm.hasIat:
		life = int64(tm.exp - tm.iat)
	case tm.hasNbf:
		life = int64(tm.exp - tm.nbf)
	default:
		rec, ok := pair.UnixNano()
		if !ok {
			return 0, errors.New("no iat, nbf or recorded ts to tell the lifetime from; set ttl")
		}
		life = int64(tm.exp) - rec/int64(time.Second)
	}
	if life <= 0 {
		return 0, fmt.Errorf("lifetime %ds is not positive; set ttl", life)
	}
	return life, nil
}

// payload rewrites the token's payload: iat and nbf to now, when there,
// and exp to now plus the lifetime, added when a ttl is set. exp is the
// new expiry in Unix nanoseconds, 0 when the token has none.
func (j *jwtSigner) payload(payload []byte, tm jwtTimes, nowS, life int64) (_ []byte, exp int64, _ error) {
	set := map[string]int64{}
	if tm.hasIat {
		set["iat"] = nowS
	}
	if tm.hasNbf {
		set["nbf"] = nowS
	}
	if tm.hasExp || j.ttl > 0 {
		set["exp"] = nowS + life
		exp = (nowS + life) * int64(time.Second)
	}
	out, err := setTopLevel(payload, func(key []byte) ([]byte, bool) {
		v, ok := set[string(key)]
		if !ok {
			return nil, false
		}
		return strconv.AppendInt(nil, v, 10), true
	}, !tm.hasExp && j.ttl > 0, "exp", strconv.AppendInt(nil, nowS+life, 10))
	return out, exp, err
}

// header rewrites the token's header: alg to the signer's, and kid to the
// signer's when it has one (added when the token had none).
func (j *jwtSigner) header(header []byte, t *jwt.Token) ([]byte, error) {
	alg := rrpair.AppendJSONString(nil, j.method.Alg())
	kid := rrpair.AppendJSONString(nil, string(j.kid))
	_, hasKid := t.Header["kid"]
	return setTopLevel(header, func(key []byte) ([]byte, bool) {
		switch {
		case string(key) == "alg":
			return alg, true
		case string(key) == "kid" && len(j.kid) > 0:
			return kid, true
		}
		return nil, false
	}, len(j.kid) > 0 && !hasKid, "kid", kid)
}

// setTopLevel rewrites the top-level values of a JSON object whose keys
// repl knows, keeping every other byte, and adds key: value at the end when
// add is set. It runs off the hot path (once per distinct token).
func setTopLevel(obj []byte, repl func(key []byte) ([]byte, bool), add bool, key string, value []byte) ([]byte, error) {
	var w jsonWalker
	tl := &topLevel{repl: repl}
	if !isJSON(obj) || obj[skipSpace(obj, 0)] != '{' || !w.walk(obj, tl) {
		return nil, errors.New("not a JSON object")
	}
	out := splice(nil, obj, tl.spans)
	if add {
		end := bytes.LastIndexByte(out, '}')
		sep := ","
		if bytes.TrimSpace(out[:end])[len(bytes.TrimSpace(out[:end]))-1] == '{' {
			sep = ""
		}
		tail := append(append(rrpair.AppendJSONString([]byte(sep), key), ':'), value...)
		out = append(out[:end], append(tail, out[end:]...)...)
	}
	return out, nil
}

type topLevel struct {
	repl  func(key []byte) ([]byte, bool)
	spans []span
}

func (t *topLevel) visit(w *jsonWalker, start, end int) bool {
	if w.depth == 1 && w.keys[0] != nil {
		if v, ok := t.repl(w.keys[0]); ok {
			t.spans = append(t.spans, span{start: start, end: end, repl: v})
		}
	}
	return true
}
