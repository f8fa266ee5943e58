package transform

import (
	"bytes"
	"fmt"
	"regexp"

	"github.com/replay-dev/replay/pkg/rrpair"
	"go.yaml.in/yaml/v3"
)

// Pairs is an ordered YAML mapping of names to values ({X-Env: staging}),
// applied in the order written.
type Pairs []Pair

// Pair is one name and value of Pairs.
type Pair struct{ Name, Value string }

// UnmarshalYAML keeps the order of the mapping.
func (p *Pairs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping such as {X-Env: staging}", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: want name: value", k.Line)
		}
		*p = append(*p, Pair{k.Value, v.Value})
	}
	return nil
}

// HeaderSpec sets, removes and renames request headers. Names match
// without regard to case; a set header replaces every value of that name
// (where it first stands, keeping the recorded spelling) or is added last.
//
//   - headers:
//     set: {X-Env: staging, Authorization: "Bearer test-token"}
//     remove: [X-Debug, Cookie]
//     rename: {X-Old-Trace: X-Trace}
type HeaderSpec struct {
	Set    Pairs    `yaml:"set"`
	Remove []string `yaml:"remove"`
	Rename Pairs    `yaml:"rename"`
}

type headers struct {
	set    [][2][]byte
	remove [][]byte
	rename [][2][]byte
}

func newHeaders(s *HeaderSpec) (*headers, error) {
	h := &headers{remove: toBytes(s.Remove)}
	if len(s.Set)+len(s.Remove)+len(s.Rename) == 0 {
		return nil, fmt.Errorf("nothing to do: give set, remove or rename")
	}
	for _, p := range s.Set {
		if !rrpair.ValidHeaderName(p.Name) {
			return nil, fmt.Errorf("set: %q is not a header name", p.Name)
		}
		if !rrpair.ValidFieldValue([]byte(p.Value)) {
			return nil, fmt.Errorf("set: %s: the value %q holds CR, LF or NUL", p.Name, p.Value)
		}
		h.set = append(h.set, [2][]byte{[]byte(p.Name), []byte(p.Value)})
	}
	for _, name := range s.Remove {
		if !rrpair.ValidHeaderName(name) {
			return nil, fmt.Errorf("remove: %q is not a header name", name)
		}
	}
	for _, p := range s.Rename {
		if !rrpair.ValidHeaderName(p.Name) || !rrpair.ValidHeaderName(p.Value) {
			return nil, fmt.Errorf("rename: %q: %q is not a pair of header names", p.Name, p.Value)
		}
		h.rename = append(h.rename, [2][]byte{[]byte(p.Name), []byte(p.Value)})
	}
	return h, nil
}

func (h *headers) name() string { return "headers" }

func (h *headers) apply(c *call) {
	req := c.req
	hs := req.Headers
	for _, r := range h.rename {
		for i := range hs {
			if bytes.EqualFold(hs[i].Name, r[0]) {
				hs[i].Name = r[1]
				c.changed = true
			}
		}
	}
	if len(h.remove) > 0 {
		kept := hs[:0]
		for _, x := range hs {
			if containsFold(h.remove, x.Name) {
				c.changed = true
				continue
			}
			kept = append(kept, x)
		}
		hs = kept
	}
	for _, s := range h.set {
		hs = setHeader(hs, s[0], s[1])
		c.changed = true
	}
	req.Headers = hs
}

// setHeader gives name (any case) the one value value: where it first
// stands, keeping the recorded spelling, later values removed; or added
// last. It reuses hs's array.
func setHeader(hs []rrpair.Header, name, value []byte) []rrpair.Header {
	at := -1
	kept := hs[:0]
	for _, x := range hs {
		if bytes.EqualFold(x.Name, name) {
			if at >= 0 {
				continue // a later value of a set name goes
			}
			at = len(kept)
			x.Value = value
		}
		kept = append(kept, x)
	}
	if at < 0 {
		kept = append(kept, rrpair.Header{Name: name, Value: value})
	}
	return kept
}

// QuerySpec sets and removes query parameters. Values are written as given
// (escape them yourself); a set parameter replaces the first of that name
// (later ones go) or is added last.
//
//   - query:
//     set: {api_key: test-key}
//     remove: [debug]
type QuerySpec struct {
	Set    Pairs    `yaml:"set"`
	Remove []string `yaml:"remove"`
}

type query struct {
	set    [][2][]byte
	remove [][]byte
}

