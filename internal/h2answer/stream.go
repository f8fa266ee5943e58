package h2answer

import (
	"time"

	"golang.org/x/net/http2"
)

// opened takes a request whose header block is complete: refused,
// malformed, too big (431), or kept; served now when its body is empty.
func (c *conn) opened(st *Stream) error {
	st.request()
	c.mu.Lock()
	switch {
	case st.big: // 431, as net/http answers; the body is not read
		st.block = appendStatus(st.block[:0], 431)
		c.writeHeaders(st.id, st.block, true)
		if !c.hdrEnd {
			c.writeRST(st.id, http2.ErrCodeNo)
		}
		c.mu.Unlock()
		c.s.streams.Put(st)
		return nil
	case st.bad:
		c.writeRST(st.id, http2.ErrCodeProtocol)
		c.mu.Unlock()
		c.s.streams.Put(st)
		return nil
	case len(c.streams) >= c.s.lim.Streams:
		c.writeRST(st.id, http2.ErrCodeRefusedStream)
		c.mu.Unlock()
		c.s.streams.Put(st)
		return nil
	}
	st.opened = time.Now()
	st.recvDone = c.hdrEnd
	c.streams[st.id] = st
	c.mu.Unlock()
	if !st.recvDone {
		st.Limit = c.s.h.Limit(st)
		if st.Length > int64(st.Limit) {
			st.Over = true // refused before a byte is read
		} else {
			return nil
		}
	}
	c.hand(st)
	return nil
}

// request sets the request's fields from what was decoded, and tells
// a malformed one (st.bad).
func (st *Stream) request() {
	for _, o := range st.offs {
		st.Fields = append(st.Fields, Field{Name: st.arena[o.n0:o.n1], Value: st.arena[o.v0:o.v1]})
	}
	pseudo := func(i int) []byte {
		if p := st.pseud[i]; p[1] != 0 {
			return st.arena[p[0] : p[1]-1]
		}
		return nil
	}
	st.Method, st.Scheme, st.Authority, st.Path = pseudo(0), pseudo(1), pseudo(2), pseudo(3)
	connect := string(st.Method) == "CONNECT"
	if st.Method == nil || !connect && (len(st.Path) == 0 || st.Scheme == nil) {
		st.bad = true
	}
	for _, f := range st.Fields {
		switch string(f.Name) {
		case "content-length":
			if n, ok := parseUint(f.Value); ok && st.Length == -1 {
				st.Length = n
			} else {
				st.bad = true
			}
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			st.bad = true // connection-specific: malformed in HTTP/2
		case "host":
			if st.Authority == nil {
				st.Authority = f.Value
			}
		}
	}
}

// hand hands st to the handler, on the reading goroutine.
func (c *conn) hand(st *Stream) {
	c.mu.Lock()
	st.served, st.inReader = true, true
	c.mu.Unlock()
	c.s.h.Serve(st)
	c.mu.Lock()
	st.inReader = false
	c.finish(st)
	c.mu.Unlock()
}

// data takes a DATA frame: the body is kept up to its limit, the
// client's windows given back as it is read.
func (c *conn) data(f *http2.DataFrame) error {
	id := f.StreamID
	n := int64(f.Header().Length) // padding counts
	c.mu.Lock()
	c.recvWin -= n
	if c.recvWin < 0 {
		c.mu.Unlock()
		return http2.ConnectionError(http2.ErrCodeFlowControl)
	}
	c.credit += n
	st := c.streams[id]
	if st == nil || st.recvDone {
		err := c.dataClosed(st, id)
		c.mu.Unlock()
		return err
	}
	if st.recvWin -= n; st.recvWin < 0 {
		c.resetStream(st, http2.ErrCodeFlowControl)
		c.giveBack(nil)
		c.mu.Unlock()
		return nil
	}
	st.credit += n
	if c.keep(st, f) {
		c.giveBack(nil)
		c.mu.Unlock()
		return nil
	}
	if f.StreamEnded() {
		st.recvDone = true
	}
	c.giveBack(st)
	now := !st.served && (st.recvDone || st.Over)
	if now {
		c.release() // st no longer receives: another may be first
	}
	c.mu.Unlock()
	if now {
		st.Body = st.bodyBuf
		c.hand(st)
	}
	return nil
}

// keep keeps f's data in st's body, up to its limit, and resets st when
// the body is not the length its request announced (RFC 9113 §8.1.1):
// at once when it is past it, at its end when it is short of it; true
// when it reset st.
func (c *conn) keep(st *Stream, f *http2.DataFrame) bool {
	if !st.served {
		st.bodyBuf = append(st.bodyBuf, f.Data()...)
		c.hold(st, int64(len(st.bodyBuf)))
		if len(st.bodyBuf) > st.Limit {
			st.Over, st.bodyBuf = true, st.bodyBuf[:0]
			c.hold(st, 0)
		}
	}
	got := int64(len(st.bodyBuf))
	if !st.Over && st.Length >= 0 && (got > st.Length || f.StreamEnded() && got != st.Length) {
		c.resetStream(st, http2.ErrCodeProtocol)
		return true
	}
	return false
}

