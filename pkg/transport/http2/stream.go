package http2

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// This file is the HTTP/2 connection of a client: its preface and
// settings, one stream's exchange (the header block, DATA within the
// windows, the answer's frames), and what the SUT's frames mean for it.

// connState is the state of an HTTP/2 connection, made anew by open.
type connState struct {
	cn         *conn.Conn // the connection it describes
	nextID     uint32
	maxFrame   uint32 // the SUT's SETTINGS_MAX_FRAME_SIZE
	peerWindow int64  // the SUT's SETTINGS_INITIAL_WINDOW_SIZE
	sendConn   int64  // what the connection window lets us send
	recvConn   int64  // received since the last connection WINDOW_UPDATE
	settled    bool   // the SUT's first SETTINGS arrived
	goaway     bool
	lastID     uint32
	goCode     http2.ErrCode
	last       int64 // when its last answer ended (the run's clock)
}

// stream is the state of the one stream open.
type stream struct {
	id          uint32
	sendWin     int64
	recvUnacked int64
	gotHeaders  bool // the final (non-1xx) header block arrived
	endOnBlock  bool // END_STREAM came on the header block under way
	ended       bool // the SUT's END_STREAM
	reset       bool // reset, by the SUT or by the client
	code        http2.ErrCode
	stalled     bool // waiting for a window to send the body
	first       int64
	head        bool  // the request is a HEAD
	noContent   bool  // the answer has no content: to a HEAD, 204, 304 (RFC 9113 §8.1.1)
	interim     int   // interim (1xx) answers so far
	length      int64 // the answer's content-length; -1 without one
	received    int64 // DATA payload received
}

// slot is a stream and its answer: a client's own, or a VU's on a shared
// connection.
type slot struct {
	st  stream
	ans answer
}

// open starts HTTP/2 on a new connection: the preface, the client's
// SETTINGS and its connection window, buffered to go with the first
// request.
func (c *Client) open(cn *conn.Conn) {
	c.cs = connState{cn: cn, nextID: 1, maxFrame: 16384, peerWindow: 65535, sendConn: 65535}
	c.cr.nc = cn.NC
	if c.timings {
		c.cr.now = c.now
	}
	c.br.Reset(&c.cr)
	c.out.b = append(c.out.b[:0], http2.ClientPreface...)
	c.fr = http2.NewFramer(&c.out, c.br)
	c.fr.SetReuseFrames()
	c.blockOpen = false
	// The client sends no SETTINGS_MAX_FRAME_SIZE: the SUT's frames may
	// be 16384 bytes at most (RFC 9113 §4.2), and a larger one is a
	// connection error read no further than its header.
	c.fr.SetMaxReadFrameSize(ourMaxFrame)
	c.enc = hpack.NewEncoder(&c.hb)
	c.blocks.changed() // a new, empty table
	c.dec = hpack.NewDecoder(ourTableSize, c.onField)
	c.heads.valid, c.heads.pending = false, 0 // a new, empty table
	c.dec.SetMaxStringLength(c.a.MaxHeaderBytes)
	c.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: ourStreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(c.a.MaxHeaderBytes)},
	)
	c.fr.WriteWindowUpdate(0, ourConnWindow-65535)
}

// errors that name what went wrong on an HTTP/2 connection (the SUT's
// violations of the protocol are malformed.go's).
var (
	errNotH2    = errors.New("the SUT did not answer the HTTP/2 preface with SETTINGS: it does not speak HTTP/2 (cleartext h2c needs prior knowledge on its side too)")
	errStatus   = errors.New("answer with a :status outside 100-599")
	errLong     = errors.New("answer body longer than --max-answer-body")
	errHeadLong = errors.New("answer headers longer than --max-header-bytes")
)

