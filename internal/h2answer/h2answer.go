// Package h2answer is an HTTP/2 server for answers that are ready at
// once (the mock's): one goroutine a connection reads its frames and
// answers each stream whose request is complete on that goroutine, with
// no goroutine, http.Request or header map a stream. A stream whose
// answer waits (a recorded latency, a passed-through call) is answered
// later from the handler's own goroutine, without holding the others.
//
// It serves connections accepted and told apart elsewhere: a *tls.Conn
// whose handshake chose "h2", or a cleartext connection that begins with
// the HTTP/2 preface (h2c by prior knowledge). It faces a hostile network
// with bounds: streams open a connection (REFUSED_STREAM beyond), the
// header list (431 beyond, decoded but not kept), the request body (the
// handler's limit: past it the stream is answered and reset, the rest
// unread), the bodies a connection's streams hold at once (Limits.Bodies:
// past it, windows held back), writes buffered (a client that reads
// nothing is cut after the idle timeout of a blocked write), and time (an
// idle connection closed with GOAWAY, a request body that does not arrive
// resets its stream).
package h2answer

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Handler answers the streams of a Server.
type Handler interface {
	// Limit is how many bytes of st's request body are read: called when
	// its head is complete and a body follows. Past it, the handler's
	// Serve sees st.Over, and the stream is reset after the answer.
	Limit(st *Stream) int
	// Serve answers st, its request complete (or over its limit): it
	// calls st.Answer or st.Reset, now or later from another goroutine,
	// and then leaves st alone. Serve runs on the connection's reading
	// goroutine: what would block (a wait, a call elsewhere) goes to a
	// goroutine of its own.
	Serve(st *Stream)
}

// Limits bound what a client may hold of the server.
type Limits struct {
	// Idle closes a connection with no stream open this long (GOAWAY),
	// resets a stream whose request body has not all arrived this long
	// after it opened, and cuts a connection to which nothing could be
	// written this long (a client that reads nothing). 0: 2 minutes.
	Idle time.Duration
	// Streams bounds the streams a connection has open at once
	// (advertised; one beyond is refused): a stream counts until its
	// answer is sent and its handler done, reset or not. 0: 100.
	Streams int
	// HeaderList bounds a request's header list (advertised; the size
	// HTTP/2 counts: names, values and 32 bytes a field). 0: 64 KiB.
	HeaderList int
	// Bodies bounds the request bodies a connection holds at once for
	// its streams other than the first still receiving (which reads on,
	// up to the handler's Limit, as an HTTP/1.1 connection reads its one
	// body): past it their windows are not given back until bodies are
	// answered, or their stream is first. 0: 16 MiB.
	Bodies int
}

// Server serves connections handed to it as HTTP/2.
type Server struct {
	h   Handler
	lim Limits

	mu       sync.Mutex
	conns    map[*conn]struct{}
	shutting bool
	idle     chan struct{} // signalled when a connection ends while shutting down

	streams sync.Pool
}

// New is a server whose streams h answers, within lim.
func New(h Handler, lim Limits) *Server {
	if lim.Idle <= 0 {
		lim.Idle = 2 * time.Minute
	}
	if lim.Streams <= 0 {
		lim.Streams = 100
	}
	if lim.HeaderList <= 0 {
		lim.HeaderList = 64 << 10
	}
	if lim.Bodies <= 0 {
		lim.Bodies = 16 << 20
	}
	s := &Server{h: h, lim: lim, conns: map[*conn]struct{}{}, idle: make(chan struct{}, 1)}
	s.streams.New = func() any { return new(Stream) }
	return s
}

