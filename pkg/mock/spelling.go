package mock

import (
	"bytes"
	"net/textproto"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// A file may spell one answer field in several ways: a recorder that
// took an HTTP/2 client's answer stored its names Go-style ("Etag") or
// lower-case, while the HTTP/1.1 ones kept the upstream's ("ETag"). The
// mock then gives every answer the one spelling the upstream most likely
// sent, so that a client never sees it alternate: a spelling neither
// Go's canonical form nor all lower case (what only an upstream writes),
// else the canonical form.

// spellingSet collects the spellings of each answer field name, by its
// lower-case form.
type spellingSet map[string]map[string]struct{}

func (s spellingSet) note(hs []rrpair.Header) {
	for _, h := range hs {
		lower := string(bytes.ToLower(h.Name))
		if s[lower] == nil {
			s[lower] = map[string]struct{}{}
		}
		s[lower][string(h.Name)] = struct{}{}
	}
}

// choose is the spelling to give for each name spelled several ways.
func (s spellingSet) choose() map[string][]byte {
	out := map[string][]byte{}
	for lower, spellings := range s {
		if len(spellings) < 2 {
			continue
		}
		canonical := textproto.CanonicalMIMEHeaderKey(lower)
		best := canonical
		for sp := range spellings {
			if sp != canonical && sp != lower && (best == canonical || sp < best) {
				best = sp
			}
		}
		out[lower] = []byte(best)
	}
	return out
}

// respell gives hs the file's one spelling of each name (lower is a
// buffer).
func (ix *index) respell(hs []rrpair.Header, lower []byte) []byte {
	if len(ix.spell) == 0 {
		return lower
	}
	for i := range hs {
		lower = append(lower[:0], hs[i].Name...)
		for j, c := range lower {
			if c >= 'A' && c <= 'Z' {
				lower[j] = c + 'a' - 'A'
			}
		}
		if sp, ok := ix.spell[string(lower)]; ok {
			hs[i].Name = sp
		}
	}
	return lower
}
