package mock

import (
	"bytes"
	"hash/maphash"
	"sort"
	"strings"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
)

// A signature is what two requests must share to be answered alike:
// method, host, path, query (parameter order ignored), body (JSON compared
// canonically, key order and white space ignored; any other body, gRPC's
// protobuf included, byte for byte), and the headers --match-header names.
// A place masked (a redacted field, an --ignore, and in the second pass a
// place where the recording holds rotating values) matches anything.
// Signatures are 64-bit hashes, made with one seed per index.

// view is a request as the matcher reads it, recorded or live.
type view struct {
	method  []byte
	host    []byte // normalized (normHost)
	uri     []byte // origin-form target, raw
	headers []rrpair.Header
	body    []byte
}

// masks are the places a signature ignores: JSON paths (keys joined by
// ".", array elements "*"), query parameter names, header names (lower
// case), and with segments the rotating segments of the path.
type masks struct {
	json, query, header map[string]struct{}
	segments            bool
}

func newMasks() *masks {
	return &masks{json: map[string]struct{}{}, query: map[string]struct{}{}, header: map[string]struct{}{}}
}

// union is m with every place of o masked too.
func (m *masks) union(o *masks) *masks {
	u := newMasks()
	for _, src := range []*masks{m, o} {
		for k := range src.json {
			u.json[k] = struct{}{}
		}
		for k := range src.query {
			u.query[k] = struct{}{}
		}
		for k := range src.header {
			u.header[k] = struct{}{}
		}
		u.segments = u.segments || src.segments
	}
	return u
}

// jsonPathOf is a user's JSON path in the masks' form: array indexes as
// "*" ("items.0.id" → "items.*.id").
func jsonPathOf(s string) string {
	segs := strings.Split(s, ".")
	for i, seg := range segs {
		if allDigits([]byte(seg)) {
			segs[i] = "*"
		}
	}
	return strings.Join(segs, ".")
}

// signer computes signatures. Each goroutine has its own (its buffers).
type signer struct {
	seed   maphash.Seed
	h      maphash.Hash
	path   []byte  // the JSON path walked
	buf    []byte  // unescaped query names and values
	params []param // offsets into buf
	str    []byte  // an unescaped JSON string
	match  []string
}

type param struct{ name, value [2]int }

func newSigner(seed maphash.Seed, matchHeaders []string) *signer {
	s := &signer{seed: seed, match: matchHeaders}
	s.h.SetSeed(seed)
	return s
}

// Constants that keep the hashes of different kinds of JSON values apart.
const (
	tagString uint64 = 0x9e3779b97f4a7c15
	tagLit    uint64 = 0xc2b2ae3d27d4eb4f
	tagObject uint64 = 0x165667b19e3779f9
	tagArray  uint64 = 0xd6e8feb86659fd93
	tagMasked uint64 = 0x27d4eb2f165667c5
	tagRaw    uint64 = 0x94d049bb133111eb
)

// mix is SplitMix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// sum is the signature of v with m masked.
func (s *signer) sum(v *view, m *masks) uint64 {
	h := &s.h
	h.Reset()
	h.Write(v.method)
	h.WriteByte(0)
	h.Write(v.host)
	h.WriteByte(0)
	path, query, _ := bytes.Cut(v.uri, []byte("?"))
	s.writePath(path, m.segments)
	h.WriteByte(0)
	s.parseQuery(query)
	for _, p := range s.params {
		name := s.buf[p.name[0]:p.name[1]]
		h.Write(name)
		if _, masked := m.query[string(name)]; masked {
			h.WriteString("\x00*\x00")
			continue
		}
		h.WriteByte(0)
		h.Write(s.buf[p.value[0]:p.value[1]])
		h.WriteByte(0)
	}
	h.WriteByte(1)
	for _, name := range s.match {
		h.WriteString(name)
		if _, masked := m.header[name]; masked {
			h.WriteString("\x00*\x00")
			continue
		}
		for i := range v.headers {
			if strings.EqualFold(string(v.headers[i].Name), name) {
				h.WriteByte(0)
				h.Write(v.headers[i].Value)
			}
		}
		h.WriteByte(0)
	}
	bh := s.bodyHash(v.body, m.json)
	var b [8]byte
	for i := range b {
		b[i] = byte(bh >> (8 * i))
	}
	h.Write(b[:])
	return h.Sum64()
}

