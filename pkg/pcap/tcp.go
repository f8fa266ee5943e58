package pcap

import (
	"net/netip"
	"slices"
	"time"
)

// connKey names a TCP connection: its two ends, the lesser first, so that
// both directions find it.
type connKey struct{ a, b netip.AddrPort }

// keyOf is the key of the connection a segment from src to dst belongs
// to, and the segment's direction in it: 0 from key.a, 1 from key.b.
func keyOf(src, dst netip.AddrPort) (connKey, int) {
	if src.Compare(dst) < 0 {
		return connKey{src, dst}, 0
	}
	return connKey{dst, src}, 1
}

// lateWindow is how long (capture time) packets of a closed connection
// are taken for late ones (retransmissions, the last ACKs) rather than
// the start of a connection the capture joined.
const lateWindow = int64(10 * time.Second)

// assembler holds the TCP connections of a capture and reassembles each
// direction of each. Used from one goroutine.
type assembler struct {
	opt    *Options
	out    *pairs
	conns  map[connKey]*conn
	closed map[connKey]int64 // connections closed, until when their packets are late ones
	// buffered counts the bytes held for all connections: segments out of
	// order and messages under way.
	buffered int64
	lastScan int64
	ids      int // connections numbered so far
	// tlsSessions are the master secrets of the TLS 1.2 sessions
	// decrypted, by "id:"+session ID and "ticket:"+ticket, for the
	// connections that resume them.
	tlsSessions map[string][]byte
}

func newAssembler(opt *Options, out *pairs) *assembler {
	return &assembler{opt: opt, out: out, conns: map[connKey]*conn{}, closed: map[connKey]int64{}}
}

// open opens the connection a segment with no connection begins, or
// returns nil when the segment begins none: a late one of a connection
// closed, or an ACK, FIN or RST of a connection seen carrying nothing.
func (a *assembler) open(key connKey, s *segment, syn bool) *conn {
	if until, ok := a.closed[key]; ok {
		if !syn && s.ts < until {
			return nil
		}
		delete(a.closed, key)
	}
	if !syn && len(s.payload) == 0 && s.cut == 0 {
		return nil // an ACK, FIN or RST of a connection seen carrying nothing
	}
	a.ids++
	c := newConn(a, key, a.ids, s.at)
	a.conns[key] = c
	return c
}

// segment takes one TCP segment, in capture order.
func (a *assembler) segment(s *segment) error {
	key, dir := keyOf(s.src, s.dst)
	c := a.conns[key]
	syn := s.flags&synFlag != 0
	if c != nil && syn && s.flags&ackFlag == 0 && c.half[dir].started && c.half[dir].isn != s.seq {
		c.finish(endIdle) // the ports were used again: a new connection
		a.remove(c)
		c = nil
	}
	if c == nil {
		if c = a.open(key, s, syn); c == nil {
			return a.out.err
		}
	}
	c.last = s.ts
	c.segment(dir, s)
	if c.closed {
		a.remove(c)
	}
	for a.buffered > a.opt.MaxBuffer && a.shed() {
	}
	return a.out.err
}

// remove forgets a closed connection, and takes its late packets for
// such a while.
func (a *assembler) remove(c *conn) {
	delete(a.conns, c.key)
	a.closed[c.key] = c.last + lateWindow
	a.buffered -= c.held
	c.held = 0
}

// shed frees the bytes of the connection that holds the most, when all of
// them hold more than --max-buffer: its holes are taken as lost and its
// messages under way given up, counted. False when nothing could be freed.
func (a *assembler) shed() bool {
	var big *conn
	for _, c := range a.conns {
		if big == nil || c.held > big.held {
			big = c
		}
	}
	if big == nil || big.held == 0 {
		return false
	}
	before := big.held
	big.shed()
	a.out.st.Dropped += before - big.held
	return big.held < before
}

// due says whether a scan for idle connections is due at capture time now.
func (a *assembler) due(now int64) bool {
	every := max(int64(a.opt.StreamTimeout)/8, int64(time.Second))
	if a.lastScan == 0 {
		a.lastScan = now
	}
	return now-a.lastScan >= every
}

// scan ends the connections idle longer than --stream-timeout at capture
// time now, takes as lost the holes waiting longer, and forgets closed
// connections whose late packets are no longer due.
func (a *assembler) scan(now int64) error {
	a.lastScan = now
	limit := now - int64(a.opt.StreamTimeout)
	for _, c := range a.conns {
		if c.last < limit {
			c.finish(endIdle)
			a.remove(c)
			continue
		}
		for d := range c.half {
			if h := &c.half[d]; len(h.pending) > 0 && h.pending[0].ts < limit {
				h.flushHoles("gap")
			}
		}
	}
	for k, until := range a.closed {
		if until < now {
			delete(a.closed, k)
		}
	}
	return a.out.err
}

// finish ends every connection still open at the end of the capture.
func (a *assembler) finish() error {
	cs := make([]*conn, 0, len(a.conns))
	for _, c := range a.conns {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(x, y *conn) int { return x.id - y.id })
	for _, c := range cs {
		c.finish(endCapture)
		a.remove(c)
	}
	return a.out.err
}

// endKind is why a direction of a connection ended.
type endKind int

const (
	endFIN     endKind = iota // the sender closed it
	endReset                  // an RST
	endIdle                   // idle past --stream-timeout (or its ports used again)
	endCapture                // the capture ended first
)

// held is a segment that came before the bytes ahead of it.
type held struct {
	seq  uint32
	data []byte // a copy
	cut  int
	ts   int64
	at   place
}

