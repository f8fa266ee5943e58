package pcap

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/internal/plural"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// maxHead bounds a message's start line and fields.
const maxHead = 64 << 10

// The states of a side's reader.
const (
	h1Sync       = iota // passing bytes over until a segment begins a message
	h1Head              // reading a head (an empty one: between messages)
	h1Body              // a body of known length
	h1ChunkSize         // a chunk-size line
	h1ChunkData         // a chunk's data
	h1ChunkEnd          // the line end after a chunk's data
	h1Trailers          // a chunked body's trailer section
	h1UntilClose        // an answer's body, until the connection closes
	h1Done              // the side speaks another protocol now
)

// h1side reads one direction of an HTTP/1.x connection, message after
// message, as the bytes arrive in pieces: requests from the client,
// answers from the server. The head is read by rawhttp.ParseHead once it
// is whole; the body is framed here (Content-Length, chunked, until
// close) and kept de-chunked.
type h1side struct {
	h       *h1conn
	request bool
	state   int
	head    []byte
	msg     *rawhttp.Message
	body    []byte
	remain  int64  // bytes of the body (or of the chunk) still due
	line    []byte // a chunk-size or trailer line under way
	x       *h1ex  // the exchange of the message under way
	start   int64  // capture time of the message's first byte
	at      place  // its packet
	// cut is the kind of loss ("gap", "snaplen") that took bytes of the
	// message under way, which is not kept when whole; "" for none.
	// cutWhy says what it took.
	cut, cutWhy string
}

// bodyData takes the bytes of a body of known length, or of a chunk, and
// returns those after it.
func (s *h1side) bodyData(b []byte, ts int64) []byte {
	n := int(min(s.remain, int64(len(b))))
	if s.cut == "" {
		s.keep(&s.body, b[:n])
	}
	s.remain -= int64(n)
	b = b[n:]
	if s.remain == 0 && s.state == h1Body {
		s.complete(ts)
	} else if s.remain == 0 {
		s.state = h1ChunkEnd
	}
	return b
}

// data takes bytes in order; fresh says they begin a segment. It returns
// the bytes after a switch to another protocol (HTTP/2 after the client
// preface or a 101), which are not its to read.
func (s *h1side) data(b []byte, fresh bool, ts int64, at place) []byte {
	for len(b) > 0 {
		switch s.state {
		case h1Done:
			return b
		case h1Sync:
			if !fresh || !s.begins(b) {
				return nil
			}
			s.state = h1Head
		case h1Head:
			var done bool
			if b, done = s.readHead(b, ts, at); !done {
				return nil
			}
		case h1Body, h1ChunkData:
			b = s.bodyData(b, ts)
		case h1ChunkSize, h1ChunkEnd, h1Trailers:
			line, rest, ok := s.readLine(b)
			b = rest
			if ok {
				s.chunkLine(line, ts)
			}
		case h1UntilClose:
			if s.cut == "" {
				s.keep(&s.body, b)
			}
			return nil
		}
		fresh = false
	}
	return nil
}

// begins says whether b, a segment, begins a message of this side.
func (s *h1side) begins(b []byte) bool {
	if s.request {
		line, _, ok := bytes.Cut(b, []byte("\n"))
		return ok && requestLine(line) || bytes.HasPrefix(b, []byte(preface))
	}
	return bytes.HasPrefix(b, []byte("HTTP/1.")) && statusLine(b)
}

// readHead reads head bytes from b; done says the head is whole (and
// read), rest is what follows it.
func (s *h1side) readHead(b []byte, ts int64, at place) (rest []byte, done bool) {
	if len(s.head) == 0 {
		if s.request {
			if b = bytes.TrimLeft(b, "\r\n"); len(b) == 0 { // stray line ends between requests
				return nil, false
			}
			if bytes.HasPrefix(b, []byte(preface[:16])) {
				s.state = h1Done
				s.h.toH2(true)
				return b, true
			}
		}
		s.start, s.at = ts, at
	}
	i := headEnd(s.head, b)
	if i < 0 {
		s.keep(&s.head, b)
		if len(s.head) > maxHead {
			s.lose("bad-message", "a head over 64 KiB")
		}
		return nil, false
	}
	s.keep(&s.head, b[:i])
	s.parsed(ts)
	return b[i:], true
}

