package pcap

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/pkg/rrpair"
	"golang.org/x/net/http2/hpack"
)

// HTTP/2 frame types and flags (RFC 9113 §6).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20

	settingHeaderTableSize = 0x1
)

// h2side reads the frames of one direction of an HTTP/2 connection and
// decodes its header blocks with its own HPACK decoder, from the
// connection's start: every block, even of a stream not kept, so that the
// dynamic table stays in step.
type h2side struct {
	h       *h2conn
	client  bool
	preface int    // bytes of the client preface still to pass over
	buf     []byte // a frame under way
	bufTS   int64
	bufAt   place
	dec     *hpack.Decoder
	// The header block under way (HEADERS or PUSH_PROMISE, then
	// CONTINUATION frames).
	block     []byte
	inBlock   bool
	blockID   uint32
	blockEnd  bool // END_STREAM on its HEADERS
	blockPush bool
	blockTS   int64
	blockAt   place
	// lost says a loss took bytes of this side: its frames can no longer
	// be found, nor its header blocks decoded.
	lost bool
}

// h2stream is one stream: a request and its answer.
type h2stream struct {
	id      uint32
	rec     rrpair.Record
	x       exchange
	reqDone bool
	resHead bool // the final answer's head came
	resDone bool
	grpc    bool
	proto   string // "HTTP/2"; "HTTP/1.1" for the request that upgraded to h2c
	held    int
}

// h2conn reads an HTTP/2 connection (cleartext: prior knowledge or
// Upgrade: h2c): each stream a pair.
type h2conn struct {
	c       *conn
	side    [2]h2side // the client's, the server's
	streams map[uint32]*h2stream
}

func newH2(c *conn) *h2conn {
	h := &h2conn{c: c, streams: map[uint32]*h2stream{}}
	for i := range h.side {
		h.side[i] = h2side{h: h, client: i == 0, dec: hpack.NewDecoder(4096, nil)}
	}
	h.side[0].preface = len(preface)
	return h
}

func (h *h2conn) sideOf(client bool) *h2side {
	if client {
		return &h.side[0]
	}
	return &h.side[1]
}

func (h *h2conn) data(client bool, b []byte, ts int64, at place) { h.sideOf(client).data(b, ts, at) }

func (h *h2conn) gap(client bool, n int, kind string, at place) {
	s := h.sideOf(client)
	s.lose(kind, lostBytes(n, kind, at), at)
}

func (h *h2conn) end(bool, endKind) {}

// data takes bytes of this side in order.
func (s *h2side) data(b []byte, ts int64, at place) {
	if s.lost {
		return
	}
	if s.preface > 0 {
		n := min(s.preface, len(b))
		from := len(preface) - s.preface
		if string(b[:n]) != preface[from:from+n] {
			s.lose("bad-message", "the client's bytes are not the HTTP/2 preface", at)
			return
		}
		s.preface -= n
		b = b[n:]
	}
	if len(b) == 0 {
		return
	}
	first := ts
	if len(s.buf) > 0 {
		s.keep(b)
		b, first = s.buf, s.bufTS
	}
	for len(b) >= 9 && !s.lost {
		n := 9 + (int(b[0])<<16 | int(b[1])<<8 | int(b[2]))
		if len(b) < n {
			break
		}
		s.frame(b[3], b[4], binary.BigEndian.Uint32(b[5:9])&0x7fffffff, b[9:n], first, at)
		b, first = b[n:], ts
	}
	if s.lost {
		return
	}
	// Keep what is left of a frame under way.
	if len(s.buf) > 0 {
		rest := len(b)
		copy(s.buf, b)
		s.c().hold(rest - len(s.buf))
		s.buf = s.buf[:rest]
		if rest > 0 {
			s.bufTS = first
		}
		return
	}
	if len(b) > 0 {
		s.bufTS, s.bufAt = ts, at
		s.keep(b)
	}
}

func (s *h2side) c() *conn { return s.h.c }

// keep appends b to the frame under way, counted as held.
func (s *h2side) keep(b []byte) {
	s.buf = append(s.buf, b...)
	s.c().hold(len(b))
}

// blockStart takes a HEADERS or PUSH_PROMISE frame: the start of a header
// block, read once it ends.
func (s *h2side) blockStart(typ, flags byte, id uint32, p []byte, ts int64, at place) {
	p, ok := unpad(flags, p)
	if typ == frameHeaders && flags&flagPriority != 0 && len(p) >= 5 {
		p = p[5:]
	} else if typ == framePushPromise && len(p) >= 4 {
		p = p[4:]
	}
	if !ok {
		s.lose("bad-message", "a padded frame shorter than its padding", at)
		return
	}
	s.block = append(s.block[:0], p...)
	s.inBlock, s.blockID, s.blockEnd, s.blockPush = true, id, flags&flagEndStream != 0, typ == framePushPromise
	s.blockTS, s.blockAt = ts, at
	if flags&flagEndHeaders != 0 {
		s.headers()
	}
}