// exchange sends req on a new stream of cn and reads its answer.
func (c *Client) exchange(cn *conn.Conn, host []byte, req *rrpair.Request, pair *rrpair.Pair, res *result.Result, grpc bool) result.Answer {
	c.openStream(req, pair, res, grpc)
	st := c.st
	c.fl.build(req, cn.HTTPS, host)
	c.encode(&c.fl)
	body := req.Body
	c.writeHeaders(len(body) == 0)
	c.last.headOut = true
	res.Sent = c.now()
	err := c.sendBody(body, res)
	for err == nil && !st.ended && !st.reset && !c.unprocessedNow() {
		err = c.step()
	}
	if err != nil && c.wfailed && !c.line.Cut() {
		c.salvage()
	}
	res.End = c.now()
	res.BytesIn += c.cr.n
	if c.timings && st.first != 0 {
		res.WaitNs = st.first - (res.Sent + res.SendNs)
		res.ReceiveNs = res.End - st.first
	}
	if c.failed(err, res) {
		return nil
	}
	return c.answer(res, grpc)
}

// openStream readies the client for a new stream of req: the answer's
// buffer, the stream's state and its id, and what res says of the protocol.
func (c *Client) openStream(req *rrpair.Request, pair *rrpair.Pair, res *result.Result, grpc bool) {
	cs := &c.cs
	c.line.Arm()
	c.ans.reset(c.a.MaxBody, c.a.DiscardBodies)
	*c.st = stream{id: cs.nextID, sendWin: cs.peerWindow, head: string(req.Method) == "HEAD", length: -1}
	cs.nextID += 2
	c.cr.n = 0
	res.Proto = result.ProtoHTTP2
	res.Upgraded = !pair.IsHTTP2() && !grpc // gRPC is HTTP/2, whatever the file says
}

// sendBody sends the request's body, after its header block, as the
// windows let it (reading the SUT's frames while they are shut), and
// stops sending when the stream ends or the SUT will not process it.
func (c *Client) sendBody(body []byte, res *result.Result) error {
	st := c.st
	body = c.writeData(body)
	err := c.flush(res)
	for err == nil && len(body) > 0 && !st.ended && !st.reset && !c.unprocessedNow() {
		if c.sendable() == 0 {
			st.stalled = true
			err = c.step()
			continue
		}
		st.stalled = false
		body = c.writeData(body)
		err = c.flush(res)
	}
	if c.timings {
		res.SendNs = c.now() - res.Sent
	}
	if err == nil && len(body) > 0 && st.ended && !st.reset {
		// Answered before the whole body went (RFC 9113 §8.1): the
		// stream is closed from our side, without the rest.
		c.fr.WriteRSTStream(st.id, http2.ErrCodeCancel)
		err = c.flush(res)
	}
	if err == nil {
		st.stalled = false
	}
	return err
}

// failed fails res when the stream brought no answer: the SUT would not
// process it (it may go again), the answer broke the protocol, the
// connection failed, or the SUT reset the stream.
func (c *Client) failed(err error, res *result.Result) bool {
	cs, st := &c.cs, c.st
	refusal, _ := err.(*protoError)
	switch {
	case c.unprocessedNow(): // whatever else went wrong, it may go again
		c.unprocessed = true
		res.Err = result.ErrGoAway
		c.last.err = fmt.Errorf("GOAWAY (%v, last stream %d) before stream %d was processed", cs.goCode, cs.lastID, st.id)
		c.line.Drop(nil)
		return true
	case refusal != nil && !c.line.Cut():
		c.refuse(refusal, res)
		return true
	case err != nil:
		c.last.err = err
		res.Err = c.failKind(err) // may name the error better
		c.line.Drop(c.last.err)
		return true
	case st.reset:
		res.Err = result.ErrStreamReset
		c.last.err = fmt.Errorf("stream %d reset by the SUT: RST_STREAM %v", st.id, st.code)
		if st.code == http2.ErrCodeRefusedStream {
			c.unprocessed = true
		}
		return true
	}
	return false
}

// answer completes res from the stream's answer, and keeps the connection
// for the next request or drops it.
func (c *Client) answer(res *result.Result, grpc bool) result.Answer {
	cs := &c.cs
	status := c.ans.status
	if status < 100 || status > 599 {
		res.Err = result.ErrOther
		c.last.err = errStatus
		c.line.Drop(errStatus) // not a clean end: closed, not recycled
		return nil
	}
	res.Status = uint16(status)
	if grpc {
		res.GRPC = true
		res.GRPCStatus = result.AnswerGRPCStatus(c.ans)
	}
	c.drainBuffered()
	cs.last = res.End
	if cs.goaway || c.noReuse {
		c.line.Drop(nil) // answered; the next request needs a new connection
	} else {
		c.line.Idle(res.End)
	}
	c.last.answered = true
	return c.ans
}

