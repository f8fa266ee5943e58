package export

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
)

// k6Runtime is the JavaScript that does a transform chain's work inside a
// k6 script, at run time: the rules of pkg/transform, ported.
//
//go:embed k6transforms.js
var k6Runtime string

// K6Transforms is a transforms file as a k6 script carries it: each step
// of the chain as the script's runtime (k6transforms.js) reads it, the
// JWT keys it signs with, and what the data file needs per request (the
// recorded values the correlations learn the live counterparts of).
// Timestamps are shifted and tokens re-signed in the script, at run
// time, so that the script stays valid however late it runs.
type K6Transforms struct {
	steps []map[string]any
	// Keys are the JWT keys, one per jwt step: the environment variable
	// the script reads it from, and its value when embedded
	// (--embed-secrets).
	Keys    []K6Key
	cookies bool                                // the cookie jar runs
	finders map[int]func(p *rrpair.Pair) []byte // correlate steps, by index
}

// K6Key is a JWT key of a k6 script: the environment variable it is read
// from, the algorithm it signs with, and its value when the script embeds
// it.
type K6Key struct {
	Env, Alg string
	Value    string // "" unless embedded
}

// K6TransformsOf compiles spec for a k6 script over file f, as replay run
// compiles it (the same checks, the cookie jar on as replay turns it on),
// or refuses, all at once and each named where it was configured, what a
// script cannot express: fresh values (unique across the VUs and shards
// of a run: replay's own), a path or correlation by regular expression
// (Go's RE2 is not JavaScript's), EdDSA tokens (k6's WebCrypto does not
// sign Ed25519). With embed, the JWT keys are written into the script;
// else the script reads each from an environment variable it names
// (REPLAY_JWT_KEY, REPLAY_JWT_KEY_2, ...).
func K6TransformsOf(spec *transform.Spec, f *rrpair.File, embed bool) (*K6Transforms, error) {
	if _, err := transform.Compile(spec, f.SetsCookies(), transform.Options{VUs: 1, Endpoints: f.Endpoints()}); err != nil {
		return nil, err
	}
	k := &K6Transforms{finders: map[int]func(*rrpair.Pair) []byte{}}
	var errs []error
	for i := range spec.Transforms {
		step, err := k.step(spec, i, f.Endpoints(), embed)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", spec.Origin(i), err))
			continue
		}
		k.steps = append(k.steps, step)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	switch spec.Cookies {
	case "", transform.CookiesAuto:
		k.cookies = f.SetsCookies()
	case transform.CookiesOn:
		k.cookies = true
	}
	if k.cookies {
		k.steps = append(k.steps, map[string]any{"kind": "cookies", "name": "cookies"})
	}
	return k, nil
}

// step is entry i of spec as the script's runtime reads it.
func (k *K6Transforms) step(spec *transform.Spec, i int, endpoints []string, embed bool) (map[string]any, error) {
	e := &spec.Transforms[i]
	switch {
	case e.Timestamps != nil:
		t := e.Timestamps
		window := t.Window
		if window == 0 {
			window = transform.DefaultWindow
		}
		return map[string]any{"kind": "timestamps", "name": "timestamps", "auto": t.Auto, "window_ns": window.Nanoseconds(),
			"json": paths(t.JSON), "query": nonNil(t.Query), "headers": nonNil(t.Headers)}, nil
	case e.JWT != nil:
		return k.jwtStep(spec, i, embed)
	case e.Headers != nil:
		h := e.Headers
		return map[string]any{"kind": "headers", "name": "headers", "set": pairs(h.Set), "remove": nonNil(h.Remove), "rename": pairs(h.Rename)}, nil
	case e.Query != nil:
		return map[string]any{"kind": "query", "name": "query", "set": pairs(e.Query.Set), "remove": nonNil(e.Query.Remove)}, nil
	case e.Path != nil:
		if e.Path.Regex != "" {
			return nil, errors.New("path regex: Go's regular expressions (RE2) are not JavaScript's, and a script that rewrote paths otherwise would lie; rewrite by prefix, or replay it with replay run")
		}
		return map[string]any{"kind": "path", "name": "path", "prefix": e.Path.Prefix, "to": e.Path.To}, nil
	case e.Host != nil:
		return map[string]any{"kind": "host", "name": "host", "host": *e.Host}, nil
	case e.Correlate != nil:
		return k.correlateStep(e.Correlate, i, endpoints)
	case e.Fresh != nil:
		return nil, errors.New("fresh: values unique across every VU and shard of a run, derived from --seed, are replay's own; a k6 script has no such numbering: drop it from the file you export, or replay it with replay run")
	}
	return nil, errors.New("a transform a k6 script does not carry") // Compile refused the others
}