// continuation takes a CONTINUATION frame of the header block under way.
func (s *h2side) continuation(flags byte, id uint32, p []byte, at place) {
	if !s.inBlock || id != s.blockID {
		s.lose("bad-message", "a CONTINUATION frame of no header block", at)
		return
	}
	s.block = append(s.block, p...)
	if flags&flagEndHeaders != 0 {
		s.headers()
	}
}

// frame takes one whole frame.
func (s *h2side) frame(typ, flags byte, id uint32, p []byte, ts int64, at place) {
	if s.inBlock && typ != frameContinuation {
		s.lose("bad-message", "a header block not followed by its CONTINUATION", at)
		return
	}
	switch typ {
	case frameData:
		p, ok := unpad(flags, p)
		if st := s.h.streams[id]; st != nil && ok {
			s.h.body(st, s.client, p, flags&flagEndStream != 0, ts)
		}
	case frameHeaders, framePushPromise:
		s.blockStart(typ, flags, id, p, ts, at)
	case frameContinuation:
		s.continuation(flags, id, p, at)
	case frameRSTStream:
		if st := s.h.streams[id]; st != nil {
			s.h.reset(st, s.client, p)
		}
	case frameSettings:
		if flags&flagAck == 0 {
			s.settings(p)
		}
	}
}

// unpad strips a frame's padding; false when it does not fit.
func unpad(flags byte, p []byte) ([]byte, bool) {
	if flags&flagPadded == 0 {
		return p, true
	}
	if len(p) < 1 || int(p[0]) > len(p)-1 {
		return nil, false
	}
	return p[1 : len(p)-int(p[0])], true
}

// settings takes this side's SETTINGS: the header table size it allows
// is the most the other side's encoder may use.
func (s *h2side) settings(p []byte) {
	for ; len(p) >= 6; p = p[6:] {
		if binary.BigEndian.Uint16(p) == settingHeaderTableSize {
			other := s.h.sideOf(!s.client)
			other.dec.SetAllowedMaxDynamicTableSize(binary.BigEndian.Uint32(p[2:]))
		}
	}
}

// headers decodes the header block under way, and hands it to its stream.
func (s *h2side) headers() {
	s.inBlock = false
	fields, err := s.dec.DecodeFull(s.block)
	s.block = s.block[:0]
	if err != nil {
		s.lose("bad-message", "HPACK: "+err.Error(), s.blockAt)
		return
	}
	if s.blockPush {
		return // a pushed answer: no request of the client's
	}
	if s.client {
		s.h.request(s.blockID, fields, s.blockEnd, s.blockTS, s.blockAt)
	} else {
		s.h.answer(s.blockID, fields, s.blockEnd, s.blockTS, s.blockAt)
	}
}

// lose stops reading this side after a loss (of kind, why): the rest of
// its frames cannot be found, nor its header blocks decoded.
func (s *h2side) lose(kind, why string, at place) {
	if s.lost {
		return
	}
	s.lost = true
	s.c().hold(-len(s.buf))
	s.buf, s.block = nil, nil
	who := "server"
	if s.client {
		who = "client"
	}
	if kind != "bad-message" {
		kind = "h2-lost"
	}
	s.c().a.out.skip(at, kind, fmt.Sprintf("HTTP/2 from the %s of a connection to %s: %s; the rest of what it sent cannot be read (frames and HPACK state lost)", who, s.c().server(), why), true)
	if !s.client { // the answers still due are lost
		for _, st := range s.h.sorted() {
			if st.reqDone {
				st.x.lost = true
				s.h.write(st, false)
			}
		}
	}
}

// request takes a request's header block (or its trailers).
func (h *h2conn) request(id uint32, fields []hpack.HeaderField, end bool, ts int64, at place) {
	st := h.streams[id]
	if st == nil {
		st = &h2stream{id: id, proto: "HTTP/2", x: exchange{start: ts, at: at, seq: h.c.a.out.next()}}
		st.rec.Version = "2"
		h.streams[id] = st
		for _, f := range fields {
			switch f.Name {
			case ":method":
				st.rec.Method = f.Value
			case ":path":
				st.rec.URI = f.Value
			case ":authority":
				st.rec.Host = f.Value
			default:
				if !strings.HasPrefix(f.Name, ":") {
					st.rec.Headers = append(st.rec.Headers, rrpair.Field{Name: f.Name, Value: f.Value})
				}
			}
		}
		if st.rec.Host == "" {
			st.rec.Host = headerValue(st.rec.Headers, "host")
		}
		st.grpc = strings.HasPrefix(headerValue(st.rec.Headers, "content-type"), "application/grpc")
	}
	if end {
		h.done(st, true, ts)
	}
}

