package transform

// cmpState is a VU's scratch for MapLearned: the session's values as
// mappings (learned and fresh) and the mapped bytes.
type cmpState struct {
	maps []mapping
	buf  []byte
}

// MapLearned returns b, a recorded answer's body or header value, with
// what VU vu's session changed of the recording mapped as it changed it:
// each value a correlation learned (recorded → live) and each fresh value
// made (recorded → fresh) replaced, whole tokens only, as the requests
// had them replaced. ok is false, and b is to be used as it is, when
// nothing applied. The bytes are the VU's: valid until its next
// MapLearned. Call it on the VU's goroutine, after Observe (the answer to
// a request that created an id teaches the mapping of that very answer).
// It allocates nothing once the VU's buffers have grown.
//
// The comparison with the recorded answers (--compare body) calls it, so
// that a correlated replay is compared with the recording as the replay
// changed it: a live order id where the recording had its own.
func (c *Chain) MapLearned(vu int, b []byte) ([]byte, bool) {
	st, err := c.state(vu)
	if err != nil || len(b) == 0 {
		return nil, false
	}
	fr := &st.fresh
	if len(st.learn.maps) == 0 && len(fr.seen) == 0 {
		return nil, false
	}
	cs := &st.cmp
	cs.maps = append(cs.maps[:0], st.learn.maps...)
	for _, e := range fr.seen {
		cs.maps = append(cs.maps, mapping{step: anyStep, from: fr.arena[e.rec:e.val], to: fr.arena[e.val:e.end]})
	}
	for i := range cs.maps {
		cs.maps[i].step = anyStep
	}
	cs.buf = cs.buf[:0]
	return replaceTokens(&cs.buf, b, cs.maps, anyStep)
}

// anyStep is the step of mappings replaceTokens applies whatever step
// learned them.
const anyStep = -1