// Serve serves nc as HTTP/2 until it ends, and closes it; the handler
// finds val with Stream.Value. nc's next bytes are the client's preface.
func (s *Server) Serve(nc net.Conn, val any) {
	c := newConn(s, nc, val)
	s.mu.Lock()
	if s.shutting {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	c.serve()
	nc.Close()
	c.mu.Lock()
	c.closed = true
	for _, st := range c.streams { // those still waiting for their answers: it cannot go
		st.cancelCtx()
	}
	c.mu.Unlock()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	select {
	case s.idle <- struct{}{}:
	default:
	}
}

// Shutdown ends the connections gracefully: GOAWAY, then each closed
// once its streams are answered; those left when ctx ends are closed.
// Connections handed later are closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting = true
	for c := range s.conns {
		go c.goAway(http2.ErrCodeNo)
	}
	s.mu.Unlock()
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-s.idle:
		case <-time.After(50 * time.Millisecond): // a conn ended between the count and the wait
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		}
	}
}

// Close closes every connection at once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.shutting = true
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	return nil
}

// Field is a header field.
type Field struct{ Name, Value []byte }

// Stream is a request and the answer it gets. The request's fields are
// valid until the answer is given (Answer, Reset).
type Stream struct {
	c  *conn
	id uint32

	// The request: its pseudo-header fields, its regular fields in the
	// order sent, the length it announced (-1: none), its body.
	Method, Scheme, Authority, Path []byte
	Fields                          []Field
	Length                          int64
	Body                            []byte
	// Over: the body went past Limit (Body is empty); the rest is not read.
	Over bool
	// Limit is the handler's limit on the body.
	Limit int

	arena []byte     // the request's names and values
	offs  []fieldOff // where each regular field lies in arena
	pseud [4][2]int32
	hsize int  // the header list's size so far
	big   bool // over the header list's bound
	bad   bool // malformed

	// Guarded by c.mu.
	opened   time.Time
	recvDone bool   // the request is complete (END_STREAM), or no longer read
	served   bool   // handed to the handler
	answered bool   // the handler answered (or reset)
	sentEnd  bool   // the answer's END_STREAM went, or the stream was reset
	inReader bool   // Serve runs on the reading goroutine: it flushes after
	rst      bool   // RST_STREAM sent or received
	sendWin  int64  // what the client lets us send on the stream
	recvWin  int64  // what the client may send us
	credit   int64  // bytes read and not yet given back by WINDOW_UPDATE
	held     int64  // the bytes of bodyBuf counted in the connection's held
	pend     []byte // the answer's body not sent yet, from poff
	poff     int
	trl      []byte // the trailers' block, sent after pend
	trlBuf   []byte // where Answer encodes it
	stalled  time.Time
	block    []byte // the answer's header block
	bodyBuf  []byte
	ctx      context.Context    // made by Context, for a handler that waits on a call elsewhere
	cancel   context.CancelFunc // ends ctx: the stream reset, its connection gone, or released
}

type fieldOff struct{ n0, n1, v0, v1 int32 }

// Value is the value the stream's connection was served with.
func (st *Stream) Value() any { return st.c.val }

// Context is done once the stream's answer can no longer go: the client
// reset it, or its connection ended (or is shutting down past its
// grace). For a handler that answers from a goroutine of its own after a
// call elsewhere (the mock's --passthrough), to cut that call short.
// Made at the first call (no cost to the streams that never ask); call it
// before the answer.
func (st *Stream) Context() context.Context {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.ctx == nil {
		st.ctx, st.cancel = context.WithCancel(context.Background())
		if st.rst || c.closed || c.werr != nil {
			st.cancel()
		}
	}
	return st.ctx
}

// cancelCtx ends st's Context, if one was made.
func (st *Stream) cancelCtx() {
	if st.cancel != nil {
		st.cancel()
	}
}

