package transform

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecPEM := filepath.Base(writePEM(t, dir, ec))
	os.WriteFile(filepath.Join(dir, "junk.pem"), []byte("not a key"), 0o600)
	tests := []struct{ name, yaml, want string }{
		{"empty", "", "t.yaml: empty: want a list of transforms"},
		{"syntax", "transforms:\n  - jwt: {secret: [}\n", "t.yaml:1: did not find expected node content"},
		{"tab", "transforms:\n\t- host: x\n", "t.yaml:2: found character that cannot start any token"},
		{"unknown top-level key", "transform:\n  - host: x\n", `t.yaml:1: unknown key "transform" in the file (top level); want one of transforms, cookies`},
		{"unknown transform", "transforms:\n  - host: x\n  - rewrite: {a: b}\n", `t.yaml:3: unknown key "rewrite" in a transforms entry; want one of timestamps, jwt, headers, query, path, host, correlate`},
		{"unknown key in a transform", "transforms:\n  - jwt:\n      secret: s\n      sercet: s\n", `t.yaml:4: unknown key "sercet" in jwt; want one of secret, secret_file, key_file, alg, kid, ttl, reuse, headers, cookies, query, json`},
		{"wrong type", "transforms:\n  - timestamps: {auto: maybe}\n", "t.yaml:2: cannot unmarshal !!str `maybe` into bool"},
		{"bad duration", "transforms:\n  - timestamps: {auto: true, window: soon}\n", "t.yaml:2: "},
		{"two in one entry", "transforms:\n  - host: x\n    path: {prefix: /a, to: /b}\n", "t.yaml:2: one transform per entry, got path and host"},
		{"no transform named", "transforms:\n  - {}\n", "t.yaml:2: the entry names no transform"},
		{"nothing to shift", "transforms:\n  - timestamps: {window: 1h}\n", "t.yaml:2: timestamps: nothing to shift"},
		{"bad json path", "transforms:\n  - timestamps: {json: [a..b]}\n", `t.yaml:2: timestamps: json: "a..b" is not a path`},
		{"no key", "transforms:\n  - host: x\n  - jwt: {ttl: 1h}\n", "t.yaml:3: jwt: give exactly one of secret, secret_file or key_file"},
		{"two keys", "transforms:\n  - jwt: {secret: s, key_file: k.pem}\n", "t.yaml:2: jwt: give exactly one of"},
		{"missing key file", "transforms:\n  - jwt: {key_file: nope.pem}\n", "t.yaml:2: jwt: key_file: open "},
		{"not a key", "transforms:\n  - jwt: {key_file: junk.pem}\n", "t.yaml:2: jwt: key_file junk.pem: not a PEM private key of RSA, EC or Ed25519"},
		{"alg does not fit", "transforms:\n  - jwt: {secret: s, alg: RS256}\n", "t.yaml:2: jwt: alg: RS256 does not fit this key; want one of [HS256 HS384 HS512]"},
		{"alg does not fit the curve", "transforms:\n  - jwt: {key_file: " + ecPEM + ", alg: ES384}\n", "t.yaml:2: jwt: alg: ES384 does not fit this key; want one of [ES256]"},
		{"header name", "transforms:\n  - headers: {set: {'Bad Name': x}}\n", `t.yaml:2: headers: set: "Bad Name" is not a header name`},
		{"header name not a token", "transforms:\n  - headers: {set: {'X-Trace@': x}}\n", `t.yaml:2: headers: set: "X-Trace@" is not a header name`},
		{"header value with CR LF", "transforms:\n  - headers: {set: {X-Trace: \"a\\r\\nEvil: 1\"}}\n", `t.yaml:2: headers: set: X-Trace: the value "a\r\nEvil: 1" holds CR, LF or NUL`},
		{"headers empty", "transforms:\n  - headers: {}\n", "t.yaml:2: headers: nothing to do"},
		{"path both", "transforms:\n  - path: {prefix: /a, regex: b, to: c}\n", "t.yaml:2: path: give prefix or regex, not both"},
		{"path regex", "transforms:\n  - path: {regex: '(', to: c}\n", "t.yaml:2: path: regex: error parsing regexp"},
		{"host", "transforms:\n  - host: 'a b'\n", `t.yaml:2: host: want a host[:port]`},
		{"cookies", "cookies: sometimes\n", `cookies: want auto, on or off, got "sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := Parse([]byte(tt.yaml), "t.yaml", dir)
			if err == nil {
				_, err = Build(spec, false, Options{})
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a ConfigError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got  %s\nwant %s...", err, tt.want)
			}
		})
	}
}

func TestConfigOrderAndOrigins(t *testing.T) {
	spec, err := Parse([]byte(`# comment
transforms:
  - path: {prefix: /a, to: /b}
  - headers:
      set: {X-B: "2", X-A: "1"}
  - host: h
`), "t.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	spec.Add(Entry{Host: new("")}, "--host-header")
	_, err = Build(spec, false, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "--host-header: host: ") {
		t.Errorf("got %v, want an error naming the flag", err)
	}
	spec.Transforms = spec.Transforms[:3]
	c, err := Build(spec, false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Names(), ","); got != "path,headers,host" {
		t.Errorf("order %s", got)
	}
	if got := spec.Transforms[1].Headers.Set; got[0].Name != "X-B" || got[1].Name != "X-A" {
		t.Errorf("set lost its order: %v", got)
	}
}