// jwtStep is jwt entry i: its key read (and embedded, or named by an
// environment variable), its settings.
func (k *K6Transforms) jwtStep(spec *transform.Spec, i int, embed bool) (map[string]any, error) {
	j := spec.Transforms[i].JWT
	alg, key, err := spec.JWTKey(i)
	if err != nil {
		return nil, fmt.Errorf("jwt: %w", err)
	}
	if alg == "EdDSA" {
		return nil, errors.New("jwt: EdDSA: k6's WebCrypto does not sign with Ed25519; re-sign with an RSA (RS*, PS*), EC (ES*) or HMAC (HS*) key, or replay it with replay run")
	}
	env := "REPLAY_JWT_KEY"
	if n := len(k.Keys); n > 0 {
		env += "_" + strconv.Itoa(n+1)
	}
	kk := K6Key{Env: env, Alg: alg}
	if embed {
		kk.Value = string(key)
	}
	k.Keys = append(k.Keys, kk)
	reuse := transform.DefaultReuse
	if j.Reuse != nil {
		reuse = *j.Reuse
	}
	headers := j.Headers
	if headers == nil {
		headers = []string{"Authorization"}
	}
	return map[string]any{"kind": "jwt", "name": "jwt", "alg": alg, "key_env": env, "kid": j.Kid, "ttl_s": int64(j.TTL.Seconds()),
		"reuse_ms": reuse.Milliseconds(), "headers": headers, "cookies": j.Cookies == nil || *j.Cookies,
		"query": nonNil(j.Query), "json": paths(j.JSON)}, nil
}

// correlateStep is correlate entry i: learned from a JSON path of the
// answer's body or from a header, never through a regular expression.
func (k *K6Transforms) correlateStep(c *transform.CorrelateSpec, i int, endpoints []string) (map[string]any, error) {
	if c.Regex != "" {
		return nil, errors.New("correlate regex: Go's regular expressions (RE2) are not JavaScript's; learn the value from a json path or a whole header, or replay it with replay run")
	}
	find, err := transform.RecordedValues(c, endpoints)
	if err != nil {
		return nil, fmt.Errorf("correlate: %w", err)
	}
	k.finders[i] = find
	label := c.Name
	if label == "" {
		label = "json " + c.JSON
		if c.Header != "" {
			label = "header " + c.Header
		}
	}
	step := map[string]any{"kind": "correlate", "name": "correlate " + label, "header": c.Header}
	if c.JSON != "" {
		step["json"] = strings.Split(c.JSON, ".")
	}
	return step, nil
}

// learn is what the data file says of pair p for the correlations: the
// value each would learn the live counterpart of, by step index; nil
// when none.
func (k *K6Transforms) learn(p *rrpair.Pair) map[string]string {
	var out map[string]string
	for i, find := range k.finders {
		if v := find(p); len(v) > 0 {
			if out == nil {
				out = map[string]string{}
			}
			out[strconv.Itoa(i)] = string(v)
		}
	}
	return out
}

// script writes the runtime's part of the script: the chain, the keys
// (read from the environment, or embedded), and the runtime itself.
func (k *K6Transforms) script(b *strings.Builder) error {
	steps, err := json.MarshalIndent(k.steps, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "\n// The transforms, in order (replay export k6 --transforms).\nconst TRANSFORMS = %s;\n", steps)
	if len(k.Keys) > 0 {
		b.WriteString("\n// The JWT signing keys: an HMAC secret, or a PEM private key (PKCS #8,\n// PKCS #1 RSA or SEC 1 EC).\nconst KEYS = {\n")
		for _, key := range k.Keys {
			if key.Value != "" {
				v, _ := json.Marshal(key.Value)
				fmt.Fprintf(b, "  %s: %s, // embedded (--embed-secrets)\n", key.Env, v)
			} else {
				fmt.Fprintf(b, "  %s: __ENV.%s,\n", key.Env, key.Env)
			}
		}
		b.WriteString("};\nfor (const name of Object.keys(KEYS)) {\n  if (!KEYS[name]) {\n    throw new Error(name + ': set it to the JWT signing key (k6 run -e ' + name + '=...), or export with --embed-secrets');\n  }\n}\n")
	}
	fmt.Fprintf(b, "const COOKIE_JAR = %t; // replay's cookie jar: k6's own stays out of it\n\n", k.cookies)
	b.WriteString(k6Runtime)
	return nil
}

// paths splits JSON paths into their segments.
func paths(ps []string) [][]string {
	out := [][]string{}
	for _, p := range ps {
		out = append(out, strings.Split(p, "."))
	}
	return out
}

// pairs is an ordered mapping as [name, value] pairs.
func pairs(ps transform.Pairs) [][2]string {
	out := [][2]string{}
	for _, p := range ps {
		out = append(out, [2]string{p.Name, p.Value})
	}
	return out
}

// nonNil is ss, or an empty list: the runtime reads every list.
func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