// route is the hash of a request's host and path, its rotating segments
// as one ("*"): the requests a miss looks among first for the nearest, and
// what bounds how much of a body is read (body.go).
func (s *signer) route(v *view) uint64 {
	s.h.Reset()
	s.h.Write(v.host)
	s.h.WriteByte(0)
	path, _, _ := bytes.Cut(v.uri, []byte("?"))
	s.writePath(path, true)
	return s.h.Sum64()
}

// writePath hashes the path, its rotating segments as "*" when segments.
func (s *signer) writePath(path []byte, segments bool) {
	if !segments {
		s.h.Write(path)
		return
	}
	for len(path) > 0 {
		seg := path
		i := bytes.IndexByte(path, '/')
		switch {
		case i == 0:
			s.h.WriteByte('/')
			path = path[1:]
			continue
		case i > 0:
			seg, path = path[:i], path[i:]
		default:
			path = nil
		}
		if rotating(seg) {
			s.h.WriteByte('*')
		} else {
			s.h.Write(seg)
		}
	}
}

// parseQuery reads a raw query into s.params, names and values unescaped
// ("%20" and "+" are a space), sorted by name then value.
func (s *signer) parseQuery(q []byte) {
	s.buf, s.params = s.buf[:0], s.params[:0]
	for len(q) > 0 {
		var kv []byte
		kv, q, _ = bytes.Cut(q, []byte("&"))
		if len(kv) == 0 {
			continue
		}
		name, value, _ := bytes.Cut(kv, []byte("="))
		var p param
		p.name[0] = len(s.buf)
		s.buf = unescape(s.buf, name)
		p.name[1] = len(s.buf)
		p.value[0] = len(s.buf)
		s.buf = unescape(s.buf, value)
		p.value[1] = len(s.buf)
		s.params = append(s.params, p)
	}
	if len(s.params) > 1 {
		sort.Sort(byNameValue{s})
	}
}

type byNameValue struct{ s *signer }

func (b byNameValue) Len() int      { return len(b.s.params) }
func (b byNameValue) Swap(i, j int) { b.s.params[i], b.s.params[j] = b.s.params[j], b.s.params[i] }
func (b byNameValue) Less(i, j int) bool {
	buf, p, q := b.s.buf, &b.s.params[i], &b.s.params[j]
	if c := bytes.Compare(buf[p.name[0]:p.name[1]], buf[q.name[0]:q.name[1]]); c != 0 {
		return c < 0
	}
	return bytes.Compare(buf[p.value[0]:p.value[1]], buf[q.value[0]:q.value[1]]) < 0
}

// unescape appends v with %XX escapes and "+" undone.
func unescape(dst, v []byte) []byte {
	if out, escaped := transform.UnescapeQuery(dst, v); escaped {
		return out
	}
	return append(dst, v...)
}

// looksJSON: the body starts, after white space, with an object or an
// array.
func looksJSON(b []byte) bool {
	i := skipWS(b, 0)
	return i < len(b) && (b[i] == '{' || b[i] == '[')
}

// bodyHash is the hash of a body: a JSON document's canonical value with
// the paths in mask masked, or the bytes of any other body.
func (s *signer) bodyHash(b []byte, mask map[string]struct{}) uint64 {
	if len(b) == 0 {
		return 0
	}
	if looksJSON(b) {
		s.path = s.path[:0]
		if h, end, ok := s.jvalue(b, skipWS(b, 0), mask, nil); ok && skipWS(b, end) == len(b) {
			return h
		}
	}
	return mix(maphash.Bytes(s.seed, b) ^ tagRaw)
}

// leafVisitor gets each scalar of a JSON document with its path: a
// string's content unescaped (str), or a literal as written.
type leafVisitor func(path, value []byte, str bool)

