package http2

import (
	"bytes"

	"golang.org/x/net/http2/hpack"
)

// headCache keeps the last answer's head that came whole in one HEADERS
// frame and left the HPACK decoder's table as it was, with the fields the
// decoder gave for it. A SUT sends the same head again and again (the
// same status, type and length; a date that changes once a second): while
// the table stays as it was, the same bytes decode to the same fields, so
// they are handed to onField again, checked as a decoded head is, without
// decoding (and the strings the decoder makes for each literal).
type headCache struct {
	valid  bool // block and fields hold, and the table has not changed since
	record bool // the block being decoded may be kept: onField records its fields
	block  []byte
	fields []hpack.HeaderField
}

// headMax bounds the block kept.
const headMax = 4 << 10

// replay hands the kept fields to onField when frag is the kept block,
// and says so.
func (h *headCache) replay(c *Client, frag []byte) bool {
	if !h.valid || !bytes.Equal(frag, h.block) {
		return false
	}
	for _, f := range h.fields {
		c.onField(f)
	}
	return true
}

// keep keeps frag, decoded whole, and the fields recorded for it, when
// it may be kept.
func (h *headCache) keep(frag []byte) {
	if !h.record || len(frag) > headMax {
		h.record = false
		return
	}
	h.block = append(h.block[:0], frag...)
	h.valid, h.record = true, false
}

// changesTable says whether decoding block would change the decoder's
// dynamic table (RFC 7541 §6): a literal with incremental indexing or a
// table size update; a block that does not walk whole says so too.
func changesTable(b []byte) bool {
	for len(b) > 0 {
		c := b[0]
		var ok bool
		switch {
		case c&0x80 != 0: // indexed field
			_, b, ok = hpackInt(7, b)
		case c&0xe0 == 0x20, c&0xc0 == 0x40: // table size update, incremental indexing
			return true
		default: // literal without indexing, or never indexed
			b, ok = literal(4, b)
		}
		if !ok {
			return true
		}
	}
	return false
}
