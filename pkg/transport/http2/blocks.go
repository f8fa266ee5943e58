package http2

import "encoding/binary"

// The encoded header blocks a client keeps: a replay sends the same few
// header lists again and again, and once the HPACK encoder's dynamic
// table holds their fields, encoding one gives the same bytes each time
// (indexes into a table that does not change). A block is kept when
// encoding it left the table as it was; it is valid while nothing has
// changed the table since (gen), so a cached block goes out exactly as the
// encoder would have written it.
const (
	// blockBudget bounds the bytes of the kept blocks and their keys, a
	// client's (a VU's): a few hundred lists of usual size.
	blockBudget = 64 << 10
	// blockMax bounds the blocks kept.
	blockMax = 256
)

// blockCache maps a header list (its key: each name and value with its
// length) to its encoded block, for one connection's encoder.
type blockCache struct {
	gen   uint64 // bumped by each change of the encoder's table
	key   []byte // the key of the list being encoded
	m     map[string]cachedBlock
	bytes int
}

type cachedBlock struct {
	gen   uint64
	block []byte
}

// changed says the encoder's table changed (or a new encoder took over):
// every kept block is stale.
func (b *blockCache) changed() {
	b.gen++
	if len(b.m) > 0 {
		clear(b.m)
		b.bytes = 0
	}
}

// lookup keys the list l and returns its kept block, if it is valid.
func (b *blockCache) lookup(l *fieldList) ([]byte, bool) {
	k := b.key[:0]
	for i := range l.fields {
		f := &l.fields[i]
		k = binary.AppendUvarint(k, uint64(len(f.name)))
		k = append(k, f.name...)
		k = binary.AppendUvarint(k, uint64(len(f.value)))
		k = append(k, f.value...)
	}
	b.key = k
	cb, ok := b.m[string(k)]
	if !ok || cb.gen != b.gen {
		return nil, false
	}
	return cb.block, true
}

// keep keeps block as the encoding of the list lookup keyed last, while
// the budget allows.
func (b *blockCache) keep(block []byte) {
	n := len(b.key) + len(block)
	if len(b.m) >= blockMax || b.bytes+n > blockBudget {
		return
	}
	if b.m == nil {
		b.m = make(map[string]cachedBlock)
	}
	b.m[string(b.key)] = cachedBlock{gen: b.gen, block: append([]byte(nil), block...)}
	b.bytes += n
}

// tableChange says whether the representation that begins with first
// changes the encoder's dynamic table (RFC 7541 §6): a literal with
// incremental indexing (01xxxxxx) or a table size update (001xxxxx). An
// indexed field (1xxxxxxx) and a literal not indexed (0000xxxx, 0001xxxx)
// leave it as it was.
func tableChange(first byte) bool {
	return first&0xc0 == 0x40 || first&0xe0 == 0x20
}