// refuse fails the request for what e found, as the RFC classes it: a
// connection error sends GOAWAY and closes the connection; a malformed
// answer resets its stream, and the connection stays in use (the frames
// of the stream still on their way are read and dropped).
func (c *Client) refuse(e *protoError, res *result.Result) {
	res.Err, c.last.err = e.kind, e
	if e.conn {
		c.fr.WriteGoAway(0, e.code, nil)
		c.flush(nil)
		c.line.Drop(e)
		return
	}
	c.st.reset = true
	c.fr.WriteRSTStream(c.st.id, e.code)
	switch {
	case c.flush(nil) != nil:
		c.line.Drop(e)
	case c.cs.goaway || c.noReuse:
		c.line.Drop(nil)
	default:
		c.cs.last = res.End
		c.line.Idle(res.End)
	}
}

// settle reads what the SUT sent on a kept connection while it sat idle
// (a GOAWAY, a PING, SETTINGS, its close) before a stream opens on it, as
// HTTP/1.1 probes an idle connection: whole frames are acted on, and a
// connection the SUT closed is not used again. It waits at most idleProbe,
// and only when the socket has something to read.
func (c *Client) settle(cn *conn.Conn) {
	if c.br.Buffered() == 0 {
		if !c.line.Waiting() {
			return
		}
		cn.Raw.SetReadDeadline(time.Now().Add(idleProbe))
		_, err := c.br.Peek(1)
		cn.Raw.SetReadDeadline(time.Time{})
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			c.cs.goaway = true // closed: a new connection
			return
		}
	}
	c.drainBuffered()
}

// salvage reads, after a write failed, the frames the SUT sent before it
// closed the connection (waiting at most idleProbe): a GOAWAY among them
// says whether the request may go again.
func (c *Client) salvage() {
	c.cr.nc.SetReadDeadline(time.Now().Add(idleProbe))
	c.br.Peek(1)
	c.drainBuffered()
}

// drainBuffered acts on the frames that arrived with the answer and wait,
// whole, in the read buffer (a GOAWAY, SETTINGS, a PING): so that a
// GOAWAY sent with the last answer closes the connection now rather than
// failing the next request. It never waits for the network.
func (c *Client) drainBuffered() {
	for c.br.Buffered() >= 9 {
		h, err := c.br.Peek(9)
		if err != nil || c.br.Buffered() < 9+int(h[0])<<16|int(h[1])<<8|int(h[2]) {
			return
		}
		if c.step() != nil {
			c.cs.goaway = true // a broken connection is not used again
			return
		}
	}
}

// unprocessedNow says that the SUT declared the stream unprocessed by a
// GOAWAY whose last stream is below it.
func (c *Client) unprocessedNow() bool {
	return c.cs.goaway && c.st.id > c.cs.lastID
}

// failKind names why a read or write on the connection failed.
func (c *Client) failKind(err error) result.ErrorKind {
	var ce http2.ConnectionError
	var se http2.StreamError
	switch {
	case c.line.Cut():
		return result.ErrCancelled
	case errors.Is(err, errNotH2):
		return result.ErrNoHTTP2
	case !c.cs.settled && (errors.Is(err, http2.ErrFrameTooLarge) || errors.As(err, &ce) || c.line.Kind(err) == result.ErrEOF):
		// Not a word of HTTP/2 from the SUT: an HTTP/1.1 answer to the
		// preface reads as a frame too large, or a close.
		c.last.err = errNotH2
		return result.ErrNoHTTP2
	case c.cs.goaway:
		return result.ErrGoAway
	}
	if k := c.line.Kind(err); k != result.ErrOther {
		if k == result.ErrTimeout && c.st.stalled {
			return result.ErrFlowControl
		}
		return k
	}
	if errors.As(err, &ce) || errors.As(err, &se) {
		return result.ErrProtocol
	}
	return result.ErrOther
}

// encode writes the header list fl into c.hb as an HPACK block: the
// block kept for the list when the encoder's table has not changed since
// (blocks.go), or the encoder's, kept in turn when it left the table as
// it was.
func (c *Client) encode(fl *fieldList) {
	if block, ok := c.blocks.lookup(fl); ok {
		c.hb.b = append(c.hb.b[:0], block...)
		return
	}
	if c.encodeFields(fl) {
		c.blocks.changed()
		return
	}
	c.blocks.keep(c.hb.b)
}

