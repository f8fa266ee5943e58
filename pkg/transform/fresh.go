package transform

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// FreshSpec makes the named values fresh on every replay: each recorded
// value is replaced by a new one of the same shape, so that a SUT that
// deduplicates (idempotency keys, request IDs, usernames) treats every
// replayed request as new.
//
//   - fresh:
//     headers: [Idempotency-Key, X-Request-Id]
//     json: [order.id, items.*.ref]
//     query: [request_id]
//
// Within one iteration (a session) the same recorded value gets the same
// fresh value wherever it appears, so that the session stays consistent.
// Fresh values never repeat across the VUs and shards of a run (as long as
// the shape has room: see freshShape), and are derived from --seed.
type FreshSpec struct {
	JSON    []string `yaml:"json"`
	Query   []string `yaml:"query"`
	Headers []string `yaml:"headers"`
}

// maxFresh bounds the distinct values one VU remembers in one iteration;
// beyond, further values are sent as recorded and counted as failed.
const maxFresh = 256

type fresh struct {
	spec    *FreshSpec // for renew
	paths   []jsonPath
	query   [][]byte
	headers [][]byte
	seed    uint64
	keys    [2]uint64 // the permutation's keys, from seed
	shard   uint64
	shards  uint64
	stride  uint64 // slots (VU of a shard) of the run
}

func newFresh(s *FreshSpec, opt Options) (*fresh, error) {
	if len(s.JSON)+len(s.Query)+len(s.Headers) == 0 {
		return nil, errors.New("nothing to make fresh: name json paths, query parameters or headers")
	}
	f := &fresh{spec: s, query: toBytes(s.Query), headers: toBytes(s.Headers), seed: opt.Seed,
		shard: uint64(max(opt.Shard, 0)), shards: uint64(max(opt.Shards, 1))}
	if f.shard >= f.shards {
		return nil, fmt.Errorf("shard %d of %d", opt.Shard, opt.Shards)
	}
	// Each shard has at most ceil(RunVUs / Shards) VUs (as the run
	// divides them): VU v of shard i is slot v×Shards + i of the run,
	// below stride. A value's number is made × stride + slot.
	perShard := max((uint64(max(opt.RunVUs, 1))+f.shards-1)/f.shards, uint64(max(opt.VUs, 1)))
	f.stride = perShard * f.shards
	f.keys = [2]uint64{splitmix64(opt.Seed), splitmix64(opt.Seed ^ 0x5bd1e9955bd1e995)}
	for _, h := range s.Headers {
		if !rrpair.ValidHeaderName(h) {
			return nil, fmt.Errorf("headers: %q is not a header name", h)
		}
	}
	var err error
	if f.paths, err = parseJSONPaths(s.JSON, "id or items.*.ref"); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *fresh) name() string { return fmt.Sprintf("fresh (seed %d)", f.seed) }

// renew derives the values of another run: its seed, VUs and shards.
func (f *fresh) renew(opt Options) (step, error) { return newFresh(f.spec, opt) }

// vuFresh is what one VU keeps for fresh values: its count of values made
// (never reset: it keeps them unique), and the iteration's recorded →
// fresh map, both sides in arena.
type vuFresh struct {
	made  uint64
	arena []byte
	seen  []freshEntry
	// The body walk's state.
	f     *fresh
	c     *call
	spans []span
}

// freshEntry is one remembered value: arena[rec:val] recorded,
// arena[val:end] fresh.
type freshEntry struct {
	rec, val, end int
	number        bool
}

// reset forgets the iteration's values (Chain.Begin).
func (s *vuFresh) reset() {
	s.arena, s.seen = s.arena[:0], s.seen[:0]
}