// Answer sends the answer: status, fields (none of the connection's,
// nor Content-Length: the length sent is added unless the method is
// HEAD or the status has no body), body (not on HEAD) and trailers.
// What the client's flow control does not let go yet is copied and sent
// as it does.
func (st *Stream) Answer(status int, fields []Field, body []byte, trailers []Field) {
	b := appendStatus(st.block[:0], status)
	for _, f := range fields {
		b = appendField(b, f.Name, f.Value)
	}
	head := len(st.Method) == 4 && string(st.Method) == "HEAD"
	if head || status < 200 || status == 204 || status == 304 {
		body = nil
	} else {
		var num [20]byte
		b = appendField(b, []byte("content-length"), strconv.AppendUint(num[:0], uint64(len(body)), 10))
	}
	st.block = b
	trl := st.trlBuf[:0] // the handler's: the reader does not touch it
	for _, f := range trailers {
		trl = appendField(trl, f.Name, f.Value)
	}
	st.trlBuf = trl
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	st.answered = true
	inReader := st.inReader // st may go back to the pool in finish
	if !st.sentEnd {        // not reset meanwhile
		end := len(body) == 0 && len(trl) == 0
		c.writeHeaders(st.id, st.block, end)
		if end {
			st.sentEnd = true
		} else {
			st.trl = trl
			n := c.sendData(st, body, len(trl) == 0)
			st.pend, st.poff = append(st.pend[:0], body[n:]...), 0 // what the windows hold back
			c.sendPending(st)
		}
	}
	c.finish(st)
	if !inReader {
		c.flush()
	}
}

// Reset resets the stream (RST_STREAM, INTERNAL_ERROR) in the place of an
// answer.
func (st *Stream) Reset() {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	st.answered = true
	inReader := st.inReader
	c.resetStream(st, http2.ErrCodeInternal)
	if !inReader {
		c.flush()
	}
}

const (
	defaultWindow  = 65535
	maxWindow      = 1<<31 - 1
	ourFrameSize   = 16384 // SETTINGS_MAX_FRAME_SIZE we read (the default)
	creditAt       = defaultWindow / 2
	flushAt        = 32 << 10 // buffered output written at once past this
	readBufferSize = 16 << 10
	keepBuffer     = 1 << 20 // a stream's buffers past this are dropped, not pooled
	keepWrite      = 16 << 10
)

// conn is a connection being served.
type conn struct {
	s   *Server
	nc  net.Conn
	val any
	br  *bufio.Reader
	fr  *http2.Framer
	dec *hpack.Decoder

	hs     *Stream // the stream whose header block is being read; nil: none
	hdrRaw int     // bytes of that block so far
	hdrEnd bool    // its HEADERS had END_STREAM
	hdrTrl bool    // it is a block of trailers (or of a stream not kept)
	hdrID  uint32  // the stream of a block not kept (trailers, a stream closed)

	mu       sync.Mutex // guards what follows, and writes to nc
	wbuf     []byte
	werr     error
	streams  map[uint32]*Stream
	maxID    uint32 // the highest stream the client opened
	sendWin  int64
	initWin  int64 // the client's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame int   // the client's SETTINGS_MAX_FRAME_SIZE
	recvWin  int64 // what the client may still send on the connection
	credit   int64
	held     int64 // request body bytes its streams hold
	withheld bool  // a stream's window is held back (Limits.Bodies)
	going    bool  // GOAWAY sent (or received): no stream opens
	closed   bool
	lastBusy time.Time // when the last stream ended
}

func newConn(s *Server, nc net.Conn, val any) *conn {
	c := &conn{s: s, nc: nc, val: val, streams: map[uint32]*Stream{},
		sendWin: defaultWindow, initWin: defaultWindow, maxFrame: 16384, recvWin: defaultWindow}
	c.br = bufio.NewReaderSize(nc, readBufferSize)
	c.fr = http2.NewFramer(io.Discard, c.br)
	c.fr.SetReuseFrames()
	c.fr.SetMaxReadFrameSize(ourFrameSize)
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.dec.SetMaxStringLength(s.lim.HeaderList)
	return c
}