// headEnd is where the blank line that ends a head is, in b after head
// (the head's bytes so far): the index after it, or -1.
func headEnd(head, b []byte) int {
	back := func(i int) byte { // the byte i places before b[0] or in b
		if i >= 0 {
			return b[i]
		}
		if len(head)+i >= 0 {
			return head[len(head)+i]
		}
		return 0
	}
	for i := 0; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j
		if back(i-1) == '\n' || back(i-1) == '\r' && back(i-2) == '\n' {
			return i + 1
		}
	}
	return -1
}

// parsed reads the whole head and sets how the body is framed.
func (s *h1side) parsed(ts int64) {
	m, f, err := rawhttp.ParseHead(s.head, s.request)
	if err != nil {
		s.lose("bad-message", err.Error())
		return
	}
	s.msg = m
	method := ""
	if s.request {
		s.x = s.h.begin(m, s.start, s.at)
	} else if s.x = s.h.answering(s.start); s.x != nil {
		method = s.x.method
	}
	switch {
	case !s.request && (rawhttp.NoBody(method, m.Status) || method == "CONNECT" && m.Status/100 == 2):
		s.complete(ts)
	case f.Chunked:
		s.state = h1ChunkSize
	case f.Length > 0:
		s.state, s.remain = h1Body, f.Length
		s.body = make([]byte, 0, min(f.Length, maxHead)) // grown as it comes, past 64 KiB
	case f.Length == 0 || s.request:
		s.complete(ts)
	default:
		s.state = h1UntilClose
	}
}

// readLine reads a line (a chunk size, a trailer) from b: ok says it is
// whole.
func (s *h1side) readLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		s.keep(&s.line, b)
		if len(s.line) > maxHead {
			s.lose("bad-message", "a chunk line over 64 KiB")
		}
		return nil, nil, false
	}
	s.keep(&s.line, b[:i+1])
	line = bytes.TrimRight(s.line, "\r\n")
	s.c().hold(-len(s.line))
	s.line = s.line[:0]
	return line, b[i+1:], true
}

// chunkLine takes a whole line of a chunked body.
func (s *h1side) chunkLine(line []byte, ts int64) {
	switch s.state {
	case h1ChunkSize:
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		switch {
		case err != nil || n < 0:
			s.lose("bad-message", fmt.Sprintf("chunk size %q", line))
		case n == 0:
			s.state = h1Trailers
		default:
			s.state, s.remain = h1ChunkData, n
		}
	case h1ChunkEnd:
		s.state = h1ChunkSize
	case h1Trailers:
		if len(line) == 0 {
			s.complete(ts)
		}
	}
}

// complete hands over the message read.
func (s *h1side) complete(ts int64) {
	m, x, cut, why := s.msg, s.x, s.cut, s.cutWhy
	m.Body = s.body
	s.reset(h1Head)
	if s.request {
		s.h.requestRead(x, cut, why, ts)
	} else {
		s.h.answerRead(s, x, m, cut, ts)
	}
}

// reset forgets the message under way and reads on in state. The head's
// and the line's buffers are kept for the next message (ParseHead copied
// what it kept of them); the body went with the message.
func (s *h1side) reset(state int) {
	s.c().hold(-(len(s.head) + len(s.body) + len(s.line)))
	if cap(s.head) > 2*maxHead {
		s.head = nil
	}
	s.head, s.body, s.line, s.msg, s.x, s.cut, s.cutWhy, s.remain = s.head[:0], nil, s.line[:0], nil, nil, "", "", 0
	s.state = state
}

// keep appends b to the buffer *dst, counted as held.
func (s *h1side) keep(dst *[]byte, b []byte) {
	*dst = append(*dst, b...)
	s.c().hold(len(b))
}

func (s *h1side) c() *conn { return s.h.c }