func (f *fresh) apply(c *call) {
	req := c.req
	st := &c.st.fresh
	for i := range req.Headers {
		h := &req.Headers[i]
		if containsFold(f.headers, h.Name) {
			if v, ok := f.value(c, h.Value, false); ok {
				h.Value = v
			}
		}
	}
	if len(f.query) > 0 {
		if uri, ok := f.rewriteQuery(c); ok {
			req.URI = uri
			c.changed = true
		}
	}
	if len(f.paths) > 0 && isJSON(req.Body) {
		st.f, st.c, st.spans = f, c, st.spans[:0]
		if c.st.walker.walk(req.Body, st) && len(st.spans) > 0 {
			out := c.buf(2)
			*out = splice((*out)[:0], req.Body, st.spans)
			req.Body = *out
		}
		st.f, st.c = nil, nil
	}
}

// rewriteQuery replaces the named query values, decoded for the shape and
// encoded again as the recorded value was.
func (f *fresh) rewriteQuery(c *call) ([]byte, bool) {
	out, tmp := c.buf(3), c.buf(4)
	return rewriteQuery(out, c.req.URI, func(name, value []byte) bool {
		if !containsExact(f.query, name) {
			return false
		}
		raw, escaped := UnescapeQuery((*tmp)[:0], value)
		if escaped {
			*tmp = raw
		}
		v, ok := f.value(c, raw, false)
		if !ok {
			return false
		}
		*out = reescape(*out, v, value)
		return true
	})
}

// reescape appends v, the fresh value of the raw query value orig once
// decoded, to dst, encoded as orig was: a fresh value changes letters and
// digits only, one for one, so each %XX escape and '+' of orig stands for
// a byte v keeps, and is written as it was.
func reescape(dst, v, orig []byte) []byte {
	for i, j := 0, 0; i < len(orig) && j < len(v); j++ {
		switch c := orig[i]; {
		case c == '%' && i+2 < len(orig) && isHex(orig[i+1]) && isHex(orig[i+2]):
			dst = append(dst, orig[i:i+3]...)
			i += 3
		case c == '+':
			dst = append(dst, '+')
			i++
		default:
			dst = append(dst, v[j])
			i++
		}
	}
	return dst
}

// visit replaces a named JSON value: a string without escapes, or a
// number (whose digits alone change).
func (s *vuFresh) visit(w *jsonWalker, start, end int) bool {
	if !atAny(s.f.paths, w) {
		return true
	}
	v := w.data[start:end]
	number := v[0] != '"'
	switch {
	case !number && bytes.IndexByte(v, '\\') >= 0, number && !jsonNumber(v):
		s.c.failed = true // an escaped string, true, false or null: left as recorded
		return true
	case !number:
		v, start, end = v[1:len(v)-1], start+1, end-1
	}
	if nv, ok := s.f.value(s.c, v, number); ok {
		s.spans = append(s.spans, span{start: start, end: end, repl: nv})
	}
	return true
}

// value is the fresh value of the recorded value rec on the call's VU:
// the one it got earlier in the iteration, or a new one. ok is false, and
// the call failed, when rec has nothing to change or the VU's memory of
// the iteration is full; the call changed when ok.
func (f *fresh) value(c *call, rec []byte, number bool) ([]byte, bool) {
	// Only an exponent's letter makes a number's shape differ from the
	// string's: 1200457 in a body and "1200457" in a query are one value.
	number = number && bytes.ContainsAny(rec, "eE")
	st := &c.st.fresh
	for _, e := range st.seen {
		if e.number == number && bytes.Equal(st.arena[e.rec:e.val], rec) {
			c.changed = true
			return st.arena[e.val:e.end], true
		}
	}
	if len(st.seen) == maxFresh {
		c.failed = true
		return nil, false
	}
	e := freshEntry{rec: len(st.arena), number: number}
	st.arena = append(st.arena, rec...)
	e.val = len(st.arena)
	st.arena = append(st.arena, rec...)
	e.end = len(st.arena)
	u := st.made*f.stride + uint64(c.st.vu)*f.shards + f.shard
	sh := newFreshShape(rec, number)
	ok, room := sh.fill(st.arena[e.val:e.end], u, &f.keys)
	if !ok {
		st.arena = st.arena[:e.rec]
		c.failed = true
		return nil, false
	}
	st.made++
	if !room {
		c.failed = true // the shape has fewer values than the run made: they repeat
	}
	st.seen = append(st.seen, e)
	c.changed = true
	return st.arena[e.val:e.end], true
}