// serve reads the preface and the frames until the connection ends.
func (c *conn) serve() {
	idle := c.s.lim.Idle
	c.nc.SetReadDeadline(time.Now().Add(idle))
	var pre [len(http2.ClientPreface)]byte
	if _, err := io.ReadFull(c.br, pre[:]); err != nil || string(pre[:]) != http2.ClientPreface {
		return
	}
	c.mu.Lock()
	c.wbuf = appendFrameHeader(c.wbuf, 12, http2.FrameSettings, 0, 0)
	c.wbuf = appendSetting(c.wbuf, http2.SettingMaxConcurrentStreams, uint32(c.s.lim.Streams))
	c.wbuf = appendSetting(c.wbuf, http2.SettingMaxHeaderListSize, uint32(c.s.lim.HeaderList))
	c.lastBusy = time.Now()
	c.mu.Unlock()
	for {
		if c.br.Buffered() == 0 {
			more, ok := c.await()
			if !ok {
				return
			}
			if !more {
				continue
			}
		}
		f, err := c.fr.ReadFrame()
		if err != nil {
			if c.readError(err) {
				continue
			}
			return
		}
		if err := c.frame(f); err != nil {
			c.connError(err)
			return
		}
		if c.ended() {
			return
		}
	}
}

// await writes what is buffered and waits for the client's next bytes:
// more when they came, !ok when the connection ends (a read timed out
// is handled by timedOut).
func (c *conn) await() (more, ok bool) {
	c.mu.Lock()
	c.flush()
	err := c.werr
	c.mu.Unlock()
	if err != nil {
		return false, false
	}
	c.nc.SetReadDeadline(c.deadline())
	if _, err := c.br.Peek(1); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && c.timedOut() {
			return false, true
		}
		return false, false
	}
	return true, true
}

// ended reports the connection's end after a frame (closed, a write
// failed, going away with no stream left), writing what is buffered
// then, or when it has grown.
func (c *conn) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	done := c.closed || c.werr != nil || c.going && len(c.streams) == 0 && c.hs == nil
	if done || len(c.wbuf) >= flushAt {
		c.flush()
	}
	return done
}

// deadline is when the next read times out: the idle timeout from now,
// sooner when a request body is due.
func (c *conn) deadline() time.Time {
	now := time.Now()
	d := now.Add(c.s.lim.Idle)
	c.mu.Lock()
	for _, st := range c.streams {
		if !st.served && !st.recvDone { // a body still due
			if t := st.opened.Add(c.s.lim.Idle); t.Before(d) {
				d = t
			}
		}
	}
	c.mu.Unlock()
	return d
}

// timedOut handles a read that timed out: an idle connection ends
// (false); a stream whose body is late, or whose answer the client's
// flow control has held that long, is reset.
func (c *conn) timedOut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	idle := c.s.lim.Idle
	if len(c.streams) == 0 {
		if now.Sub(c.lastBusy) >= idle-idle/64 {
			c.writeGoAway(http2.ErrCodeNo)
			c.flush()
			return false
		}
		return true
	}
	for _, st := range c.streams {
		late := !st.served && !st.recvDone && now.Sub(st.opened) >= idle-idle/64
		stuck := len(st.pend)+len(st.trl) > 0 && !st.stalled.IsZero() && now.Sub(st.stalled) >= idle-idle/64
		if late || stuck {
			c.resetStream(st, http2.ErrCodeCancel)
		}
	}
	return c.werr == nil
}

// readError handles a frame that could not be read: a stream's error
// resets the stream, and the connection goes on (true); a protocol error
// gets its GOAWAY, and the connection ends, as it does when the read
// failed.
func (c *conn) readError(err error) bool {
	var ce http2.ConnectionError
	var se http2.StreamError
	switch {
	case errors.As(err, &se):
		c.mu.Lock()
		defer c.mu.Unlock()
		if st := c.streams[se.StreamID]; st != nil {
			c.resetStream(st, se.Code)
		} else {
			c.writeRST(se.StreamID, se.Code)
		}
		return true
	case errors.As(err, &ce):
		c.connError(ce)
	case errors.Is(err, http2.ErrFrameTooLarge):
		c.connError(http2.ConnectionError(http2.ErrCodeFrameSize))
	}
	return false
}

