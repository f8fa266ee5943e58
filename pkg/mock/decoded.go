package mock

import (
	"bytes"
	"sync"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Speedscale records an answer's body decompressed (its tags say
// "decoded": "true") and keeps the Content-Encoding the host sent: sent
// as it is, a client that decodes gzip fails on it ("incorrect header
// check"). The mock sends such a body encoded as its header says, encoded
// once a pair and kept.

// decodedTag is the tag Speedscale writes beside a body it decompressed.
var decodedTag = []byte(`"decoded":"true"`)

// encodedBodies are the bodies of recorded answers encoded as their
// Content-Encoding says, by the pair's index in the file; a pair whose
// coding replay cannot write holds nil (sent as recorded, counted).
type encodedBodies struct {
	m sync.Map // int -> []byte
}

// needsEncoding reports whether body, recorded under the Content-Encoding
// enc, is not in that coding: its first bytes are not those the coding
// begins with (gzip, zstd), or, for a coding without such bytes, a
// Speedscale line says it decoded the body.
func needsEncoding(p *rrpair.Pair, enc, body []byte) bool {
	if len(enc) == 0 || len(body) == 0 {
		return false
	}
	// gzip and zstd begin with a magic number: a body with it is encoded
	// whatever a tag says, one without it is not. deflate and br carry no
	// sure sign: only Speedscale's tag tells.
	switch c := bytes.TrimSpace(enc); {
	case bytes.EqualFold(c, []byte("gzip")), bytes.EqualFold(c, []byte("x-gzip")):
		return !bytes.HasPrefix(body, []byte{0x1f, 0x8b})
	case bytes.EqualFold(c, []byte("zstd")):
		return !bytes.HasPrefix(body, []byte{0x28, 0xb5, 0x2f, 0xfd})
	}
	return bytes.Contains(p.Tags, decodedTag)
}

// body returns pair p's answer body encoded by enc, encoding it the first
// time; ok is false when replay cannot write that coding.
func (e *encodedBodies) body(p *rrpair.Pair, enc, body []byte) (out []byte, ok bool) {
	if v, found := e.m.Load(p.Index); found {
		b := v.([]byte)
		return b, b != nil
	}
	out, err := encode(string(enc), body)
	if err != nil {
		out = nil
	}
	e.m.Store(p.Index, out)
	return out, out != nil
}
