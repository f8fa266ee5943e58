package transform

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// CorrelateSpec is a "smart replace": a value the SUT returns live replaces
// its recorded counterpart in every later request of the same session on
// that VU. The value is found the same way in the recorded response and in
// the live one: at a JSON path of the body, in a header (optionally
// through a regular expression's first group), or by a regular expression
// over the body. The recorded responses must be in the file.
//
//   - correlate:
//     name: order id              # for the report (default: what it reads)
//     endpoint: POST /orders      # only this endpoint's answers (as reports name it)
//     json: id                    # or: header: Location, regex: '/orders/([^/?]+)'
type CorrelateSpec struct {
	Name     string `yaml:"name"`
	Endpoint string `yaml:"endpoint"`
	JSON     string `yaml:"json"`
	Header   string `yaml:"header"`
	Regex    string `yaml:"regex"`
}

// maxLearned bounds what one VU learns in one session.
const maxLearned = 256

type correlate struct {
	label     string
	endpoints endpointSet
	path      jsonPath
	header    string
	re        *regexp.Regexp
}

func newCorrelate(s *CorrelateSpec, endpoints []string) (*correlate, error) {
	c := &correlate{label: s.Name, header: s.Header}
	from := ""
	switch {
	case s.JSON != "" && (s.Header != "" || s.Regex != ""):
		return nil, fmt.Errorf("give json, or header (with an optional regex), or regex: not json with another")
	case s.JSON != "":
		p, ok := parseJSONPath(s.JSON)
		if !ok {
			return nil, fmt.Errorf("json: %q is not a path such as id or order.id", s.JSON)
		}
		c.path, from = p, "json "+s.JSON
	case s.Header != "":
		if !rrpair.ValidHeaderName(s.Header) {
			return nil, fmt.Errorf("header: %q is not a header name", s.Header)
		}
		from = "header " + s.Header
	case s.Regex == "":
		return nil, fmt.Errorf("say where the value is: json, header or regex")
	default:
		from = "regex " + s.Regex
	}
	if s.Regex != "" {
		re, err := regexp.Compile(s.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex: %w", err)
		}
		if re.NumSubexp() < 1 {
			return nil, fmt.Errorf("regex: %q has no group: put the value in ( )", s.Regex)
		}
		c.re = re
	}
	if c.label == "" {
		c.label = from
	}
	if s.Endpoint != "" {
		var err error
		if c.endpoints, err = newEndpointSet([]string{s.Endpoint}, endpoints); err != nil {
			return nil, fmt.Errorf("endpoint: %w", err)
		}
	}
	return c, nil
}

// endpointSet holds endpoints by their index in the file's table
// (rrpair.Pair.Endpoint); nil holds every endpoint.
type endpointSet []bool

// newEndpointSet is the set of the named endpoints of the table (as
// reports name them); nil when no name is given.
func newEndpointSet(names, table []string) (endpointSet, error) {
	if len(names) == 0 {
		return nil, nil
	}
	s := make(endpointSet, len(table))
	for _, name := range names {
		i := slices.Index(table, name)
		if i < 0 {
			return nil, fmt.Errorf("%q is not an endpoint of the file; it has %s", name, listSome(table, 8))
		}
		s[i] = true
	}
	return s, nil
}

// has reports whether the set holds endpoint ep.
func (s endpointSet) has(ep uint16) bool { return s == nil || int(ep) < len(s) && s[ep] }

func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

func (c *correlate) name() string { return "correlate " + c.label }

func (c *correlate) needsRecorded() bool { return true }

// observe learns recorded → live from one answer.
func (c *correlate) observe(st *vuState, i int, pair *rrpair.Pair, a result.Answer) {
	if !c.endpoints.has(pair.Endpoint) || c.header == "" && pair.IsGRPC() {
		return // a gRPC body is protobuf: nothing to learn from it
	}
	var rec []byte
	if c.header != "" {
		for _, h := range pair.Res.Headers {
			if strings.EqualFold(string(h.Name), c.header) {
				rec = h.Value
				break
			}
		}
		rec = c.value(st, rec)
	} else {
		rec = c.value(st, result.RecordedBody(&pair.Res))
	}
	if len(rec) == 0 {
		return // nothing recorded to replace
	}
	var live []byte
	if c.header != "" {
		live = c.value(st, a.Header(c.header))
	} else {
		live = c.value(st, a.Body())
	}
	switch {
	case len(live) == 0, !rrpair.ValidFieldValue(live):
		// Never seen live, or a value that would break the request head
		// (CR, LF, NUL): the recorded value stays.
		st.counts[i].Failed++
	case !bytes.Equal(rec, live):
		st.learn.learn(i, rec, live)
	}
}

// value finds the value in a header value or a body (a JSON path reads
// only bodies: it never comes with a header).
func (c *correlate) value(st *vuState, b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if c.path != nil {
		f := &st.finder
		f.paths = append(f.paths[:0], c.path)
		found := f.find(&st.walker, b)
		if len(found) == 0 {
			return nil
		}
		v := b[found[0][0]:found[0][1]]
		if v[0] == '"' {
			v = v[1 : len(v)-1]
		}
		if string(v) == "null" {
			return nil
		}
		return v
	}
	if c.re != nil {
		m := c.re.FindSubmatchIndex(b) // allocates: regular expressions cost
		if m == nil || m[2] < 0 {
			return nil
		}
		return b[m[2]:m[3]]
	}
	return b
}

// apply replaces every value this rule learned in the session.
func (c *correlate) apply(call *call) {
	replaceLearned(call, call.step)
}