// encodeFields writes the header list fl into c.hb with the HPACK
// encoder, and says whether that changed the encoder's table.
func (c *Client) encodeFields(fl *fieldList) (changed bool) {
	c.hb.b = c.hb.b[:0]
	for i := range fl.fields {
		f := &fl.fields[i]
		name, _ := c.intern(f.name)
		value, sensitive := c.intern(f.value)
		at := len(c.hb.b)
		c.enc.WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: sensitive})
		changed = changed || tableChange(c.hb.b[at])
	}
	return changed
}

// intern returns b as a string the encoder may keep in its table: one the
// client keeps (made once per distinct value, up to internMax bytes, while
// they fit in internBudget), or else b itself unsafely, sensitive so that
// the encoder never indexes it (it must not keep a string over a buffer
// that changes): such a value goes as a literal never indexed.
func (c *Client) intern(b []byte) (string, bool) {
	if s, ok := c.strs[string(b)]; ok {
		return s, false
	}
	if len(b) <= internMax && c.kept+len(b) <= internBudget {
		s := string(b)
		c.strs[s] = s
		c.kept += len(s)
		return s, false
	}
	return unsafeString(b), true
}

// writeHeaders frames the header block: HEADERS, then CONTINUATION for
// what the SUT's frame size leaves.
func (c *Client) writeHeaders(endStream bool) {
	block, max := c.hb.b, int(c.cs.maxFrame)
	first := block[:min(len(block), max)]
	block = block[len(first):]
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: c.st.id, BlockFragment: first, EndStream: endStream, EndHeaders: len(block) == 0})
	for len(block) > 0 {
		frag := block[:min(len(block), max)]
		block = block[len(frag):]
		c.fr.WriteContinuation(c.st.id, len(block) == 0, frag)
	}
}

// sendable is how much of the body the windows and the frame size let go.
func (c *Client) sendable() int {
	return int(max(0, min(c.cs.sendConn, c.st.sendWin, int64(c.cs.maxFrame))))
}

// writeData frames as much of body as the windows allow (and flushAt
// bounds), and returns the rest.
func (c *Client) writeData(body []byte) []byte {
	for len(body) > 0 && len(c.out.b) < flushAt {
		n := min(c.sendable(), len(body))
		if n == 0 {
			break
		}
		c.fr.WriteData(c.st.id, n == len(body), body[:n])
		c.cs.sendConn -= int64(n)
		c.st.sendWin -= int64(n)
		body = body[n:]
	}
	return body
}

// flush writes what is buffered; wfailed records that a write failed. On
// a shared connection the reader's frames (acknowledgements, windows) wait
// for the reader's flush after the frames it has buffered (readShared).
func (c *Client) flush(res *result.Result) error {
	if len(c.out.b) == 0 || c.mux != nil {
		return nil
	}
	n, err := c.cs.cn.NC.Write(c.out.b)
	c.out.b = c.out.b[:0]
	c.wfailed = err != nil
	if res != nil {
		res.BytesOut += int64(n)
		res.Written = res.Written || n > 0
	}
	return err
}

// step reads one frame and acts on it: the stream's answer, the SUT's
// settings, pings, windows, resets and GOAWAY. A violation of the
// protocol is a *protoError (malformed.go).
func (c *Client) step() error {
	if done, err := c.quickFrame(); done {
		return err
	}
	f, err := c.fr.ReadFrame()
	cs := &c.cs
	if err != nil {
		return c.readError(err)
	}
	if !cs.settled {
		if sf, ok := f.(*http2.SettingsFrame); !ok || sf.IsAck() {
			return errNotH2
		}
		cs.settled = true
	}
	switch f := f.(type) {
	case *http2.DataFrame:
		return c.data(f)
	case *http2.HeadersFrame:
		c.blockOpen = !f.HeadersEnded()
		return c.onHeaders(f.StreamID, f.StreamEnded(), f.HeadersEnded(), f.HeaderBlockFragment())
	case *http2.ContinuationFrame:
		c.blockOpen = !f.HeadersEnded()
		return c.onContinuation(f)
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.PingFrame:
		return c.onPing(f)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f.StreamID, f.Increment)
	case *http2.RSTStreamFrame:
		return c.onRSTStream(f)
	case *http2.GoAwayFrame:
		cs.goaway, cs.lastID, cs.goCode = true, f.LastStreamID, f.ErrCode
	case *http2.PushPromiseFrame:
		return errPush
	}
	return nil
}