// jvalue hashes the JSON value at d[i:] (canonically: an object's members
// in any order), the value at a masked path as any value; it returns the
// hash and the index after the value. visit, when not nil, gets every
// scalar with its path.
func (s *signer) jvalue(d []byte, i int, mask map[string]struct{}, visit leafVisitor) (h uint64, end int, ok bool) {
	if i >= len(d) {
		return 0, i, false
	}
	switch c := d[i]; {
	case c == '{':
		h, end, ok = s.jobject(d, i+1, mask, visit)
	case c == '[':
		h, end, ok = s.jarray(d, i+1, mask, visit)
	case c == '"':
		var str []byte
		if str, end, ok = s.jstring(d, i); !ok {
			return 0, end, false
		}
		h = mix(maphash.Bytes(s.seed, str) ^ tagString)
		if visit != nil {
			visit(s.path, str, true)
		}
	default:
		if end = literalEnd(d, i); end == i {
			return 0, end, false
		}
		h, ok = mix(maphash.Bytes(s.seed, d[i:end])^tagLit), true
		if visit != nil {
			visit(s.path, d[i:end], false)
		}
	}
	if ok && len(mask) > 0 {
		if _, masked := mask[string(s.path)]; masked {
			h = tagMasked
		}
	}
	return h, end, ok
}

func (s *signer) jobject(d []byte, i int, mask map[string]struct{}, visit leafVisitor) (uint64, int, bool) {
	var sum, n uint64
	i = skipWS(d, i)
	if i < len(d) && d[i] == '}' {
		return mix(tagObject), i + 1, true
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return 0, i, false
		}
		key, end, ok := s.jstring(d, i)
		if !ok {
			return 0, end, false
		}
		kh := maphash.Bytes(s.seed, key)
		i = skipWS(d, end)
		if i >= len(d) || d[i] != ':' {
			return 0, i, false
		}
		at := len(s.path)
		if at > 0 {
			s.path = append(s.path, '.')
		}
		s.path = append(s.path, key...)
		vh, end, ok := s.jvalue(d, skipWS(d, i+1), mask, visit)
		s.path = s.path[:at]
		if !ok {
			return 0, end, false
		}
		sum += mix(kh*0x9e3779b97f4a7c15 ^ vh)
		n++
		i = skipWS(d, end)
		if i < len(d) && d[i] == '}' {
			return mix(sum ^ n ^ tagObject), i + 1, true
		}
		if i >= len(d) || d[i] != ',' {
			return 0, i, false
		}
		i = skipWS(d, i+1)
	}
}

func (s *signer) jarray(d []byte, i int, mask map[string]struct{}, visit leafVisitor) (uint64, int, bool) {
	h := tagArray
	i = skipWS(d, i)
	if i < len(d) && d[i] == ']' {
		return mix(h), i + 1, true
	}
	at := len(s.path)
	if at > 0 {
		s.path = append(s.path, '.')
	}
	s.path = append(s.path, '*')
	defer func() { s.path = s.path[:at] }()
	for {
		vh, end, ok := s.jvalue(d, i, mask, visit)
		if !ok {
			return 0, end, false
		}
		h = mix(h*0xff51afd7ed558ccd + vh)
		i = skipWS(d, end)
		if i < len(d) && d[i] == ']' {
			return h, i + 1, true
		}
		if i >= len(d) || d[i] != ',' {
			return 0, i, false
		}
		i = skipWS(d, i+1)
	}
}

// jstring reads the JSON string at d[i] == '"': its content, unescaped
// (into s.str when it has escapes), and the index after it.
func (s *signer) jstring(d []byte, i int) ([]byte, int, bool) {
	j, escaped := i+1, false
	for ; j < len(d); j++ {
		switch d[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			if !escaped {
				return d[i+1 : j], j + 1, true
			}
			var err error
			s.str, err = rrpair.AppendUnescaped(s.str[:0], d[i+1:j])
			return s.str, j + 1, err == nil
		}
	}
	return nil, j, false
}

// literalEnd is the index after the literal (a number, true, false,
// null) at d[i:]; i when there is none.
func literalEnd(d []byte, i int) int {
	end := i
	for end < len(d) && (d[end] >= '0' && d[end] <= '9' || d[end] >= 'a' && d[end] <= 'z' || d[end] == '-' || d[end] == '+' || d[end] == '.' || d[end] == 'E') {
		end++
	}
	return end
}

func skipWS(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}
