package rrpair

import (
	"math"
	"unsafe"
)

// The body cache. A request body recorded as JSON text with escapes (a JSON
// document in "body", its quotes written \") is unescaped into a VU's buffer
// at every decode: two passes over the body, about a tenth of the CPU of a
// 2 KiB POST. A body without escapes costs nothing, as it is used where it
// lies in the mapping. So Open unescapes each escaped request body once,
// into one read-only block shared by every cursor, when they fit in
// Options.BodyCache bytes; a file whose bodies do not fit keeps unescaping
// at each decode, as it did. What goes on the wire is the same byte for
// byte: the cached body is what AppendUnescaped makes of the same string.

// cachedBody is a request body with escapes, unescaped once at Open.
type cachedBody struct {
	at, end uint32 // where its string lies in the line, quotes included
	body    []byte // unescaped; capped, so that an append copies it
}

// bodySpan is where an escaped request body lies: the pair, and the
// string's place in its line.
type bodySpan struct {
	pair    uint32
	at, end uint32
}

// BodyCache says what Open did with the request bodies that hold JSON
// escapes: unescaped once and kept (Cached), or left to be unescaped at
// each decode because they did not fit in Options.BodyCache.
type BodyCache struct {
	// Escaped is how many kept pairs have a request body with escapes,
	// Bytes the memory they take unescaped with their index.
	Escaped int
	Bytes   int64
	// Limit is Options.BodyCache; Cached whether the bodies were kept.
	Limit  int64
	Cached bool
}

// BodyCache says whether the escaped request bodies were decoded once at
// Open, and what they cost.
func (f *File) BodyCache() BodyCache { return f.bodyCache }

// noteBody records the escaped request body of the pair just kept, found
// by the validating decoder, for cacheBodies.
func (b *indexBuild) noteBody(pair int, at, end int) {
	if end == 0 || end > math.MaxUint32 || pair > math.MaxUint32 {
		return // no escapes; or past what an index entry holds: not cached
	}
	b.bodies = append(b.bodies, bodySpan{pair: uint32(pair), at: uint32(at), end: uint32(end)})
	b.bodyBytes += int64(end - at - 2)
}

// cacheBodies unescapes the escaped request bodies spans names into one
// block, when they fit in limit bytes with their index (a cachedBody each,
// and 4 bytes a pair).
func (f *File) cacheBodies(spans []bodySpan, bodyBytes, limit int64) {
	need := bodyBytes + int64(len(spans))*int64(unsafe.Sizeof(cachedBody{})) + 4*int64(len(f.pairs))
	f.bodyCache = BodyCache{Escaped: len(spans), Bytes: need, Limit: limit}
	if len(spans) == 0 || need > limit {
		if len(spans) == 0 {
			f.bodyCache.Bytes = 0
		}
		return
	}
	// An unescaped string is never longer than its escaped form, so the
	// block never grows and the bodies cut from it stay in place.
	block := make([]byte, 0, bodyBytes)
	bodies := make([]cachedBody, len(spans))
	bodyOf := make([]uint32, len(f.pairs))
	for k, sp := range spans {
		line := f.line(int(sp.pair))
		start := len(block)
		var err error
		if block, err = AppendUnescaped(block, line[sp.at+1:sp.end-1]); err != nil || cap(block) != int(bodyBytes) {
			return // cannot happen in a validated file: keep decoding at each request
		}
		bodies[k] = cachedBody{at: sp.at, end: sp.end, body: block[start:len(block):len(block)]}
		bodyOf[sp.pair] = uint32(k + 1)
	}
	f.bodies, f.bodyOf = bodies, bodyOf
	f.bodyCache.Cached = true
}

// cachedBodyOf is pair i's request body unescaped at Open, or nil.
func (f *File) cachedBodyOf(i int) *cachedBody {
	if f.bodyOf == nil {
		return nil
	}
	if k := f.bodyOf[i]; k != 0 {
		return &f.bodies[k-1]
	}
	return nil
}