// gap takes n bytes the capture lost. Inside a body of known length the
// message is cut but the stream stays in step; anywhere else the message
// under way is lost, and the stream is found again at the next segment
// that begins a message.
func (s *h1side) gap(n int, kind string, at place) {
	switch s.state {
	case h1Sync, h1Done:
	case h1Head:
		if len(s.head) == 0 {
			s.unsure(at)
			return
		}
		s.lose(kind, lostBytes(n, kind, at))
	case h1Body:
		if int64(n) > s.remain {
			s.lose(kind, lostBytes(n, kind, at))
			return
		}
		s.cutBy(kind, lostBytes(n, kind, at))
		if s.remain -= int64(n); s.remain == 0 {
			s.complete(s.start)
		}
	case h1UntilClose:
		s.cutBy(kind, lostBytes(n, kind, at))
	default:
		s.lose(kind, lostBytes(n, kind, at))
	}
}

// lostBytes says what a loss of kind took: "20 bytes the capture lost,
// before packet 7", "800 bytes cut from packet 5 by the snap length".
func lostBytes(n int, kind string, at place) string {
	if kind == "snaplen" {
		return fmt.Sprintf("%s cut from packet %d by the snap length (capture with tcpdump -s 0)", plural.Count(n, "byte"), at.packet)
	}
	return fmt.Sprintf("%s the capture lost, before packet %d", plural.Count(n, "byte"), at.packet)
}

// cutBy marks the message under way as cut by a loss of kind (why: what
// it took): it is read to its end, then not kept.
func (s *h1side) cutBy(kind, why string) {
	if s.cut == "" {
		s.cut, s.cutWhy = kind, why
		s.c().hold(-len(s.body))
		s.body = nil
	}
}

// lose gives up the message under way (of kind, why) and looks for the
// next one at a segment start.
func (s *h1side) lose(kind, why string) {
	if s.request {
		s.h.requestLost(s.x, kind, why, s.at, s.start)
	} else if s.x != nil {
		s.x.answered, s.x.x.lost = true, true
		s.h.settle()
	}
	s.reset(h1Sync)
	s.h.uncertain = true
}

// unsure: bytes were lost between messages, which may have held whole
// ones: the stream is found again at the next segment that begins a
// message, and answers are matched to requests by time from now on.
func (s *h1side) unsure(at place) {
	s.reset(h1Sync)
	s.h.uncertain = true
	if s.request {
		s.h.queue = append(s.h.queue, &h1ex{marker: true, x: exchange{at: at}})
	}
}

// end takes the end of the direction: an answer read until the close is
// whole when the sender closed; any other message under way is not.
func (s *h1side) end(why endKind, ts int64) {
	switch {
	case s.state == h1UntilClose && why == endFIN:
		s.complete(ts)
	case s.state == h1Sync || s.state == h1Done || s.state == h1Head && len(s.head) == 0:
	default:
		s.lose("incomplete", endWhy[why])
	}
}

// endWhy says why a message under way at the end of its direction is
// not whole.
var endWhy = map[endKind]string{
	endFIN:     "the connection closed inside it",
	endReset:   "the connection was reset inside it",
	endIdle:    "the connection went idle inside it (--stream-timeout)",
	endCapture: "the capture ends inside it",
}

// h1ex is one exchange of an HTTP/1.x connection: a request and its
// answer, as far as they came.
type h1ex struct {
	x        exchange
	method   string
	req      *rawhttp.Message
	reqDone  bool
	lost     bool // the request was lost: not written
	res      *rawhttp.Message
	answered bool // its final answer came, or was lost
	marker   bool // stands for requests a loss hid
	moved    bool // taken over by HTTP/2 or passed over (an upgrade): not written here
	h2c      bool // it asks to upgrade to h2c
	held     int  // bytes of its request held while it waits
}

// h1conn pairs the requests of an HTTP/1.x connection with their answers:
// in order (keep-alive, pipelining), past interim answers (100 Continue,
// 103); after a loss, by time.
type h1conn struct {
	c        *conn
	req, res h1side
	queue    []*h1ex // in request order, until written
	// uncertain: a loss hid messages, so the next answer goes to the last
	// request that began before it, not to the first waiting.
	uncertain bool
	requests  int // requests begun
}

func newH1(c *conn, fromStart bool) *h1conn {
	h := &h1conn{c: c}
	state := h1Sync
	if fromStart {
		state = h1Head
	}
	h.req = h1side{h: h, request: true, state: state}
	h.res = h1side{h: h, state: state}
	return h
}