// onHeaders begins a header block: the stream's answer (or its trailers)
// when it is on the stream open, one to decode and drop otherwise.
func (c *Client) onHeaders(id uint32, endStream, endHeaders bool, frag []byte) error {
	st := c.st
	if c.idle(id) {
		return errIdleStream
	}
	c.capture = id == st.id && !st.ended && !st.reset
	if c.capture {
		c.trailers, st.endOnBlock = st.gotHeaders, endStream
		c.oversize, c.blockBytes, c.bad, c.regular, c.statusSeen = false, 0, nil, false, false
		if st.first == 0 && c.timings {
			st.first = c.cr.at
		}
	}
	c.conts = 0
	return c.fragment(frag, true, endHeaders)
}

// onContinuation goes on with the header block under way, refusing a
// block in more CONTINUATION frames than its size could need.
func (c *Client) onContinuation(f *http2.ContinuationFrame) error {
	if c.conts++; c.conts > 8+c.a.MaxHeaderBytes/1024 {
		return errContinuation
	}
	return c.fragment(f.HeaderBlockFragment(), false, f.HeadersEnded())
}

// onPing answers the SUT's ping.
func (c *Client) onPing(f *http2.PingFrame) error {
	if !f.IsAck() {
		c.fr.WritePing(true, f.Data)
		return c.flush(nil)
	}
	return nil
}

// onSettings takes the SUT's settings and acknowledges them.
func (c *Client) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	if err := f.ForeachSetting(c.setting); err != nil {
		return err
	}
	c.fr.WriteSettingsAck()
	return c.flush(nil)
}

// onWindowUpdate widens the connection's window or the stream's, up to
// the largest window the protocol allows.
func (c *Client) onWindowUpdate(id, inc uint32) error {
	const maxWindow = 1<<31 - 1
	cs, st := &c.cs, c.st
	switch {
	case id == 0:
		if cs.sendConn += int64(inc); cs.sendConn > maxWindow {
			return errWindowOverflow
		}
	case c.idle(id):
		return errIdleStream
	case id == st.id && !st.reset:
		if st.sendWin += int64(inc); st.sendWin > maxWindow {
			return errStreamWindowOverflow
		}
	}
	return nil
}

// onRSTStream notes the SUT's reset of the stream open.
func (c *Client) onRSTStream(f *http2.RSTStreamFrame) error {
	st := c.st
	if c.idle(f.StreamID) {
		return errIdleStream
	}
	if f.StreamID == st.id && !st.ended && !st.reset {
		st.reset, st.code = true, f.ErrCode
	}
	return nil
}

// readError is what a frame that could not be read means: the framer's
// connection errors (a frame over 16384 bytes, a bad frame) are the
// SUT's, once it has spoken HTTP/2 (before, they say it does not: an
// HTTP/1.1 answer to the preface reads as a frame too large); a stream
// error on the stream open fails it, one on another is of no concern.
func (c *Client) readError(err error) error {
	if !c.cs.settled {
		return err
	}
	var ce http2.ConnectionError
	var se http2.StreamError
	switch {
	case errors.Is(err, http2.ErrFrameTooLarge):
		return errFrameSize
	case errors.As(err, &se):
		if se.StreamID != c.st.id || c.st.reset {
			return nil
		}
		return &protoError{what: "a frame x/net's framer refuses: " + se.Error(), code: se.Code, kind: result.ErrProtocol}
	case errors.As(err, &ce):
		return &protoError{what: "a frame x/net's framer refuses: " + c.frameDetail(err), code: http2.ErrCode(ce), conn: true, kind: result.ErrProtocol}
	}
	return err
}

// frameDetail is what the framer says of its last error.
func (c *Client) frameDetail(err error) string {
	if d := c.fr.ErrorDetail(); d != nil {
		return d.Error()
	}
	return err.Error()
}

