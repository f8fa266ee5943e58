package transform

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// What an exporter needs to carry a chain into another tool's script
// (pkg/export: a k6 script does the chain's work at run time): where each
// entry was configured, a JWT entry's key, a correlation's recorded
// values. Each is read as the chain reads it, so that the script and a
// replay agree.

// Origin is where entry i of s was configured, for messages:
// "transforms.yaml:7", or the flag.
func (s *Spec) Origin(i int) string {
	if i < len(s.origins) {
		return s.origins[i]
	}
	return "transforms"
}

// JWTKey reads the key of jwt entry i of s as the chain does (files
// relative to the transforms file): the algorithm it signs with (from the
// key and alg, never a token's) and the key itself, the secret's bytes
// or the PEM file's content.
func (s *Spec) JWTKey(i int) (alg string, key []byte, err error) {
	js := s.Transforms[i].JWT
	if js == nil {
		return "", nil, fmt.Errorf("entry %d is not a jwt transform", i+1)
	}
	method, _, err := loadKey(js, s.dir)
	if err != nil {
		return "", nil, err
	}
	read := func(name string) ([]byte, error) {
		if !filepath.IsAbs(name) {
			name = filepath.Join(s.dir, name)
		}
		return os.ReadFile(name)
	}
	switch {
	case js.KeyFile != "":
		key, err = read(js.KeyFile)
	case js.SecretFile != "":
		key, err = read(js.SecretFile)
		key = bytes.TrimRight(key, "\r\n")
	default:
		key = []byte(js.Secret)
	}
	return method.Alg(), key, err
}

// RecordedValues compiles correlate entry spec as the chain does and
// returns what finds, in a pair's recorded answer, the value it would
// learn the live counterpart of: nil for a pair of another endpoint, or
// whose recorded answer lacks it. The pair must be decoded with its
// response.
func RecordedValues(spec *CorrelateSpec, endpoints []string) (func(p *rrpair.Pair) []byte, error) {
	c, err := newCorrelate(spec, endpoints)
	if err != nil {
		return nil, err
	}
	st := &vuState{}
	return func(p *rrpair.Pair) []byte {
		if !c.endpoints.has(p.Endpoint) || c.header == "" && p.IsGRPC() {
			return nil
		}
		if c.header != "" {
			for _, h := range p.Res.Headers {
				if bytes.EqualFold(h.Name, []byte(c.header)) {
					return bytes.Clone(c.value(st, h.Value))
				}
			}
			return nil
		}
		return bytes.Clone(c.value(st, result.RecordedBody(&p.Res)))
	}, nil
}
