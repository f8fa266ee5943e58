package transform

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// EchoSpec configures echo, an answer transform of replay mock: a value
// the recorded answer repeated from its recorded request (an order id, a
// correlation header) is replaced, in the answer's headers and body, by
// the live request's value at the same place.
//
//   - echo: {auto: true}     # every request value of 6 bytes or more
//   - echo:
//     headers: [X-Request-Id]
//     query: [id]
//     json: [order.id, items.*.sku]
type EchoSpec struct {
	// Auto takes every header value, query value and JSON body scalar of
	// the recorded request of at least MinEcho bytes.
	Auto bool `yaml:"auto"`
	// Named places are taken whatever their length.
	Headers []string `yaml:"headers"`
	Query   []string `yaml:"query"`
	JSON    []string `yaml:"json"`
}

// MinEcho is the shortest value echo auto replaces: shorter ones ("1",
// "true", "EUR") are too likely to stand in the answer for another reason.
const MinEcho = 6

type echo struct {
	auto    bool
	headers [][]byte
	query   [][]byte
	paths   []jsonPath
}

func newEcho(s *EchoSpec) (*echo, error) {
	if !s.Auto && len(s.Headers)+len(s.Query)+len(s.JSON) == 0 {
		return nil, fmt.Errorf("nothing to echo: set auto: true, or name headers, query or json")
	}
	for _, h := range s.Headers {
		if !rrpair.ValidHeaderName(h) {
			return nil, fmt.Errorf("headers: %q is not a header name", h)
		}
	}
	e := &echo{auto: s.Auto, headers: toBytes(s.Headers), query: toBytes(s.Query)}
	var err error
	if e.paths, err = parseJSONPaths(s.JSON, "order.id or items.*.sku"); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *echo) name() string { return "echo" }

// echoPair is a value of the recorded request and the live request's at
// the same place; quoted says both came from JSON strings (written as
// JSON writes them).
type echoPair struct {
	rec, live []byte
	quoted    bool
}

// apply replaces in the answer (c.req) what the recorded request
// (c.pair.Req) held by what the live request (c.live) holds. A request
// rewrite has no live request: nothing happens.
func (e *echo) apply(c *call) {
	if c.live == nil {
		return
	}
	var pairs []echoPair
	pairs = e.headerPairs(pairs, &c.pair.Req, c.live)
	pairs = e.queryPairs(pairs, c.pair.Req.URI, c.live.URI)
	if (e.auto || len(e.paths) > 0) && isJSON(c.pair.Req.Body) && isJSON(c.live.Body) {
		pairs = e.jsonPairs(pairs, c)
	}
	if len(pairs) == 0 {
		return
	}
	echoHeaders(c, pairs)
	if len(c.req.Body) == 0 || !c.bodyAllowed() {
		return
	}
	echoBody(c, pairs)
}

// echoHeaders writes the live values over the recorded ones in the answer's
// headers: only unquoted values, and only those a header may hold.
func echoHeaders(c *call, pairs []echoPair) {
	ans := c.req
	for i := range ans.Headers {
		v := ans.Headers[i].Value
		for _, p := range pairs {
			if !p.quoted && rrpair.ValidFieldValue(p.live) {
				v = replaceWhole(v, p.rec, p.live)
			}
		}
		if !bytes.Equal(v, ans.Headers[i].Value) {
			ans.Headers[i].Value = v
			c.changed = true
		}
	}
}

// echoBody writes the live values over the recorded ones in the answer's
// body, JSON-escaped where a header's or query's value lands in JSON.
func echoBody(c *call, pairs []echoPair) {
	ans := c.req
	body, inJSON := ans.Body, isJSON(ans.Body)
	for _, p := range pairs {
		rec, live := p.rec, p.live
		if inJSON && !p.quoted { // a header's or query's value, written into JSON
			rec, live = jsonEscape(rec), jsonEscape(live)
		}
		body = replaceWhole(body, rec, live)
	}
	if !bytes.Equal(body, ans.Body) {
		ans.Body = body
		c.changed = true
	}
}

// wants reports whether a value of n bytes at a named place (or not) is
// echoed.
func (e *echo) wants(named bool, n int) bool { return n > 0 && (named || e.auto && n >= MinEcho) }