// answer takes an answer's header block: its head (past interim ones) or
// its trailers.
func (h *h2conn) answer(id uint32, fields []hpack.HeaderField, end bool, ts int64, at place) {
	st := h.streams[id]
	if st == nil {
		return // a stream the client's side did not show (after its loss)
	}
	var kept []rrpair.Field
	status := 0
	for _, f := range fields {
		if f.Name == ":status" {
			status, _ = strconv.Atoi(f.Value)
		} else if !strings.HasPrefix(f.Name, ":") {
			kept = append(kept, rrpair.Field{Name: f.Name, Value: f.Value})
		}
	}
	switch {
	case !st.resHead && status/100 == 1:
		return // an interim answer
	case !st.resHead:
		st.resHead, st.rec.Status, st.rec.ResHeaders = true, status, kept
	default:
		st.rec.ResTrailers = kept
	}
	if end {
		h.done(st, false, ts)
	}
}

// body takes a DATA frame's payload.
func (h *h2conn) body(st *h2stream, client bool, p []byte, end bool, ts int64) {
	if client {
		st.rec.Body = append(st.rec.Body, p...)
	} else {
		st.rec.ResBody = append(st.rec.ResBody, p...)
	}
	st.held += len(p)
	h.c.hold(len(p))
	if end {
		h.done(st, client, ts)
	}
}

// done takes the end of a stream's request (client) or answer.
func (h *h2conn) done(st *h2stream, client bool, ts int64) {
	if client {
		st.reqDone = true
	} else {
		st.resDone, st.x.end = true, ts
	}
	switch {
	case st.reqDone && st.resDone:
		h.write(st, true)
	case st.reqDone && h.side[1].lost:
		st.x.lost = true
		h.write(st, false)
	}
}

// reset takes an RST_STREAM: a stream whose request was whole is written
// without an answer; one whose request was not is skipped.
func (h *h2conn) reset(st *h2stream, client bool, p []byte) {
	if st.reqDone {
		h.write(st, st.resDone)
		return
	}
	who := "server"
	if client {
		who = "client"
	}
	code := ""
	if len(p) >= 4 {
		code = fmt.Sprintf(" (error code %d)", binary.BigEndian.Uint32(p))
	}
	h.c.a.out.skip(st.x.at, "reset", fmt.Sprintf("stream %d (%s %s) to %s was reset by the %s%s before its request was whole", st.id, st.rec.Method, st.rec.URI, h.c.server(), who, code), true)
	h.forget(st)
}

// upgraded takes the request that upgraded an HTTP/1.1 connection to h2c
// (answered 101): it is stream 1, whose answer comes in HTTP/2.
func (h *h2conn) upgraded(x *h1ex) {
	st := &h2stream{id: 1, proto: "HTTP/1.1", x: x.x, reqDone: true}
	st.rec = *h1Record(x.req, true)
	h.streams[1] = st
}

// write writes a stream's pair, with its answer when answered, and
// forgets the stream.
func (h *h2conn) write(st *h2stream, answered bool) {
	r := st.rec
	if !answered {
		r.Status, r.ResHeaders, r.ResTrailers, r.ResBody = 0, nil, nil, nil
	}
	proto := st.proto
	if st.grpc {
		proto = "gRPC"
	}
	h.c.a.out.write(h.c, &r, st.x, proto)
	h.forget(st)
}

func (h *h2conn) forget(st *h2stream) {
	h.c.hold(-st.held)
	delete(h.streams, st.id)
}

// sorted are the open streams, by id.
func (h *h2conn) sorted() []*h2stream {
	return slices.SortedFunc(maps.Values(h.streams), func(a, b *h2stream) int { return cmp.Compare(a.id, b.id) })
}

// close writes the streams whose request was whole (without an answer
// when it did not come) and skips the others.
func (h *h2conn) close() {
	for _, st := range h.sorted() {
		if st.reqDone {
			st.x.lost = st.x.lost || st.resHead
			h.write(st, false)
			continue
		}
		kind, why := "incomplete", "the connection or the capture ended before its request was whole"
		if h.side[0].lost {
			kind, why = "h2-lost", "the capture lost bytes of its request"
		}
		h.c.a.out.skip(st.x.at, kind, fmt.Sprintf("stream %d (%s %s) to %s: %s", st.id, st.rec.Method, st.rec.URI, h.c.server(), why), true)
		h.forget(st)
	}
	for i := range h.side {
		h.c.hold(-len(h.side[i].buf))
		h.side[i].buf = nil
	}
}

// shed gives the connection up to keep within --max-buffer.
func (h *h2conn) shed() {
	why := fmt.Sprintf("given up to keep within --max-buffer (%d bytes)", h.c.a.opt.MaxBuffer)
	for i := range h.side {
		h.side[i].lose("buffer", why, h.c.first)
	}
	h.close()
}
