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
	reset       bool
	code        http2.ErrCode
	stalled     bool // waiting for a window to send the body
	first       int64
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
	c.enc = hpack.NewEncoder(&c.hb)
	c.dec = hpack.NewDecoder(ourTableSize, c.onField)
	c.dec.SetMaxStringLength(c.a.MaxHeaderBytes)
	c.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: ourStreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(c.a.MaxHeaderBytes)},
	)
	c.fr.WriteWindowUpdate(0, ourConnWindow-65535)
}

// errors that name what went wrong on an HTTP/2 connection.
var (
	errNotH2             = errors.New("the SUT did not answer the HTTP/2 preface with SETTINGS: it does not speak HTTP/2 (cleartext h2c needs prior knowledge on its side too)")
	errPush              = errors.New("the SUT pushed a stream, which the client's SETTINGS forbid")
	errNoStatus          = errors.New("answer without a :status in 100-599")
	errLong              = errors.New("answer body longer than --max-answer-body")
	errHeadLong          = errors.New("answer headers longer than --max-header-bytes")
	errDataBeforeHeaders = errors.New("DATA before the answer's HEADERS")
)

// exchange sends req on a new stream of cn and reads its answer.
func (c *Client) exchange(cn *conn.Conn, host []byte, req *rrpair.Request, pair *rrpair.Pair, res *result.Result, grpc bool) result.Answer {
	cs := &c.cs
	c.line.Arm()
	c.ans.reset(c.a.MaxBody, c.a.DiscardBodies)
	c.st = stream{id: cs.nextID, sendWin: cs.peerWindow}
	st := &c.st
	cs.nextID += 2
	c.cr.n = 0
	res.Proto = result.ProtoHTTP2
	res.Upgraded = !pair.IsHTTP2() && !grpc // gRPC is HTTP/2, whatever the file says

	c.fl.build(req, cn.HTTPS, host)
	c.encode()
	body := req.Body
	c.writeHeaders(len(body) == 0)
	c.headOut = true
	res.Sent = c.now()
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
	switch {
	case c.unprocessedNow(): // whatever else went wrong, it may go again
		c.unprocessed = true
		res.Err = result.ErrGoAway
		c.lastErr = fmt.Errorf("GOAWAY (%v, last stream %d) before stream %d was processed", cs.goCode, cs.lastID, st.id)
		c.line.Drop(nil)
		return nil
	case err != nil:
		c.lastErr = err
		res.Err = c.failKind(err) // may name the error better
		c.line.Drop(c.lastErr)
		return nil
	case st.reset:
		res.Err = result.ErrStreamReset
		c.lastErr = fmt.Errorf("stream %d reset by the SUT: RST_STREAM %v", st.id, st.code)
		if st.code == http2.ErrCodeRefusedStream {
			c.unprocessed = true
		}
		return nil
	}
	status := c.ans.status
	if status < 100 || status > 599 {
		res.Err = result.ErrOther
		c.lastErr = errNoStatus
		c.line.Drop(nil)
		return nil
	}
	res.Status = uint16(status)
	if grpc {
		res.GRPC = true
		res.GRPCStatus = result.AnswerGRPCStatus(&c.ans)
	}
	c.drainBuffered()
	cs.last = res.End
	if cs.goaway || c.noReuse {
		c.line.Drop(nil) // answered; the next request needs a new connection
	} else {
		c.line.Idle(res.End)
	}
	c.answered = true
	return &c.ans
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
		c.lastErr = errNotH2
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
		return result.ErrOther
	}
	return result.ErrOther
}

// encode writes the header list of c.fl into c.hb as an HPACK block.
func (c *Client) encode() {
	c.hb.b = c.hb.b[:0]
	for i := range c.fl.fields {
		f := &c.fl.fields[i]
		name, _ := c.intern(f.name)
		value, sensitive := c.intern(f.value)
		c.enc.WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: sensitive})
	}
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