func newQuery(s *QuerySpec) (*query, error) {
	if len(s.Set)+len(s.Remove) == 0 {
		return nil, fmt.Errorf("nothing to do: give set or remove")
	}
	q := &query{remove: toBytes(s.Remove)}
	for _, p := range s.Set {
		if p.Name == "" || bytes.ContainsAny([]byte(p.Name), "&=#? ") || bytes.ContainsAny([]byte(p.Value), "&# ") {
			return nil, fmt.Errorf("set: %s=%s: want a name without & = # ? or space, and a value without & # or space", p.Name, p.Value)
		}
		q.set = append(q.set, [2][]byte{[]byte(p.Name), []byte(p.Value)})
	}
	return q, nil
}

func (q *query) name() string { return "query" }

func (q *query) apply(c *call) {
	uri := c.req.URI
	path, raw := uri, []byte(nil)
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		path, raw = uri[:i], uri[i+1:]
	}
	out := c.buf(0)
	*out = append((*out)[:0], path...)
	n, done := 0, c.buf(1) // done[k] = 1 when set[k] was written
	*done = append((*done)[:0], make([]byte, len(q.set))...)
	param := func(name, value []byte, hasValue bool) {
		if n == 0 {
			*out = append(*out, '?')
		} else {
			*out = append(*out, '&')
		}
		n++
		*out = append(*out, name...)
		if hasValue {
			*out = append(*out, '=')
			*out = append(*out, value...)
		}
	}
	if raw != nil {
		forEachParam(raw, func(name, value []byte, _ bool) {
			if containsExact(q.remove, name) {
				return
			}
			for k, s := range q.set {
				if bytes.Equal(name, s[0]) {
					if (*done)[k] == 0 {
						(*done)[k] = 1
						param(name, s[1], true)
					}
					return
				}
			}
			param(name, value, value != nil)
		})
	}
	for k, s := range q.set {
		if (*done)[k] == 0 {
			param(s[0], s[1], true)
		}
	}
	if !bytes.Equal(*out, uri) {
		c.req.URI = *out
		c.changed = true
	}
}

// PathSpec rewrites the path (the query stays): a prefix replaced by To, or
// a regular expression's matches replaced by To ($1 for a group).
//
//   - path: {prefix: /v1/, to: /v2/}
//   - path: {regex: '^/api/(\w+)/v1', to: '/api/$1/v2'}
type PathSpec struct {
	Prefix string `yaml:"prefix"`
	Regex  string `yaml:"regex"`
	To     string `yaml:"to"`
}

type pathRewrite struct {
	prefix, to []byte
	re         *regexp.Regexp
}

func newPath(s *PathSpec) (*pathRewrite, error) {
	p := &pathRewrite{prefix: []byte(s.Prefix), to: []byte(s.To)}
	switch {
	case s.Prefix != "" && s.Regex != "":
		return nil, fmt.Errorf("give prefix or regex, not both")
	case s.Prefix == "" && s.Regex == "":
		return nil, fmt.Errorf("give prefix or regex, and to")
	case s.Regex != "":
		re, err := regexp.Compile(s.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex: %w", err)
		}
		p.re = re
	}
	return p, nil
}

func (p *pathRewrite) name() string { return "path" }

func (p *pathRewrite) apply(c *call) {
	uri := c.req.URI
	path, rest := uri, []byte(nil)
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		path, rest = uri[:i], uri[i:]
	}
	out := c.buf(0)
	if p.re == nil {
		if !bytes.HasPrefix(path, p.prefix) {
			return
		}
		*out = append(append((*out)[:0], p.to...), path[len(p.prefix):]...)
	} else {
		if !p.re.Match(path) {
			return
		}
		*out = append((*out)[:0], p.re.ReplaceAll(path, p.to)...) // allocates: regular expressions cost
	}
	*out = append(*out, rest...)
	c.req.URI = *out
	c.changed = true
}

// host sends another Host header, whatever --target and --keep-host say.
type host struct{ value []byte }

func newHost(s string) (*host, error) {
	if s == "" || bytes.ContainsAny([]byte(s), " /\r\n") {
		return nil, fmt.Errorf("want a host[:port] such as api.staging:8080, got %q", s)
	}
	return &host{value: []byte(s)}, nil
}

func (h *host) name() string { return "host" }

func (h *host) apply(c *call) {
	c.req.HostHeader = h.value
	c.changed = true
}