func (e *echo) headerPairs(out []echoPair, rec, live *rrpair.Request) []echoPair {
	for _, h := range rec.Headers {
		named := containsFold(e.headers, h.Name)
		if !e.wants(named, len(h.Value)) {
			continue
		}
		for _, l := range live.Headers {
			if bytes.EqualFold(l.Name, h.Name) {
				if !bytes.Equal(l.Value, h.Value) {
					out = append(out, echoPair{rec: h.Value, live: l.Value})
				}
				break
			}
		}
	}
	return out
}

func (e *echo) queryPairs(out []echoPair, recURI, liveURI []byte) []echoPair {
	_, recQ, ok := bytes.Cut(recURI, []byte("?"))
	if !ok {
		return out
	}
	_, liveQ, _ := bytes.Cut(liveURI, []byte("?"))
	forEachParam(recQ, func(name, value []byte, _ bool) {
		recV, _ := UnescapeQuery(nil, value)
		if !e.wants(containsExact(e.query, name), len(recV)) {
			return
		}
		found := false
		forEachParam(liveQ, func(n, v []byte, _ bool) {
			if found || !bytes.Equal(n, name) {
				return
			}
			found = true
			if liveV, _ := UnescapeQuery(nil, v); !bytes.Equal(liveV, recV) {
				out = append(out, echoPair{rec: bytes.Clone(recV), live: bytes.Clone(liveV)})
			}
		})
	})
	return out
}

// jsonPairs pairs the scalars of the recorded and the live JSON request
// bodies that stand at the same path.
func (e *echo) jsonPairs(out []echoPair, c *call) []echoPair {
	var rec, live scalars
	rec.e, live.e = e, e
	c.st.walker.walk(c.pair.Req.Body, &rec)
	c.st.walker.walk(c.live.Body, &live)
	for i := range rec.vals {
		r := &rec.vals[i]
		for j := range live.vals {
			l := &live.vals[j]
			if l.path == r.path {
				if !bytes.Equal(l.v, r.v) && l.quoted == r.quoted {
					out = append(out, echoPair{rec: r.v, live: l.v, quoted: r.quoted})
				}
				break
			}
		}
	}
	return out
}

// scalars collects the scalar values of a JSON document echo takes, with
// their paths ("order.items.0.sku").
type scalars struct {
	e    *echo
	vals []scalar
}

type scalar struct {
	path   string
	v      []byte // a string's content as written (escapes kept), or a number
	quoted bool
}

func (s *scalars) visit(w *jsonWalker, start, end int) bool {
	v, quoted := w.data[start:end], false
	if v[0] == '"' {
		v, quoted = v[1:len(v)-1], true
	} else if !jsonNumber(v) {
		return true // true, false, null
	}
	if !s.e.wants(atAny(s.e.paths, w), len(v)) {
		return true
	}
	var path []byte
	for i := 0; i < w.depth; i++ {
		if i > 0 {
			path = append(path, '.')
		}
		if k := w.keys[i]; k != nil {
			path = append(path, k...)
		} else {
			path = strconv.AppendInt(path, int64(w.idx[i]), 10)
		}
	}
	s.vals = append(s.vals, scalar{path: string(path), v: v, quoted: quoted})
	return true
}

// replaceWhole replaces each occurrence of old in b that stands whole
// (neither side touches a letter or a digit, so that "12345" is not
// replaced inside "123456") by new; it returns b itself when none does.
func replaceWhole(b, old, new []byte) []byte {
	if len(old) == 0 || bytes.Equal(old, new) {
		return b
	}
	var out []byte
	last := 0
	for i := 0; ; {
		j := bytes.Index(b[i:], old)
		if j < 0 {
			break
		}
		j += i
		end := j + len(old)
		if (j == 0 || !alnum(b[j-1]) || !alnum(old[0])) && (end == len(b) || !alnum(b[end]) || !alnum(old[len(old)-1])) {
			out = append(append(out, b[last:j]...), new...)
			last = end
		}
		i = j + 1
		if last > i {
			i = last
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// jsonEscape is v as it stands inside a JSON string.
func jsonEscape(v []byte) []byte {
	q := rrpair.AppendJSONString(nil, string(v))
	return q[1 : len(q)-1]
}