// idle reports a stream the client never opened on this connection: one
// above the last it opened, or an even one (the SUT's, which push would
// open). A frame on it, other than PRIORITY, is a connection error
// (RFC 9113 §5.1).
func (c *Client) idle(id uint32) bool {
	return id != 0 && (id >= c.cs.nextID || id%2 == 0)
}

// fragment decodes a fragment of a header block (the first says it opens
// one, end that it ends it): the HPACK decoder calls onField for each
// field, and at the end of the block endBlock judges it. A dynamic table
// size update past the block's first field is a connection error the
// decoder misses while its table is empty: the block is walked for one.
func (c *Client) fragment(frag []byte, first, end bool) error {
	whole := first && end
	switch {
	case whole:
		if lateSizeUpdate(frag) {
			return errLateTableSize
		}
		if c.capture && c.heads.replay(c, frag) {
			return c.endBlock()
		}
	case first:
		c.blk = append(c.blk[:0], frag...)
	default:
		c.blk = append(c.blk, frag...)
		if end && lateSizeUpdate(c.blk) {
			return errLateTableSize
		}
	}
	if first {
		if err := c.heads.start(c, frag, whole); err != nil {
			return errCompression
		}
	}
	if _, err := c.dec.Write(frag); err != nil {
		return errCompression
	}
	if end {
		if cap(c.blk) > 64<<10 {
			c.blk = nil // a rare large block is not kept
		}
		if err := c.dec.Close(); err != nil {
			return errCompression
		}
		c.heads.keep(frag)
		return c.endBlock()
	}
	return nil
}

// setting applies one of the SUT's SETTINGS.
func (c *Client) setting(s http2.Setting) error {
	if err := s.Valid(); err != nil {
		return err
	}
	switch s.ID {
	case http2.SettingMaxFrameSize:
		c.cs.maxFrame = s.Val
	case http2.SettingInitialWindowSize:
		// A change applies to the open streams' windows too (§6.9.2).
		d := int64(s.Val) - c.cs.peerWindow
		if c.mux != nil {
			c.mux.widen(d)
		} else {
			c.st.sendWin += d
		}
		c.cs.peerWindow = int64(s.Val)
	case http2.SettingHeaderTableSize:
		c.enc.SetMaxDynamicTableSizeLimit(s.Val)
		c.blocks.changed() // a size update may go first, and entries may go
	}
	return nil
}

// data takes a DATA frame: the stream's body, and the windows, which the
// SUT must keep to: DATA past a window, or past the answer's
// content-length, is refused.
func (c *Client) data(f *http2.DataFrame) error {
	cs, st := &c.cs, c.st
	if c.idle(f.StreamID) {
		return errIdleStream
	}
	n := int64(f.Length) // padding included: it counts against the windows
	if cs.recvConn += n; cs.recvConn > ourConnWindow {
		return errConnWindow
	}
	if f.StreamID == st.id && !st.ended && !st.reset {
		if err := c.streamData(f, n); err != nil {
			return err
		}
	}
	if cs.recvConn >= ourConnWindow/2 {
		c.fr.WriteWindowUpdate(0, uint32(cs.recvConn))
		cs.recvConn = 0
	}
	return c.flush(nil)
}

// streamData takes a DATA frame of n bytes (padding included) on the
// stream open: the answer's body, within the stream's window, the
// answer's content-length and --max-answer-body.
func (c *Client) streamData(f *http2.DataFrame, n int64) error {
	st := c.st
	if !st.gotHeaders {
		return errDataFirst
	}
	if st.recvUnacked += n; st.recvUnacked > ourStreamWindow {
		return errStreamWindow
	}
	d := f.Data()
	st.received += int64(len(d))
	switch {
	case len(d) > 0 && st.noContent:
		return errBodyless
	case st.length >= 0 && st.received > st.length:
		return errLengthLonger
	}
	if !c.a.DiscardBodies {
		if len(c.ans.body)+len(d) > c.a.MaxBody {
			return errLong
		}
		c.ans.body = append(c.ans.body, d...)
	}
	if f.StreamEnded() {
		return c.endStream()
	}
	if st.recvUnacked >= ourStreamWindow/2 {
		c.fr.WriteWindowUpdate(st.id, uint32(st.recvUnacked))
		st.recvUnacked = 0
	}
	return nil
}