func (h *h1conn) side(client bool) *h1side {
	if client {
		return &h.req
	}
	return &h.res
}

// dirOf is the direction the client (or the server) sends in.
func (h *h1conn) dirOf(client bool) int {
	if client {
		return h.c.client
	}
	return 1 - h.c.client
}

func (h *h1conn) data(client bool, b []byte, fresh bool, ts int64, at place) {
	if rest := h.side(client).data(b, fresh, ts, at); len(rest) > 0 {
		// Plaintext after a switch of protocol: on a TLS connection, it
		// was decrypted already.
		h.c.plain(h.dirOf(client), rest, false, ts, at)
	}
}

func (h *h1conn) gap(client bool, n int, kind string, at place) { h.side(client).gap(n, kind, at) }

func (h *h1conn) end(client bool, why endKind, ts int64) { h.side(client).end(why, ts) }

// begin starts the exchange of a request whose head was read.
func (h *h1conn) begin(m *rawhttp.Message, start int64, at place) *h1ex {
	h.requests++
	x := &h1ex{method: m.Method, x: exchange{start: start, at: at, seq: h.c.a.out.next()},
		h2c: rawhttp.HasToken(m.Headers, "upgrade", "h2c")}
	x.req = m
	h.queue = append(h.queue, x)
	return x
}

// requestRead takes a whole request; cut names the loss that took part of
// its body (why: what it took).
func (h *h1conn) requestRead(x *h1ex, cut, why string, ts int64) {
	if cut != "" {
		h.requestLost(x, cut, "its body is missing "+why, x.x.at, x.x.start)
		return
	}
	x.reqDone = true
	x.held = len(x.req.Body) + 256
	h.c.hold(x.held)
	h.settle()
}

// requestLost counts and logs a request lost (x: its exchange, nil when
// its head was not read); its answer, if it comes, is passed over.
func (h *h1conn) requestLost(x *h1ex, kind, why string, at place, start int64) {
	if x == nil {
		x = &h1ex{x: exchange{start: start, at: at}}
		h.queue = append(h.queue, x)
	}
	what := "a request"
	if x.req != nil {
		what = x.req.Method + " " + x.req.Target
	}
	h.c.a.out.skip(at, kind, fmt.Sprintf("%s to %s: %s", what, h.c.server(), why), true)
	x.lost, x.reqDone = true, true
	h.settle()
}

// answering is the exchange an answer beginning at start answers: the
// first waiting, or after a loss the last that began before it (those
// before it lost their answers).
func (h *h1conn) answering(start int64) *h1ex {
	if !h.uncertain {
		for _, x := range h.queue {
			if !x.answered && !x.marker {
				return x
			}
		}
		return nil
	}
	var best *h1ex
	for _, x := range h.queue {
		if !x.answered && !x.marker && x.x.start <= start {
			best = x
		}
	}
	for _, x := range h.queue {
		if x == best {
			break
		}
		if !x.answered {
			x.answered, x.x.lost = true, !x.marker
		}
	}
	return best
}

// answerRead takes a whole answer to x (nil: to no request read); cut
// names the loss that took part of its body.
func (h *h1conn) answerRead(s *h1side, x *h1ex, m *rawhttp.Message, cut string, ts int64) {
	switch {
	case x == nil:
		if !h.c.syn && h.requests == 0 {
			h.c.a.out.st.Before++
		} else {
			h.c.a.out.skip(s.at, "no-request", fmt.Sprintf("an answer (status %d) from %s to no captured request", m.Status, h.c.server()), true)
		}
		return
	case m.Status/100 == 1 && m.Status != 101:
		return // an interim answer: the final one is still due
	case cut != "":
		x.answered, x.x.lost = true, true
	case m.Status == 101 && x.h2c && rawhttp.HasToken(m.Headers, "upgrade", "h2c"):
		x.answered, x.moved = true, true
		h.res.state = h1Done
		h.toH2(false).upgraded(x)
	case m.Status == 101 || x.method == "CONNECT" && m.Status/100 == 2:
		x.answered, x.moved = true, true
		h.switched(x, m, ts)
	default:
		x.res, x.answered, x.x.end = m, true, ts
	}
	if !h.queueOpen() {
		h.uncertain = false
	}
	h.settle()
}