// connError sends GOAWAY with err's code (a connection error) and ends.
func (c *conn) connError(err error) {
	code := http2.ErrCodeProtocol
	var ce http2.ConnectionError
	if errors.As(err, &ce) {
		code = http2.ErrCode(ce)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.writeGoAway(code)
	c.flush()
	c.mu.Unlock()
	// What the client still sends is read and dropped a while: closed
	// with bytes unread, the connection would be reset, and the client
	// could lose the GOAWAY that says why.
	c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	io.Copy(io.Discard, io.LimitReader(c.br, lingerBytes))
}

// lingerTime and lingerBytes bound what is read and dropped after a
// GOAWAY for a protocol error.
const (
	lingerTime  = time.Second
	lingerBytes = 1 << 20
)

// goAway sends GOAWAY (the shutdown's): no stream opens from now; the
// connection ends once those open are answered.
func (c *conn) goAway(code http2.ErrCode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.going || c.closed {
		return
	}
	c.writeGoAway(code)
	c.flush()
	if len(c.streams) == 0 {
		c.closed = true
		c.nc.Close()
	}
}

// frame handles one frame.
func (c *conn) frame(f http2.Frame) error {
	if c.hs != nil || c.hdrTrl {
		if cf, ok := f.(*http2.ContinuationFrame); ok {
			return c.fragment(cf.HeaderBlockFragment(), cf.HeadersEnded())
		}
		return http2.ConnectionError(http2.ErrCodeProtocol) // the framer checks this too
	}
	switch f := f.(type) {
	case *http2.HeadersFrame:
		return c.headers(f)
	case *http2.DataFrame:
		return c.data(f)
	case *http2.WindowUpdateFrame:
		return c.windowUpdate(f)
	case *http2.SettingsFrame:
		return c.settings(f)
	case *http2.PingFrame:
		c.ping(f)
	case *http2.RSTStreamFrame:
		return c.rstStream(f)
	case *http2.GoAwayFrame:
		c.mu.Lock()
		c.going = true
		c.mu.Unlock()
	case *http2.PushPromiseFrame:
		return http2.ConnectionError(http2.ErrCodeProtocol)
	case *http2.ContinuationFrame:
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	return nil // PRIORITY, unknown types: ignored
}

// ping answers a PING.
func (c *conn) ping(f *http2.PingFrame) {
	if f.IsAck() {
		return
	}
	c.mu.Lock()
	c.wbuf = appendFrameHeader(c.wbuf, 8, http2.FramePing, http2.FlagPingAck, 0)
	c.wbuf = append(c.wbuf, f.Data[:]...)
	c.mu.Unlock()
}

// rstStream ends a stream the client reset.
func (c *conn) rstStream(f *http2.RSTStreamFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.streams[f.StreamID]; st != nil {
		st.rst = true // the client's: none is sent back
		c.resetStream(st, 0)
	} else if f.StreamID > c.maxID {
		return http2.ConnectionError(http2.ErrCodeProtocol) // an idle stream
	}
	return nil
}

func (c *conn) settings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	if err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		switch s.ID {
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - c.initWin
			c.initWin = int64(s.Val)
			for _, st := range c.streams {
				st.sendWin += delta
				if st.sendWin > maxWindow {
					return http2.ConnectionError(http2.ErrCodeFlowControl)
				}
			}
		case http2.SettingMaxFrameSize:
			c.maxFrame = int(s.Val)
		}
		return nil // HEADER_TABLE_SIZE: answers use no dynamic table
	}); err != nil {
		return err
	}
	c.mu.Lock()
	c.wbuf = appendFrameHeader(c.wbuf, 0, http2.FrameSettings, http2.FlagSettingsAck, 0)
	c.sendAllPending()
	c.mu.Unlock()
	return nil
}

func (c *conn) windowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.StreamID == 0 {
		c.sendWin += int64(f.Increment)
		if c.sendWin > maxWindow {
			return http2.ConnectionError(http2.ErrCodeFlowControl)
		}
		c.sendAllPending()
		return nil
	}
	st := c.streams[f.StreamID]
	if st == nil {
		if f.StreamID > c.maxID {
			return http2.ConnectionError(http2.ErrCodeProtocol)
		}
		return nil // a stream closed
	}
	st.sendWin += int64(f.Increment)
	if st.sendWin > maxWindow {
		c.resetStream(st, http2.ErrCodeFlowControl)
		return nil
	}
	c.sendPending(st)
	return nil
}