// endBlock ends a header block and judges it: an interim (1xx) one is
// dropped (at most maxInterim of them), the final one makes the answer's
// head, the next its trailers, which end the stream. A block with a field
// onField refused, without :status, with :status 101, or an interim one
// or trailers that do not end as they must make the answer malformed.
func (c *Client) endBlock() error {
	if !c.capture {
		return nil
	}
	c.capture = false
	st := c.st
	switch {
	case c.oversize:
		return errHeadLong
	case c.bad != nil:
		return c.bad
	case c.trailers:
		if !st.endOnBlock {
			return errTrailersOpen
		}
		return c.endStream()
	case !c.statusSeen:
		return errNoStatus
	}
	return c.headBlock()
}

// headBlock judges a header block with a :status: an interim answer is
// dropped, the final one makes the answer's head.
func (c *Client) headBlock() error {
	st := c.st
	switch s := c.ans.status; {
	case s == 101:
		return errStatus101
	case s >= 100 && s < 200:
		if st.endOnBlock {
			return errInterimEnd
		}
		if st.interim++; st.interim > maxInterim {
			return errInterimStorm
		}
		c.ans.status, c.ans.headers, st.length = 0, c.ans.headers[:0], -1
		return nil
	case s == 204 || s == 304 || st.head:
		st.noContent = true
	}
	st.gotHeaders = true
	if st.endOnBlock {
		return c.endStream()
	}
	return nil
}

// endStream ends the answer at the SUT's END_STREAM: its DATA must add up
// to its content-length, unless it has no content (RFC 9113 §8.1.1).
func (c *Client) endStream() error {
	st := c.st
	st.ended = true
	if !st.noContent && st.length >= 0 && st.received != st.length {
		return errLengthShorter
	}
	return nil
}

// onField is the HPACK decoder's: a field of the header block under way,
// kept, or refused (c.bad: the first thing wrong with the block) as RFC
// 9113 §8.2-8.3 say a client must.
func (c *Client) onField(f hpack.HeaderField) {
	if !c.capture {
		return
	}
	if c.heads.record {
		c.heads.fields = append(c.heads.fields, f)
	}
	if c.blockBytes += int(f.Size()); c.blockBytes > c.a.MaxHeaderBytes {
		c.oversize = true
		return
	}
	if c.bad != nil {
		return
	}
	if len(f.Name) > 0 && f.Name[0] == ':' {
		c.pseudo(f)
		return
	}
	c.regular = true
	if c.bad = checkName(f.Name); c.bad != nil {
		return
	}
	if c.bad = checkValue(f.Value); c.bad != nil {
		return
	}
	if connectionSpecific(f.Name, f.Value) {
		c.bad = errConnField
		return
	}
	if f.Name == "content-length" {
		c.contentLength(f.Value)
	}
	h := rrpair.Header{Name: unsafeBytes(f.Name), Value: unsafeBytes(f.Value)}
	if c.trailers {
		c.ans.trailers = append(c.ans.trailers, h)
	} else {
		c.ans.headers = append(c.ans.headers, h)
	}
}

// contentLength takes the content-length of a final answer's head (not of
// an interim answer or trailers): one, and a number.
func (c *Client) contentLength(v string) {
	if c.trailers || c.ans.status >= 100 && c.ans.status < 200 {
		return
	}
	n, ok := parseLength(v)
	switch {
	case c.st.length >= 0:
		c.bad = errTwoLengths
	case !ok:
		c.bad = errBadLength
	}
	c.st.length = n
}

// pseudo takes a pseudo-header: an answer has one, :status, three digits,
// before its regular fields, and its trailers have none (RFC 9113 §8.3).
func (c *Client) pseudo(f hpack.HeaderField) {
	switch {
	case c.trailers:
		c.bad = errPseudoTrailers
	case c.regular:
		c.bad = errPseudoAfter
	case f.Name != ":status":
		c.bad = errPseudoUnknown
	case c.statusSeen:
		c.bad = errTwoStatus
	default:
		c.statusSeen = true
		n, ok := digits(f.Value, 3)
		if !ok || len(f.Value) != 3 {
			c.bad = errBadStatus
			return
		}
		c.ans.status = n
	}
}