// flush writes what is buffered; wfailed records that a write failed.
func (c *Client) flush(res *result.Result) error {
	if len(c.out.b) == 0 {
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
// settings, pings, windows, resets and GOAWAY.
func (c *Client) step() error {
	f, err := c.fr.ReadFrame()
	if err != nil {
		return err
	}
	cs, st := &c.cs, &c.st
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
		c.capture = f.StreamID == st.id && !st.ended && !st.reset
		if c.capture {
			c.trailers, st.endOnBlock = st.gotHeaders, f.StreamEnded()
			c.oversize, c.blockBytes = false, 0
			if st.first == 0 && c.timings {
				st.first = c.cr.at
			}
		}
		if _, err := c.dec.Write(f.HeaderBlockFragment()); err != nil {
			return http2.ConnectionError(http2.ErrCodeCompression)
		}
		if f.HeadersEnded() {
			return c.endBlock()
		}
	case *http2.ContinuationFrame:
		if _, err := c.dec.Write(f.HeaderBlockFragment()); err != nil {
			return http2.ConnectionError(http2.ErrCodeCompression)
		}
		if f.HeadersEnded() {
			return c.endBlock()
		}
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := f.ForeachSetting(c.setting); err != nil {
			return err
		}
		c.fr.WriteSettingsAck()
		return c.flush(nil)
	case *http2.PingFrame:
		if !f.IsAck() {
			c.fr.WritePing(true, f.Data)
			return c.flush(nil)
		}
	case *http2.WindowUpdateFrame:
		switch f.StreamID {
		case 0:
			cs.sendConn += int64(f.Increment)
		case st.id:
			st.sendWin += int64(f.Increment)
		}
	case *http2.RSTStreamFrame:
		if f.StreamID == st.id && !st.ended {
			st.reset, st.code = true, f.ErrCode
		}
	case *http2.GoAwayFrame:
		cs.goaway, cs.lastID, cs.goCode = true, f.LastStreamID, f.ErrCode
	case *http2.PushPromiseFrame:
		return errPush
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
		// A change applies to the open stream's window too (§6.9.2).
		c.st.sendWin += int64(s.Val) - c.cs.peerWindow
		c.cs.peerWindow = int64(s.Val)
	case http2.SettingHeaderTableSize:
		c.enc.SetMaxDynamicTableSizeLimit(s.Val)
	}
	return nil
}

// data takes a DATA frame: the stream's body, and the windows.
func (c *Client) data(f *http2.DataFrame) error {
	cs, st := &c.cs, &c.st
	n := int64(f.Length)
	cs.recvConn += n
	if f.StreamID == st.id && !st.ended && !st.reset {
		if !st.gotHeaders {
			return errDataBeforeHeaders
		}
		if !c.a.DiscardBodies {
			d := f.Data()
			if len(c.ans.body)+len(d) > c.a.MaxBody {
				return errLong
			}
			c.ans.body = append(c.ans.body, d...)
		}
		st.recvUnacked += n
		if f.StreamEnded() {
			st.ended = true
		} else if st.recvUnacked >= ourStreamWindow/2 {
			c.fr.WriteWindowUpdate(st.id, uint32(st.recvUnacked))
			st.recvUnacked = 0
		}
	}
	if cs.recvConn >= ourConnWindow/2 {
		c.fr.WriteWindowUpdate(0, uint32(cs.recvConn))
		cs.recvConn = 0
	}
	return c.flush(nil)
}

// endBlock ends a header block: an interim (1xx) one is dropped, the
// final one makes the answer's head, the next its trailers.
func (c *Client) endBlock() error {
	if err := c.dec.Close(); err != nil {
		return http2.ConnectionError(http2.ErrCodeCompression)
	}
	if !c.capture {
		return nil
	}
	c.capture = false
	st := &c.st
	if c.oversize {
		return errHeadLong
	}
	if !c.trailers {
		if s := c.ans.status; s >= 100 && s < 200 && s != 101 {
			c.ans.status, c.ans.headers = 0, c.ans.headers[:0]
			return nil
		}
		st.gotHeaders = true
	}
	if st.endOnBlock {
		st.ended = true
	}
	return nil
}

// onField is the HPACK decoder's: a field of the header block under way.
func (c *Client) onField(f hpack.HeaderField) {
	if !c.capture {
		return
	}
	if c.blockBytes += int(f.Size()); c.blockBytes > c.a.MaxHeaderBytes {
		c.oversize = true
		return
	}
	if len(f.Name) > 0 && f.Name[0] == ':' {
		if f.Name == ":status" && !c.trailers {
			if n, ok := digits(f.Value, 3); ok && len(f.Value) == 3 {
				c.ans.status = n
			}
		}
		return
	}
	h := rrpair.Header{Name: unsafeBytes(f.Name), Value: unsafeBytes(f.Value)}
	if c.trailers {
		c.ans.trailers = append(c.ans.trailers, h)
	} else {
		c.ans.headers = append(c.ans.headers, h)
	}
}