// Kinds of shapes.
const (
	shapeMixed = iota // each letter and digit within its class
	shapeHex          // hex digits, of one case
	shapeUUID         // 8-4-4-4-12 hex: version and variant kept
)

// freshShape is what may change in a recorded value, position by position.
// Letters and digits change within their class (a-z, A-Z, 0-9; the first
// digit of a run of digits stays non-zero when it was, so a 12-digit
// number stays 12 digits); every other byte is kept. Also kept: a type
// prefix (letters then '-' or '_' at the start: "cus_", "o-") and an
// e-mail's "@domain". A hex string (hex digits of one case, a letter among
// them) stays hex of that case; a UUID stays a UUID with its version and
// variant. In a JSON number only digits change.
type freshShape struct {
	v      []byte
	lo, hi int // v[lo:hi] may change
	kind   int
	upper  bool // hex letters are upper-case
	number bool
}

func newFreshShape(v []byte, number bool) freshShape {
	s := freshShape{v: v, hi: len(v), number: number}
	if number {
		return s
	}
	if !isUUID(v) { // a UUID's first group may look like a prefix: "deadbeef-"
		s.lo = typePrefix(v)
	}
	if at := bytes.IndexByte(v[s.lo:], '@'); at > 0 {
		s.hi = s.lo + at
	}
	body := v[s.lo:s.hi]
	hex, lower, upper, letters := hexLetters(body)
	switch {
	case hex && isUUID(body) && !(lower && upper):
		s.kind, s.upper = shapeUUID, upper
	case hex && letters && !(lower && upper):
		s.kind, s.upper = shapeHex, upper
	}
	return s
}

// hexLetters tells whether body is all hex digits and dashes, and whether
// it has lower-case, upper-case or any hex letters.
func hexLetters(body []byte) (hex, lower, upper, letters bool) {
	hex = true
	for _, c := range body {
		switch {
		case c >= 'a' && c <= 'f':
			lower, letters = true, true
		case c >= 'A' && c <= 'F':
			upper, letters = true, true
		case c >= '0' && c <= '9', c == '-':
		default:
			hex = false
		}
	}
	return hex, lower, upper, letters
}