// replaceLearned replaces the values step learned in the URI, header
// values and body of the request, whole tokens only ("o-123" is not
// replaced inside "o-1234").
func replaceLearned(c *call, step int) {
	ss := &c.st.learn
	found := false
	for k := 0; k < len(ss.maps) && !found; k++ {
		found = ss.maps[k].step == step
	}
	if !found {
		return
	}
	req := c.req
	uri, hdr, body := c.buf(0), c.buf(1), c.buf(2)
	*uri, *hdr, *body = (*uri)[:0], (*hdr)[:0], (*body)[:0]
	if v, ok := replaceTokens(uri, req.URI, ss.maps, step); ok {
		req.URI = v
		c.changed = true
	}
	for i := range req.Headers {
		h := &req.Headers[i]
		if v, ok := replaceTokens(hdr, h.Value, ss.maps, step); ok {
			h.Value = v
			c.changed = true
		}
	}
	if !c.bodyAllowed() {
		return
	}
	if v, ok := replaceTokens(body, req.Body, ss.maps, step); ok {
		req.Body = v
		c.changed = true
	}
}

// replaceTokens appends s with the mappings step learned applied to *dst and
// returns that; ok is false, and *dst as it was, when none applied.
func replaceTokens(dst *[]byte, s []byte, maps []mapping, step int) ([]byte, bool) {
	if len(s) == 0 {
		return nil, false
	}
	start := len(*dst)
	changed := false
	at := 0
	for i := 0; i < len(s); {
		// The earliest whole-token occurrence of any value step learned.
		hit, hitAt := -1, len(s)
		for k := range maps {
			m := &maps[k]
			if m.step != step {
				continue
			}
			for j := i; j < hitAt; {
				n := bytes.Index(s[j:], m.from)
				if n < 0 || j+n >= hitAt {
					break
				}
				j += n
				if boundary(s, j-1) && boundary(s, j+len(m.from)) {
					hit, hitAt = k, j
					break
				}
				j++
			}
		}
		if hit < 0 {
			break
		}
		*dst = append(*dst, s[at:hitAt]...)
		*dst = append(*dst, maps[hit].to...)
		i = hitAt + len(maps[hit].from)
		at = i
		changed = true
	}
	if !changed {
		return nil, false
	}
	*dst = append(*dst, s[at:]...)
	return (*dst)[start:], true
}

// boundary reports whether s[i] is not part of a token (outside s counts).
func boundary(s []byte, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	c := s[i]
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-')
}

// mapping is one learned value: from (recorded) becomes to (live).
type mapping struct {
	step     int
	from, to []byte
}

// sessionState is what a VU learned in the current session.
type sessionState struct {
	maps    []mapping
	cookies []mapping // name → live value
	arena   []byte    // holds the learned bytes
}

func (s *sessionState) reset() {
	s.maps, s.cookies, s.arena = s.maps[:0], s.cookies[:0], s.arena[:0]
}

func (s *sessionState) keep(b []byte) []byte {
	start := len(s.arena)
	s.arena = append(s.arena, b...)
	return s.arena[start:len(s.arena):len(s.arena)]
}

func (s *sessionState) learn(step int, from, to []byte) {
	for k := range s.maps {
		if m := &s.maps[k]; m.step == step && bytes.Equal(m.from, from) {
			m.to = s.keep(to)
			return
		}
	}
	if len(s.maps) < maxLearned {
		s.maps = append(s.maps, mapping{step: step, from: s.keep(from), to: s.keep(to)})
	}
}

// cookies is a per-session cookie jar: a cookie a live answer sets
// replaces the recorded value of the cookie of that name in the Cookie
// header of the session's later requests.
type cookies struct{}

func (cookies) name() string        { return "cookies" }
func (cookies) needsRecorded() bool { return false }

func (cookies) observe(st *vuState, _ int, _ *rrpair.Pair, a result.Answer) {
	ss := &st.learn
	for _, c := range a.Cookies() {
		name, value := c.Name, c.Value
		if i := bytes.IndexByte(value, ';'); i >= 0 {
			value = value[:i]
		}
		if i := bytes.IndexByte(value, '='); i >= 0 {
			value = value[i+1:]
		}
		value = bytes.TrimSpace(value)
		if !rrpair.ValidFieldValue(value) {
			continue // never sent: it would break the Cookie line
		}
		if k := jarIndex(ss.cookies, name); k >= 0 {
			ss.cookies[k].to = ss.keep(value)
			continue
		}
		if len(ss.cookies) < maxLearned {
			ss.cookies = append(ss.cookies, mapping{from: ss.keep(name), to: ss.keep(value)})
		}
	}
}

func (cookies) apply(c *call) {
	jar := c.st.learn.cookies
	if len(jar) == 0 {
		return
	}
	buf := c.buf(0)
	*buf = (*buf)[:0]
	for i := range c.req.Headers {
		h := &c.req.Headers[i]
		if !bytes.EqualFold(h.Name, []byte("Cookie")) {
			continue
		}
		v, ok := rewriteCookies(buf, h.Value, func(name, value []byte) ([]byte, bool) {
			k := jarIndex(jar, name)
			if k < 0 || bytes.Equal(value, jar[k].to) {
				return nil, false
			}
			return jar[k].to, true
		})
		if ok {
			h.Value = v
			c.changed = true
		}
	}
}

func jarIndex(jar []mapping, name []byte) int {
	for k := range jar {
		if bytes.Equal(jar[k].from, name) {
			return k
		}
	}
	return -1
}