// headers begins a header block: a request's, or trailers.
func (c *conn) headers(f *http2.HeadersFrame) error {
	id := f.StreamID
	if id%2 == 0 {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	c.mu.Lock()
	st := c.streams[id]
	switch {
	case st != nil: // trailers: the body ends
		if !f.StreamEnded() {
			c.mu.Unlock()
			return http2.ConnectionError(http2.ErrCodeProtocol)
		}
		if st.recvDone && !st.rst { // the request had ended: half closed
			c.resetStream(st, http2.ErrCodeStreamClosed)
		}
		c.hdrTrl = true
	case id <= c.maxID: // a stream closed (reset): decoded, not kept
		c.hdrTrl = true
	default:
		c.maxID = id
		if c.going {
			c.hdrTrl = true
			break
		}
		st = c.s.streams.Get().(*Stream)
		*st = Stream{c: c, id: id, Length: -1, arena: st.arena[:0], offs: st.offs[:0], Fields: st.Fields[:0],
			pend: st.pend[:0], trlBuf: st.trlBuf[:0], block: st.block[:0], bodyBuf: st.bodyBuf[:0],
			sendWin: c.initWin, recvWin: defaultWindow}
		c.hs = st
	}
	c.mu.Unlock()
	c.hdrEnd = f.StreamEnded()
	c.hdrRaw = 0
	c.hdrID = id
	return c.fragment(f.HeaderBlockFragment(), f.HeadersEnded())
}

// fragment decodes a piece of a header block; the block ends with end.
func (c *conn) fragment(p []byte, end bool) error {
	c.hdrRaw += len(p)
	if c.hdrRaw > 4*c.s.lim.HeaderList {
		return http2.ConnectionError(http2.ErrCodeEnhanceYourCalm)
	}
	if _, err := c.dec.Write(p); err != nil {
		return http2.ConnectionError(http2.ErrCodeCompression)
	}
	if !end {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return http2.ConnectionError(http2.ErrCodeCompression)
	}
	st, trl := c.hs, c.hdrTrl
	c.hs, c.hdrTrl = nil, false
	if trl {
		c.trailersDone(c.hdrID)
		return nil
	}
	return c.opened(st)
}

// emit takes a decoded field of the block being read.
func (c *conn) emit(f hpack.HeaderField) {
	st := c.hs
	if st == nil || st.big || st.bad {
		return
	}
	st.hsize += len(f.Name) + len(f.Value) + 32
	if st.hsize > c.s.lim.HeaderList {
		st.big = true
		return
	}
	n0 := int32(len(st.arena))
	st.arena = append(st.arena, f.Name...)
	v0 := int32(len(st.arena))
	st.arena = append(st.arena, f.Value...)
	v1 := int32(len(st.arena))
	if len(f.Name) > 0 && f.Name[0] == ':' {
		st.pseudo(f.Name, v0, v1)
		return
	}
	for i := 0; i < len(f.Name); i++ {
		if b := f.Name[i]; 'A' <= b && b <= 'Z' {
			st.bad = true // HTTP/2's names are in lower case
			return
		}
	}
	st.offs = append(st.offs, fieldOff{n0, v0, v0, v1})
}

// pseudo keeps a pseudo-header field, its value at arena[v0:v1]: one of
// the four a request has, once each, before the regular fields.
func (st *Stream) pseudo(name string, v0, v1 int32) {
	i := -1
	switch name {
	case ":method":
		i = 0
	case ":scheme":
		i = 1
	case ":authority":
		i = 2
	case ":path":
		i = 3
	}
	if i < 0 || st.pseud[i][1] != 0 || len(st.offs) > 0 {
		st.bad = true
		return
	}
	st.pseud[i] = [2]int32{v0, v1 + 1} // +1: set, even when empty
}