// typePrefix is the length of a type prefix of v: letters then '-' or
// '_', followed by more.
func typePrefix(v []byte) int {
	for i, c := range v {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case (c == '-' || c == '_') && i > 0 && i+1 < len(v):
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

func isUUID(b []byte) bool {
	if len(b) != 36 {
		return false
	}
	for i, c := range b {
		if dash := i == 8 || i == 13 || i == 18 || i == 23; dash != (c == '-') {
			return false
		}
	}
	return true
}

// radix is how many values position i can take (1: kept), and digit
// writes the d-th of them.
func (s *freshShape) radix(i int) uint64 {
	if i < s.lo || i >= s.hi {
		return 1
	}
	c := s.v[i]
	switch s.kind {
	case shapeUUID:
		return uuidRadix(i-s.lo, c)
	case shapeHex:
		if isHex(c) {
			return 16
		}
		return 1
	}
	return s.plainRadix(i, c)
}

// uuidRadix is the radix of a UUID's byte c at pos: dashes and the version
// stay, the variant keeps its two bits, the rest are hex digits.
func uuidRadix(pos int, c byte) uint64 {
	switch pos {
	case 8, 13, 18, 23, 14: // dashes, the version
		return 1
	case 19: // the variant: RFC 9562's 10xx keeps its two bits
		if n := unhex(c); n >= 8 && n <= 11 {
			return 4
		}
		return 1
	}
	return 16
}

// plainRadix is the radix of byte c at i of a value neither UUID nor hex:
// a number's leading digit stays non-zero, digits are decimal, letters
// (of a value that is not a JSON number) are alphabetic.
func (s *freshShape) plainRadix(i int, c byte) uint64 {
	switch {
	case c >= '1' && c <= '9' && (i == s.lo || !isDigit(s.v[i-1])):
		return 9
	case isDigit(c):
		return 10
	case s.number:
		return 1
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return 26
	}
	return 1
}

func (s *freshShape) digit(i int, d uint64) byte {
	c := s.v[i]
	switch s.kind {
	case shapeUUID, shapeHex:
		if s.kind == shapeUUID && i-s.lo == 19 {
			d += 8
		}
		if d < 10 {
			return '0' + byte(d)
		}
		if s.upper {
			return 'A' + byte(d-10)
		}
		return 'a' + byte(d-10)
	}
	switch {
	case c >= '1' && c <= '9' && (i == s.lo || !isDigit(s.v[i-1])):
		return '1' + byte(d)
	case isDigit(c):
		return '0' + byte(d)
	case c >= 'a' && c <= 'z':
		return 'a' + byte(d)
	}
	return 'A' + byte(d)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// fill writes the fresh value for the unique number u into dst (a copy of
// the recorded value). Distinct u give distinct values while u is below
// the number of values the shape has (room); ok is false when the shape
// has only one (nothing to change).
//
// How: the shape's values are numbered 0..N-1 (its positions as a
// mixed-radix number, the last the least significant). u goes through a
// keyed permutation of that range (a bijective mixer on the smallest
// power of two ≥ N, walking the cycle until it falls below N), and the
// result is written as that number. A shape of 2^64 values or more (a
// UUID, 13 or more characters) writes the permuted u into its last
// positions and fills the others from the seed and u.
func (s *freshShape) fill(dst []byte, u uint64, keys *[2]uint64) (ok, room bool) {
	n, big := uint64(1), false
	for i := s.lo; i < s.hi && !big; i++ {
		var of uint64
		of, n = bits.Mul64(n, s.radix(i))
		big = of != 0
	}
	var x uint64
	switch {
	case big:
		x, room = permute(u, 64, keys), true
	case n == 1:
		return false, false
	default:
		width := uint(bits.Len64(n - 1))
		room = u < n
		x = u % n
		for {
			x = permute(x, width, keys)
			if x < n {
				break
			}
		}
	}
	filler, encoding, capacity := splitmix64(u^keys[1]), true, uint64(1)
	for i := s.hi - 1; i >= s.lo; i-- {
		r := s.radix(i)
		if r == 1 {
			continue
		}
		var d uint64
		if encoding {
			x, d = divmod(x, r)
			var of uint64
			of, capacity = bits.Mul64(capacity, r)
			encoding = !big || of == 0
		} else {
			_, d = divmod(filler, r)
			filler = splitmix64(filler)
		}
		dst[i] = s.digit(i, d)
	}
	return true, room
}

// divmod is x / r and x % r, by shift and mask for a power of two (hex
// positions): a division costs several times more.
func divmod(x, r uint64) (q, m uint64) {
	if r&(r-1) == 0 {
		return x >> bits.TrailingZeros64(r), x & (r - 1)
	}
	return x / r, x % r
}

// permute is a bijection of [0, 2^width) keyed by keys: two rounds of
// splitmix64's finalizer (xor-shifts and odd multipliers, each invertible
// modulo 2^width), scaled to width bits.
func permute(x uint64, width uint, keys *[2]uint64) uint64 {
	mask := ^uint64(0) >> (64 - width)
	s1, s2, s3 := max(width*30/64, 1), max(width*27/64, 1), max(width*31/64, 1)
	for _, k := range keys {
		x = (x + k) & mask
		x ^= x >> s1
		x = (x * 0xbf58476d1ce4e5b9) & mask
		x ^= x >> s2
		x = (x * 0x94d049bb133111eb) & mask
		x ^= x >> s3
	}
	return x
}

// splitmix64 is the finalizer of SplitMix64, a bijective 64-bit mixer.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