// queueOpen says whether an exchange still waits for its answer.
func (h *h1conn) queueOpen() bool {
	for _, x := range h.queue {
		if !x.answered {
			return true
		}
	}
	return false
}

// toH2 switches the client's side (client) or the server's to HTTP/2:
// the client sent the preface, or the server its 101 to h2c.
func (h *h1conn) toH2(client bool) *h2conn {
	if h.c.h2 == nil {
		h.c.h2 = newH2(h.c)
	}
	h.c.proto[h.dirOf(client)] = protoH2
	return h.c.h2
}

// tunnel passes over a connection upgraded to another protocol (a
// WebSocket) or turned into a tunnel by CONNECT: what follows is not
// HTTP.
func (h *h1conn) tunnel(x *h1ex, m *rawhttp.Message) {
	what := "a CONNECT tunnel"
	if m.Status == 101 {
		what = "an upgrade to " + headerValue(m.Headers, "upgrade")
	}
	req := "a request"
	if x.req != nil {
		req = x.req.Method + " " + x.req.Target
	}
	h.c.a.out.skip(x.x.at, "upgrade", fmt.Sprintf("%s (%s) on a connection to %s: what follows is not HTTP", req, what, h.c.server()), false)
	h.c.proto = [2]proto{protoNone, protoNone}
	h.req.reset(h1Done)
	h.res.reset(h1Done)
}

// settle writes the exchanges that are whole, and forgets them.
func (h *h1conn) settle() {
	kept := h.queue[:0]
	for _, x := range h.queue {
		switch {
		case x.marker && x.answered, x.moved:
		case x.reqDone && x.answered:
			h.write(x)
		default:
			kept = append(kept, x)
			continue
		}
		h.c.hold(-x.held)
		x.held = 0
	}
	clear(h.queue[len(kept):])
	h.queue = kept
}

// close writes the requests still waiting for an answer, without one.
func (h *h1conn) close() {
	for _, x := range h.queue {
		x.answered = true
	}
	h.settle()
}

// shed gives up the messages under way and writes the requests waiting
// for an answer without one, to keep within --max-buffer.
func (h *h1conn) shed() {
	for _, s := range []*h1side{&h.req, &h.res} {
		if s.state != h1Sync && s.state != h1Done && (len(s.head) > 0 || s.state != h1Head) {
			s.lose("buffer", fmt.Sprintf("given up to keep within --max-buffer (%d bytes)", h.c.a.opt.MaxBuffer))
		}
	}
	for _, x := range h.queue {
		if x.reqDone && !x.answered {
			x.answered, x.x.lost = true, true
		}
	}
	h.settle()
	h.uncertain = true
}

// write writes the pair of an exchange: the request as it went (target,
// header names, case and order, body), and the answer unless it was
// lost.
func (h *h1conn) write(x *h1ex) {
	if x.lost || x.req == nil {
		return
	}
	r := h1Record(x.req, x.h2c)
	if a := x.res; a != nil && !x.x.lost {
		r.Status, r.ResHeaders, r.ResBody = a.Status, keptFields(a.Headers, false), a.Body
	}
	h.c.a.out.write(h.c, r, x.x, "HTTP/"+x.req.Version)
}

// h1Record is the pair of request q, without its answer.
func h1Record(q *rawhttp.Message, h2c bool) *rrpair.Record {
	return &rrpair.Record{Version: q.Version, Method: q.Method, URI: q.Target, Body: q.Body,
		Headers: keptFields(q.Headers, h2c), Host: headerValue(q.Headers, "host")}
}

// keptFields are the fields a pair keeps: all but those of the connection
// (a replay's VU owns its connection), and, for a request that asked to
// upgrade to h2c, its Upgrade and HTTP2-Settings.
func keptFields(fs []rrpair.Field, h2c bool) []rrpair.Field {
	out := make([]rrpair.Field, 0, len(fs))
	for _, f := range fs {
		if rrpair.ConnectionHeader(f.Name) || h2c && (strings.EqualFold(f.Name, "upgrade") || strings.EqualFold(f.Name, "http2-settings")) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// headerValue is the value of the first field called name (any case).
func headerValue(fs []rrpair.Field, name string) string {
	for _, f := range fs {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}