// dataClosed takes DATA on a stream not receiving (st nil: gone): an
// idle stream's is the client's error; a closed one's is dropped, its
// bytes given back to the connection's window.
func (c *conn) dataClosed(st *Stream, id uint32) error {
	if id > c.maxID {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	if st != nil && !st.rst {
		c.resetStream(st, http2.ErrCodeStreamClosed) // DATA after END_STREAM
	}
	c.giveBack(nil)
	return nil
}

// trailersDone ends the body of stream id with its trailers (not kept).
func (c *conn) trailersDone(id uint32) {
	c.mu.Lock()
	st := c.streams[id]
	if st == nil || st.recvDone {
		c.mu.Unlock()
		return
	}
	st.recvDone = true
	now := !st.served
	c.release()
	c.mu.Unlock()
	if now {
		st.Body = st.bodyBuf
		c.hand(st)
	}
}

// giveBack sends WINDOW_UPDATE for what was read, the connection's and
// st's (nil: none), once it is half a window. st's is held back while
// the connection holds more than Limits.Bodies of bodies and st is not
// the first stream receiving (release gives it later).
func (c *conn) giveBack(st *Stream) {
	if c.credit >= creditAt {
		c.wbuf = appendWindowUpdate(c.wbuf, 0, uint32(c.credit))
		c.recvWin += c.credit
		c.credit = 0
	}
	if st != nil && receiving(st) && st.credit >= creditAt {
		if c.held > int64(c.s.lim.Bodies) && st != c.first() {
			c.withheld = true
			return
		}
		c.credit1(st)
	}
}

// credit1 gives st back what was read of it.
func (c *conn) credit1(st *Stream) {
	c.wbuf = appendWindowUpdate(c.wbuf, st.id, uint32(st.credit))
	st.recvWin += st.credit
	st.credit = 0
}

// receiving reports a stream whose request body is still being read.
func receiving(st *Stream) bool { return !st.recvDone && !st.Over && !st.served }

// first is the stream receiving that opened first: it reads on whatever
// the others hold, so that the bodies held back always end.
func (c *conn) first() *Stream {
	var f *Stream
	for _, st := range c.streams {
		if receiving(st) && (f == nil || st.id < f.id) {
			f = st
		}
	}
	return f
}

// hold counts n bytes of body held by st.
func (c *conn) hold(st *Stream, n int64) {
	c.held += n - st.held
	st.held = n
}

// release gives back the windows held back, as far as the bodies the
// connection holds now let it: called when a body is let go or a stream
// stops receiving.
func (c *conn) release() {
	if !c.withheld {
		return
	}
	c.withheld = false
	first := c.first()
	for _, st := range c.streams {
		if !receiving(st) || st.credit == 0 {
			continue
		}
		if c.held > int64(c.s.lim.Bodies) && st != first {
			c.withheld = true
			continue
		}
		c.credit1(st)
	}
}

// resetStream ends st: RST_STREAM with code unless the client reset it,
// what it still had to send dropped.
func (c *conn) resetStream(st *Stream, code http2.ErrCode) {
	if !st.rst && !(st.sentEnd && st.recvDone) {
		c.writeRST(st.id, code)
	}
	st.rst, st.sentEnd, st.recvDone = true, true, true
	st.pend, st.poff, st.trl = st.pend[:0], 0, nil
	st.cancelCtx()
	c.finish(st)
	c.release()
}

// finish releases st once its answer is sent (or it was reset) and no
// handler holds it; an answer given before the request's body ended
// resets the stream (NO_ERROR: the client stops sending it).
func (c *conn) finish(st *Stream) {
	if st.answered && st.sentEnd && !st.recvDone {
		c.writeRST(st.id, http2.ErrCodeNo)
		st.rst, st.recvDone = true, true
	}
	if !st.sentEnd || st.served && !st.answered || st.inReader {
		return
	}
	if c.streams[st.id] != st {
		return
	}
	delete(c.streams, st.id)
	c.hold(st, 0)
	c.release()
	st.cancelCtx()
	st.ctx, st.cancel = nil, nil
	st.c, st.Body, st.Fields, st.Method, st.Scheme, st.Authority, st.Path = nil, nil, st.Fields[:0], nil, nil, nil, nil
	if cap(st.bodyBuf) > keepBuffer {
		st.bodyBuf = nil // a large body's buffer is not pooled
	}
	if cap(st.pend) > keepBuffer {
		st.pend = nil
	}
	c.s.streams.Put(st)
	if len(c.streams) == 0 {
		c.lastBusy = time.Now()
		if c.going && !c.closed {
			c.flush()
			c.closed = true
			c.nc.Close()
		}
	}
}

// sendData writes DATA frames of st from p as far as the windows let
// them, END_STREAM with p's last byte when end; it returns how many bytes
// went.
func (c *conn) sendData(st *Stream, p []byte, end bool) int {
	sent := 0
	for sent < len(p) {
		n := min(len(p)-sent, c.maxFrame, int(min(c.sendWin, st.sendWin)))
		if n <= 0 {
			if st.stalled.IsZero() {
				st.stalled = time.Now()
			}
			return sent
		}
		var flags http2.Flags
		if end && sent+n == len(p) {
			flags = http2.FlagDataEndStream
		}
		c.wbuf = appendFrameHeader(c.wbuf, n, http2.FrameData, flags, st.id)
		c.wbuf = append(c.wbuf, p[sent:sent+n]...)
		sent += n
		c.sendWin -= int64(n)
		st.sendWin -= int64(n)
		if len(c.wbuf) >= flushAt {
			c.flush()
		}
	}
	return sent
}

// sendPending sends what st's answer still holds, as far as the windows
// let it; the trailers (or END_STREAM) after the last byte.
func (c *conn) sendPending(st *Stream) {
	st.poff += c.sendData(st, st.pend[st.poff:], len(st.trl) == 0)
	if st.poff < len(st.pend) {
		return
	}
	st.pend, st.poff = st.pend[:0], 0
	if len(st.trl) > 0 {
		c.writeHeaders(st.id, st.trl, true)
		st.trl = nil
	}
	st.stalled = time.Time{}
	st.sentEnd = true
	c.finish(st)
}

// sendAllPending sends what the answers waiting for the windows can.
func (c *conn) sendAllPending() {
	for _, st := range c.streams {
		if st.answered && !st.sentEnd {
			c.sendPending(st)
		}
	}
}

// writeHeaders frames a header block: HEADERS, then CONTINUATION as the
// client's frame size asks.
func (c *conn) writeHeaders(id uint32, block []byte, end bool) {
	typ := http2.FrameHeaders
	var flags http2.Flags
	if end {
		flags = http2.FlagHeadersEndStream
	}
	for {
		n := min(len(block), c.maxFrame)
		f := flags
		if n == len(block) {
			f |= http2.FlagHeadersEndHeaders // the same bit as CONTINUATION's END_HEADERS
		}
		c.wbuf = appendFrameHeader(c.wbuf, n, typ, f, id)
		c.wbuf = append(c.wbuf, block[:n]...)
		block = block[n:]
		if len(block) == 0 {
			return
		}
		typ, flags = http2.FrameContinuation, 0
	}
}

func (c *conn) writeRST(id uint32, code http2.ErrCode) {
	c.wbuf = appendFrameHeader(c.wbuf, 4, http2.FrameRSTStream, 0, id)
	c.wbuf = appendUint32(c.wbuf, uint32(code))
}

func (c *conn) writeGoAway(code http2.ErrCode) {
	c.going = true
	c.wbuf = appendFrameHeader(c.wbuf, 8, http2.FrameGoAway, 0, 0)
	c.wbuf = appendUint32(c.wbuf, c.maxID)
	c.wbuf = appendUint32(c.wbuf, uint32(code))
}

// flushHook, when set (by a test), sees how much each flush writes.
var flushHook func(n int)

// flush writes what is buffered; a write blocked for the idle timeout
// (a client that reads nothing) closes the connection.
func (c *conn) flush() {
	if len(c.wbuf) == 0 || c.werr != nil || c.closed {
		c.wbuf = c.wbuf[:0]
		return
	}
	if flushHook != nil {
		flushHook(len(c.wbuf))
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.s.lim.Idle))
	_, err := c.nc.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	if cap(c.wbuf) > keepWrite {
		c.wbuf = nil // a burst's buffer is not kept: a connection holds keepWrite at rest
	}
	if err != nil {
		c.werr = err
		c.closed = true
		c.nc.Close()
	}
}

func appendFrameHeader(b []byte, n int, typ http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(n>>16), byte(n>>8), byte(n), byte(typ), byte(flags),
		byte(id>>24)&0x7f, byte(id>>16), byte(id>>8), byte(id))
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendSetting(b []byte, id http2.SettingID, v uint32) []byte {
	return appendUint32(append(b, byte(id>>8), byte(id)), v)
}

func appendWindowUpdate(b []byte, id, n uint32) []byte {
	return appendUint32(appendFrameHeader(b, 4, http2.FrameWindowUpdate, 0, id), n)
}

// parseUint reads a decimal Content-Length (strconv's would take a
// string, a copy of b).
func parseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
