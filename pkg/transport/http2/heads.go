package http2

import (
	"bytes"

	"golang.org/x/net/http2/hpack"
)

// headCache keeps the last answer's head that came whole in one HEADERS
// frame, with the fields the decoder gave for it, when the same bytes
// decode to the same fields again: a head that leaves the HPACK decoder's
// dynamic table as it was (as Go's server sends once its fields are
// indexed), while no other block is decoded; or one that reads nothing of
// the table (its indexes are all of the static table, and it has no table
// size update). A SUT sends the same head again and again (the same
// status, type and length; a date that changes once a second): its fields
// are handed to onField again, checked as a decoded head is, without
// decoding (and the strings the decoder makes for each literal).
//
// Such a head may still add its fields to the table (nginx's do, at every
// answer): the decoder has not seen the heads taken from here, so before
// it decodes another block it is fed the kept one again, as many times as
// it was taken, at most as many as it takes for its entries to fill the
// table (flush): the table is then what the SUT's is.
type headCache struct {
	valid  bool // block and fields hold
	record bool // the block being decoded may be kept: onField records its fields
	block  []byte
	fields []hpack.HeaderField
	adds   []int // the fields the block adds to the table, by their place
	added  int   // their size in the table (RFC 7541 §4.1)
	// pending counts the times the block was taken from here since the
	// decoder last saw it (while it adds to the table).
	pending int
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
	if h.added > 0 {
		h.pending = min(h.pending+1, ourTableSize/h.added+1)
	}
	return true
}

// start readies the cache for a block the decoder is about to decode
// (whole: in one frame, on the stream open): the decoder first catches up
// with the heads taken from here, and the kept head is dropped; the
// block's fields are recorded when it may be kept in its turn.
func (h *headCache) start(c *Client, frag []byte, whole bool) error {
	if err := h.flush(c); err != nil {
		return err
	}
	h.valid, h.record = false, false
	h.fields, h.adds = h.fields[:0], h.adds[:0]
	if whole && c.capture && len(frag) <= headMax {
		var static bool
		if h.adds, static = staticOnly(frag, h.adds); !static {
			h.adds = h.adds[:0]
		}
		h.record = static || !changesTable(frag)
	}
	return nil
}

// flush feeds the decoder the kept block as many times as it was taken
// from here (pending, already bounded by what the table holds), its
// fields dropped.
func (h *headCache) flush(c *Client) error {
	if h.pending == 0 {
		return nil
	}
	n, capture := h.pending, c.capture
	h.pending, h.record, c.capture = 0, false, false
	defer func() { c.capture = capture }()
	for range n {
		if _, err := c.dec.Write(h.block); err != nil {
			return err
		}
		if err := c.dec.Close(); err != nil {
			return err
		}
	}
	return nil
}

// keep keeps frag, decoded whole, and the fields recorded for it, when
// it may be kept.
func (h *headCache) keep(frag []byte) {
	if !h.record {
		return
	}
	h.record = false
	h.added = 0
	for _, i := range h.adds {
		if i >= len(h.fields) {
			return // not every field recorded: not kept
		}
		h.added += int(h.fields[i].Size())
	}
	h.block = append(h.block[:0], frag...)
	h.valid = true
}

// staticTable is the number of entries of HPACK's static table: an index
// past it is of the dynamic table.
const staticTable = 61

// staticOnly says whether block decodes to the same fields whatever the
// decoder's dynamic table holds: every index in it, of a field or of a
// literal's name, is of the static table, and it has no table size
// update. It appends to adds the places of the fields it adds to the
// table (literals with incremental indexing). A block that does not walk
// whole is not.
func staticOnly(b []byte, adds []int) ([]int, bool) {
	for i := 0; len(b) > 0; i++ {
		kind, idx, rest, ok := nextRep(b)
		switch {
		case !ok, kind == repSizeUpdate, idx > staticTable, kind == repIndexed && idx == 0:
			return adds, false
		case kind == repIncremental:
			adds = append(adds, i)
		}
		b = rest
	}
	return adds, true
}

// changesTable says whether decoding block would change the decoder's
// dynamic table (RFC 7541 §6): a literal with incremental indexing or a
// table size update; a block that does not walk whole says so too.
func changesTable(b []byte) bool {
	for len(b) > 0 {
		kind, _, rest, ok := nextRep(b)
		if !ok || kind == repSizeUpdate || kind == repIncremental {
			return true
		}
		b = rest
	}
	return false
}