// half is one direction of a connection, reassembled: bytes go to the
// connection in sequence order, each once; what came early waits in
// pending; what the capture lost is told as a gap.
type half struct {
	c       *conn
	dir     int
	started bool
	isn     uint32 // the SYN's sequence number, when seen
	next    uint32 // the next byte due
	pending []held // in sequence order
	fin     bool
	finSeq  uint32
	ended   bool
	lastTS  int64
	lastAt  place
}

// after reports whether sequence number a comes after b (RFC 1982
// arithmetic: the numbers wrap).
func after(a, b uint32) bool { return int32(a-b) > 0 }

// begin starts the direction at sequence number seq.
func (h *half) begin(seq uint32) {
	h.started, h.next = true, seq
}

// add takes a segment of this direction, in capture order.
func (h *half) add(s *segment) {
	if h.ended {
		return
	}
	seq, data, cut := s.seq, s.payload, s.cut
	if s.flags&finFlag != 0 && !h.fin {
		h.fin, h.finSeq = true, seq+uint32(len(data)+cut)
	}
	h.lastTS, h.lastAt = s.ts, s.at
	fresh := true // the data starts where the segment does
	if d := int64(int32(seq - h.next)); d < 0 {
		n := len(data) + cut
		if -d >= int64(n) {
			if n > 0 {
				h.c.a.out.st.Retransmitted++
			}
			h.tryEnd()
			return
		}
		skip := int(-d)
		if skip <= len(data) {
			data = data[skip:]
		} else {
			cut -= skip - len(data)
			data = nil
		}
		seq, fresh = h.next, false
	}
	if seq == h.next {
		h.deliver(data, cut, fresh, s.ts, s.at)
		h.drain()
	} else if len(data)+cut > 0 {
		h.hold(held{seq: seq, data: append([]byte(nil), data...), cut: cut, ts: s.ts, at: s.at})
	}
	h.tryEnd()
}

// hold keeps a segment that came early, in sequence order; a repeat of
// one held is dropped.
func (h *half) hold(s held) {
	i, found := slices.BinarySearchFunc(h.pending, s.seq, func(p held, seq uint32) int { return int(int32(p.seq - seq)) })
	if found && len(h.pending[i].data)+h.pending[i].cut >= len(s.data)+s.cut {
		h.c.a.out.st.Retransmitted++
		return
	}
	if found {
		h.c.hold(-len(h.pending[i].data))
		h.pending[i] = s
	} else {
		h.pending = slices.Insert(h.pending, i, s)
	}
	h.c.hold(len(s.data))
}

// deliver passes bytes on, and the bytes after them that the capture did
// not keep (cut) as a gap.
func (h *half) deliver(data []byte, cut int, fresh bool, ts int64, at place) {
	h.next += uint32(len(data))
	if len(data) > 0 {
		h.c.data(h.dir, data, fresh, ts, at)
	}
	if cut > 0 {
		h.next += uint32(cut)
		h.c.gap(h.dir, cut, "snaplen", ts, at)
	}
}

// drain passes on the held segments that are now due.
func (h *half) drain() {
	for len(h.pending) > 0 && !after(h.pending[0].seq, h.next) {
		p := h.pending[0]
		h.pending = h.pending[1:]
		h.c.hold(-len(p.data))
		data, cut, fresh := p.data, p.cut, true
		if d := int(h.next - p.seq); d > 0 {
			if d >= len(data)+cut {
				h.c.a.out.st.Retransmitted++
				continue
			}
			if d <= len(data) {
				data = data[d:]
			} else {
				cut -= d - len(data)
				data = nil
			}
			fresh = false
		}
		h.deliver(data, cut, fresh, p.ts, p.at)
	}
	if len(h.pending) == 0 {
		h.pending = nil
	}
}

// acked takes the peer's acknowledgment: bytes it acknowledged that the
// capture holds not, while later ones wait, were lost by the capture.
func (h *half) acked(ack uint32) {
	for len(h.pending) > 0 && after(ack, h.next) {
		to := h.pending[0].seq
		if after(to, ack) {
			to = ack
		}
		h.gapTo(to, "gap")
	}
}

// gapTo takes the bytes up to seq as lost, and passes on what follows.
func (h *half) gapTo(seq uint32, kind string) {
	ts, at := h.lastTS, h.lastAt
	if len(h.pending) > 0 {
		ts, at = h.pending[0].ts, h.pending[0].at
	}
	if n := int(seq - h.next); n > 0 {
		h.next = seq
		h.c.gap(h.dir, n, kind, ts, at)
	}
	h.drain()
}

// flushHoles takes every hole before the held segments as lost.
func (h *half) flushHoles(kind string) {
	for len(h.pending) > 0 {
		h.gapTo(h.pending[0].seq, kind)
	}
	h.tryEnd()
}

// tryEnd ends the direction once its FIN is due.
func (h *half) tryEnd() {
	if h.fin && !h.ended && h.next == h.finSeq {
		h.end(endFIN)
	}
}

// end ends the direction: holes taken as lost, the bytes held passed on,
// then the end told.
func (h *half) end(why endKind) {
	if h.ended {
		return
	}
	for len(h.pending) > 0 {
		h.gapTo(h.pending[0].seq, "gap")
	}
	if h.fin && after(h.finSeq, h.next) {
		h.gapTo(h.finSeq, "gap")
	}
	h.ended = true
	if h.started {
		h.c.end(h.dir, why, h.lastTS)
	}
}
