package mock

import (
	"fmt"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Signature lines (a Speedscale snapshot's reaction file, read with
// rrpair.Options.Signatures) are pairs whose request is the signature's.
// Their answers to one signature are given in the order of their
// instance, not of the file: a snapshot may list instance 2 before 1.

// sigUnread says why a signature line cannot be answered with: its
// signature holds a key the request was not built from, and the answer
// depends on it ("" when every key was read).
func sigUnread(p *rrpair.Pair) string {
	if !p.FromSignature || p.UnreadKey == nil {
		return ""
	}
	return fmt.Sprintf("signature key %q is not read by replay mock (it matches on method, host, url, query and JSON body): not served", p.UnreadKey)
}

// instanceRanks are the sort ranks of the pairs of f: a signature line's
// instance, 0 for a recorded request. Nil when f has no signature line
// (all ranks 0: file order).
type instanceRanks []uint32

// note records the rank of pair i.
func (r *instanceRanks) note(n, i int, p *rrpair.Pair) {
	if !p.FromSignature || p.Instance == 0 {
		return
	}
	if *r == nil {
		*r = make([]uint32, n)
	}
	(*r)[i] = uint32(p.Instance)
}

// less orders two pairs of one signature: by rank, then by file order.
func (r instanceRanks) less(a, b uint32) bool {
	if r != nil && r[a] != r[b] {
		return r[a] < r[b]
	}
	return a < b
}
