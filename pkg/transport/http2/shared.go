package http2

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"golang.org/x/net/http2"
)

// This file is the HTTP/2 connection several VUs share (--streams N): each
// VU still has one request in flight, and up to N of them are streams of
// one connection at once, as h2load's -m N or a browser's tabs would have
// them. A VU writes its stream's frames itself; a reader goroutine a
// connection reads the SUT's frames and acts on each for its stream, with
// the single stream's code (stream.go) pointed at that stream's slot, and
// hands each ended stream back to its VU. One mutex a group of VUs orders
// it all; only the network's reads and writes happen outside it.

// Shared is the connection a group of VUs shares: the one new streams
// open on, and those still ending their streams after a GOAWAY or
// --max-conn-duration retired them. Its Members are its VUs' clients.
type Shared struct {
	mu      sync.Mutex
	d       *conn.Dialer
	a       transport.AnswerOptions // defaults filled
	now     func() int64
	timeout time.Duration
	protos  conn.Protocols
	timings bool

	cur     *Client              // the connection new streams open on; nil for none
	live    map[*Client]struct{} // every connection whose reader runs
	hadConn bool                 // a connection was opened before
	members int                  // Members not closed
	over    bool                 // they all left: no Member joins
	dialErr error                // why the last dial failed

	// dialing is the Line of a dial under way, for Interrupt.
	dialing atomic.Pointer[conn.Line]
	cut     atomic.Bool
	cutOnce sync.Once
	cutCh   chan struct{} // closed by Interrupt
}

// mux is what a shared connection adds to its Client: its open streams,
// and the write under way.
type mux struct {
	s       *Shared
	streams map[uint32]*Member
	stalled int // open streams waiting for a window to send their body
	// woken counts the streams the reader ended whose Members have not
	// yet taken them (outcome): while some have not, a request written
	// waits in the buffer for theirs, to go out in one write with them
	// (as h2load writes a connection's streams); the last to take its
	// answer writes what waits.
	woken int
	// writing: a flush is under way outside the mutex; frames buffered
	// meanwhile go with its next write.
	writing bool
	// wrote is signalled when a flush ends (its L is the Shared's mutex):
	// a body waits on it while the buffer is full and another writes.
	wrote sync.Cond
	spare []byte
	werr  error
	// taken counts the bytes handed to writes since the connection began,
	// sent those written: a Member's frames begin at its start in that
	// count, and reached the wire once sent passes it.
	taken, sent int64
	wdl         time.Time // the write deadline set
	retired     bool      // no new stream opens on it
	closed      bool
	opened      int64 // when it was made (the run's clock)
	frames      int64 // frames the reader has read
}

// NewShared makes the connection a group of VUs will share, dialing with
// d (cleartext connections by prior knowledge; TLS ones offering h2, and
// http/1.1 so that a SUT without h2 says so rather than failing the
// handshake: a connection that cannot carry several streams is refused)
// and keeping of each answer what a says.
func NewShared(d *conn.Dialer, a transport.AnswerOptions, now func() int64) *Shared {
	o := d.Options()
	return &Shared{d: d, a: a.WithDefaults(), now: now, timeout: o.Timeout, timings: o.Timings,
		protos: conn.Protocols{ALPN: []string{Proto, "http/1.1"}, Cleartext: Proto},
		live:   make(map[*Client]struct{}), cutCh: make(chan struct{})}
}

// Member is one VU's client on a Shared connection: its stream and the
// answer's buffers, reused from request to request. It is used by its
// VU's goroutine only, except what its connection's reader sets under
// the Shared's mutex while its stream is open.
type Member struct {
	s     *Shared
	slot  slot
	fl    fieldList
	done  chan struct{} // the reader ended the stream
	wake  chan struct{} // a window opened for the body
	timer *time.Timer

	// Set under s.mu: the connection of the stream open (nil once it
	// ended), and how it ended.
	c           *Client
	err         error // the connection failed, or the answer broke the protocol
	unprocessed bool  // the SUT declared it unprocessed (GOAWAY below it, REFUSED_STREAM)
	bytesIn     int64
	start       int64 // where its request's frames begin in its connection's bytes (mux.taken)
	framesAt    int64 // the frames its connection had read when its stream opened

	last last // the last request, for Failure and Redirect
}

// Join makes a VU's Member of s, or returns nil when s is over: its
// Members all left, or it was interrupted.
func (s *Shared) Join() *Member {
	s.mu.Lock()
	over := s.over || s.cut.Load()
	if !over {
		s.members++
	}
	s.mu.Unlock()
	if over {
		return nil
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Member{s: s, done: make(chan struct{}, 1), wake: make(chan struct{}, 1), timer: t}
}

// Do sends req (the request of pair, rewritten; grpc says it is a gRPC
// call) to dst (where the VU's Line routes it) on a new stream of the
// shared connection and waits for its answer, filling res as
// transport.Client's Do says. A stream the SUT declared unprocessed fails
// as result.ErrGoAway or result.ErrStreamReset, and Unprocessed then
// says so.
func (m *Member) Do(dst *conn.Route, req *rrpair.Request, pair *rrpair.Pair, res *result.Result, grpc bool) result.Answer {
	s := m.s
	m.last.begin(req.Body)
	m.last.addr = dst.Addr
	m.unprocessed, m.err, m.bytesIn = false, nil, 0
	res.Proto = result.ProtoHTTP2
	res.Upgraded = !pair.IsHTTP2() && !grpc // gRPC is HTTP/2, whatever the file says
	m.fl.build(req, dst.HTTPS, dst.Host)
	m.timer.Reset(s.timeout)
	defer m.timer.Stop()
	s.mu.Lock()
	c, kind := s.connect(dst, res)
	if kind != result.ErrNone {
		m.last.err = s.dialErr
		s.mu.Unlock()
		res.Err = kind
		res.End = s.now()
		res.Sent = res.End
		return nil
	}
	m.open(c, req)
	c.encode(&m.fl)
	body := req.Body
	at := len(c.out.b)
	if res.Connected {
		at = 0 // the preface and the client's SETTINGS go with it
	}
	m.start = c.mux.taken + int64(at)
	c.writeHeaders(len(body) == 0)
	m.last.headOut = true
	res.Sent = s.now()
	body = c.writeData(body)
	res.BytesOut += int64(len(c.out.b) - at)
	c.useOwn()
	var err error
	if len(body) > 0 || c.mux.woken == 0 {
		err = c.mux.flush(c)
	}
	if err == nil && len(body) > 0 {
		err = m.sendRest(c, body, res)
	}
	if s.timings {
		res.SendNs = s.now() - res.Sent
	}
	s.mu.Unlock()
	if err == nil {
		err = m.wait()
	}
	return m.outcome(c, err, res, grpc)
}

// open opens the Member's stream on c (s.mu held).
func (m *Member) open(c *Client, req *rrpair.Request) {
	cs := &c.cs
	m.slot.ans.reset(m.s.a.MaxBody, m.s.a.DiscardBodies)
	m.slot.st = stream{id: cs.nextID, sendWin: cs.peerWindow, head: string(req.Method) == "HEAD", length: -1}
	cs.nextID += 2
	c.mux.streams[m.slot.st.id] = m
	m.c, m.framesAt = c, c.mux.frames
	select { // a signal left by a stream that ended as it timed out
	case <-m.done:
	default:
	}
	c.st, c.ans = &m.slot.st, &m.slot.ans
}

// sendRest sends what of the body the windows held back, as they open
// (s.mu held, and released while it waits), and stops when the stream
// ends or the request times out.
func (m *Member) sendRest(c *Client, body []byte, res *result.Result) error {
	st := &m.slot.st
	for len(body) > 0 {
		if m.c == nil { // ended (answered early, reset, failed)
			if st.ended && !st.reset && !m.unprocessed {
				c.fr.WriteRSTStream(st.id, http2.ErrCodeCancel)
				return c.mux.flush(c)
			}
			return nil
		}
		c.st = st
		if c.sendable() == 0 {
			st.stalled = true
			c.mux.stalled++
			m.s.mu.Unlock()
			var err error
			select {
			case <-m.wake:
			case <-m.timer.C:
				err = errSharedTimeout
			case <-m.s.cutCh:
				err = errSharedCut
			}
			m.s.mu.Lock()
			if st.stalled {
				st.stalled = false
				c.mux.stalled--
			}
			if err != nil {
				return err
			}
			continue
		}
		if c.mux.writing && len(c.out.b) >= flushAt {
			c.mux.wrote.Wait() // the writer under way takes what is buffered
			continue
		}
		at := len(c.out.b)
		body = c.writeData(body)
		res.BytesOut += int64(len(c.out.b) - at)
		c.useOwn()
		if err := c.mux.flush(c); err != nil {
			return err
		}
	}
	return nil
}

// errors of a wait for an answer on a shared connection.
var (
	errSharedTimeout = errors.New("no answer within --timeout")
	errSharedCut     = errors.New("cut off by the stop")
)

// wait waits for the reader to end the stream, for the timeout, or for
// the stop.
func (m *Member) wait() error {
	select {
	case <-m.done:
		return nil
	case <-m.timer.C:
		return errSharedTimeout
	case <-m.s.cutCh:
		return errSharedCut
	}
}

// outcome completes res from how the stream ended: err is the Member's
// own (a write failed, the timeout, the stop).
func (m *Member) outcome(c *Client, err error, res *result.Result, grpc bool) result.Answer {
	s := m.s
	res.Written, err = m.take(c, err)
	res.End = s.now()
	res.BytesIn += m.bytesIn
	if st := &m.slot.st; s.timings && st.first != 0 {
		res.WaitNs = st.first - (res.Sent + res.SendNs)
		res.ReceiveNs = res.End - st.first
	}
	return m.judge(err, res, grpc)
}

// take ends the Member's part in its stream on c, and returns whether a
// byte of its request reached the wire (or waits in the buffer, to go
// with the next write), and why the stream failed (nil: it did not): a stream still open is reset and closed from here,
// for err; one the reader ended failed for what it found. The last
// Member to take its answer writes the requests that waited for it
// (mux.woken).
func (m *Member) take(c *Client, err error) (bool, error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.c != nil { // still open: the Member gives up on it
		c.abandon(m, err == errSharedTimeout)
	} else {
		err = m.err
	}
	x := c.mux
	if x.woken--; x.woken == 0 && len(c.out.b) > 0 && !x.closed {
		x.flush(c)
	}
	for x.writing && m.start >= x.sent && m.start < x.taken {
		x.wrote.Wait() // its frames are in the write under way: whether they went
	}
	// Frames still buffered go with the next write (they cannot be taken
	// back: the HPACK table moved with them) unless the connection fails.
	queued := m.start >= x.taken && !x.closed && x.werr == nil
	return x.sent > m.start || queued, err
}

// judge completes res from err, why the stream failed, and the answer.
func (m *Member) judge(err error, res *result.Result, grpc bool) result.Answer {
	st := &m.slot.st
	pe, _ := err.(*protoError) // errors.As would have pe escape, at every request
	switch {
	case m.unprocessed:
		res.Err = result.ErrGoAway
		if st.reset {
			res.Err = result.ErrStreamReset
		}
		m.last.err = fmt.Errorf("stream %d not processed by the SUT (GOAWAY below it, or REFUSED_STREAM)", st.id)
	case err == errSharedTimeout:
		res.Err, m.last.err = result.ErrTimeout, err
	case m.s.cut.Load():
		res.Err, m.last.err = result.ErrCancelled, errSharedCut
	case pe != nil:
		res.Err, m.last.err = pe.kind, pe
	case errors.Is(err, errNotH2):
		res.Err, m.last.err = result.ErrNoHTTP2, err
	case err != nil:
		res.Err, m.last.err = conn.KindOf(err), err
	case st.reset:
		res.Err = result.ErrStreamReset
		m.last.err = fmt.Errorf("stream %d reset by the SUT: RST_STREAM %v", st.id, st.code)
	case m.slot.ans.status < 100 || m.slot.ans.status > 599:
		res.Err, m.last.err = result.ErrOther, errStatus
	default:
		res.Status = uint16(m.slot.ans.status)
		if grpc {
			res.GRPC = true
			res.GRPCStatus = result.AnswerGRPCStatus(&m.slot.ans)
		}
		m.last.answered = true
		return &m.slot.ans
	}
	return nil
}

// Unprocessed reports that the SUT declared the stream of the last Do
// unprocessed: the request may be sent again, once.
func (m *Member) Unprocessed() bool { return m.unprocessed }

// Redirect is transport.Client's, for a request the last Do sent.
func (m *Member) Redirect(req *rrpair.Request) bool { return m.last.redirect(req, &m.slot.ans) }

// Failure is transport.Client's, for a request the last Do sent: the head
// is the header list as AppendRequest shows it.
func (m *Member) Failure() (addr string, head, body []byte, err error) {
	return m.last.failure(&m.fl)
}

// Close leaves the Shared: the last Member to leave closes its
// connections.
func (m *Member) Close() {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members--; s.members == 0 {
		s.over = true
		for c := range s.live {
			c.closeShared(errSharedCut)
		}
	}
}

// Interrupt is the hard stop of every Member of s: every wait ends, every
// connection and dial is cut, and later requests fail as cancelled.
func (s *Shared) Interrupt() {
	s.cut.Store(true)
	s.cutOnce.Do(func() { close(s.cutCh) })
	if l := s.dialing.Load(); l != nil {
		l.Interrupt()
	}
	s.mu.Lock()
	for c := range s.live {
		c.line.Interrupt()
	}
	s.mu.Unlock()
}

// connect returns the connection a new stream to dst opens on (s.mu
// held): the current one while it may carry one more, else a new one,
// its reader started. A dial holds the mutex: the group's other requests
// would wait for it anyway.
func (s *Shared) connect(dst *conn.Route, res *result.Result) (*Client, result.ErrorKind) {
	if c := s.cur; c != nil {
		o := s.d.Options()
		if !c.mux.retired && !c.cs.goaway && c.cs.nextID <= maxStreamID && c.cs.cn.Addr == dst.Addr && c.cs.cn.HTTPS == dst.HTTPS &&
			(o.MaxConnDuration == 0 || s.now()-c.mux.opened < int64(o.MaxConnDuration)) {
			return c, result.ErrNone
		}
		c.retire()
	}
	if s.cut.Load() {
		s.dialErr = errSharedCut
		return nil, result.ErrCancelled
	}
	l, cn, kind := s.dial(dst, res)
	if kind != result.ErrNone {
		return nil, kind
	}
	res.Reconnect = s.hadConn
	s.hadConn = true
	cn.Detach() // its reader is a goroutine of its own
	cn.Raw.SetDeadline(time.Time{})
	c := NewClient(l, s.a)
	c.mux = &mux{s: s, streams: make(map[uint32]*Member), opened: s.now()}
	c.mux.wrote.L = &s.mu
	c.open(cn)
	s.cur = c
	s.live[c] = struct{}{}
	go c.readShared()
	if s.cut.Load() {
		l.Interrupt()
	}
	return c, result.ErrNone
}

// dial opens a connection to dst on a Line of its own (s.mu held): one
// that speaks HTTP/2, or none, why in s.dialErr.
func (s *Shared) dial(dst *conn.Route, res *result.Result) (*conn.Line, *conn.Conn, result.ErrorKind) {
	l := s.d.NewLine(s.now)
	s.dialing.Store(l)
	if s.cut.Load() { // an Interrupt that looked for a dial before this one
		l.Interrupt()
	}
	cn, _, kind := l.Connect(dst, res, &s.protos, nil)
	s.dialing.Store(nil)
	if kind == result.ErrNone && cn.Proto != Proto {
		s.dialErr = fmt.Errorf("the SUT at %s did not take HTTP/2 (ALPN chose %q): --streams shares HTTP/2 connections only", cn.Addr, cn.Proto)
		kind = result.ErrNoHTTP2
	} else if kind != result.ErrNone {
		_, s.dialErr = l.Failure()
	}
	if kind != result.ErrNone {
		l.Close()
		return nil, nil, kind
	}
	return l, cn, result.ErrNone
}

// flush writes what c has buffered (s.mu held, released while it writes),
// or leaves it to the flush under way, which writes it next: frames go
// in the order they were buffered, and the HPACK blocks with them.
func (x *mux) flush(c *Client) error {
	if x.writing || x.werr != nil {
		return x.werr
	}
	x.writing = true
	for len(c.out.b) > 0 && x.werr == nil {
		buf := c.out.b
		c.out.b = x.spare[:0]
		at := x.taken
		x.taken += int64(len(buf))
		x.armWrite(c)
		x.s.mu.Unlock()
		n, err := c.cs.cn.NC.Write(buf)
		x.s.mu.Lock()
		x.sent = at + int64(n)
		x.spare = buf
		if err != nil {
			x.werr = err
			c.cs.cn.NC.Close() // its reader fails every stream
		}
	}
	c.out.b = c.out.b[:0]
	x.writing = false
	x.wrote.Broadcast()
	return x.werr
}

// armWrite keeps a write deadline --timeout away, moved only when it is
// nearer than that, so that a SUT that stops reading fails the
// connection rather than holding its writer.
func (x *mux) armWrite(c *Client) {
	now := time.Now()
	if x.wdl.Sub(now) >= x.s.timeout {
		return
	}
	x.wdl = now.Add(x.s.timeout + x.s.timeout>>10)
	c.cs.cn.Raw.SetWriteDeadline(x.wdl)
}

// widen adds d to the send window of every open stream (a change of
// SETTINGS_INITIAL_WINDOW_SIZE), and wakes the bodies waiting for one.
func (x *mux) widen(d int64) {
	for _, m := range x.streams {
		m.slot.st.sendWin += d
	}
	x.wakeStalled()
}

// wakeStalled wakes the Members whose body waits for a window.
func (x *mux) wakeStalled() {
	if x.stalled == 0 {
		return
	}
	for _, m := range x.streams {
		if m.slot.st.stalled {
			select {
			case m.wake <- struct{}{}:
			default:
			}
		}
	}
}

// readShared is a shared connection's reader: it reads each frame whole
// outside the mutex, then acts on it under the mutex for the stream it
// belongs to (step, on the stream's slot), ends the streams it ends, and
// writes what acting on the frames buffered. It returns when the
// connection fails or is closed.
func (c *Client) readShared() {
	x := c.mux
	s := x.s
	for {
		h, err := c.br.Peek(9)
		if err == nil {
			if n := int(h[0])<<16 | int(h[1])<<8 | int(h[2]); n <= ourMaxFrame {
				// The whole frame, so that the step below reads nothing
				// more; its header again, as filling the buffer may
				// have moved it.
				var f []byte
				if f, err = c.br.Peek(9 + n); err == nil {
					h = f[:9]
				}
			}
		}
		s.mu.Lock()
		if x.closed {
			s.mu.Unlock()
			return
		}
		if err != nil {
			c.st = &c.own.st
			c.closeShared(c.readError(readFullError(len(h), err)))
			s.mu.Unlock()
			return
		}
		if !c.stepShared(h) {
			s.mu.Unlock()
			return
		}
		// What acting on frames buffered (acknowledgements, windows) goes
		// once the read buffer is empty, or once it fills flushAt: then
		// the reader reads no more until it went, so that a SUT that
		// sends PINGs and reads nothing cannot grow it.
		for x.writing && len(c.out.b) >= flushAt && !x.closed {
			x.wrote.Wait()
		}
		if len(c.out.b) > 0 && (c.br.Buffered() == 0 || len(c.out.b) >= flushAt) {
			x.flush(c)
		}
		s.mu.Unlock()
	}
}

// stepShared acts on the frame whose header is h, whole in the read
// buffer (s.mu held), and says whether the connection goes on.
func (c *Client) stepShared(h []byte) bool {
	x := c.mux
	id := (uint32(h[5])<<24 | uint32(h[6])<<16 | uint32(h[7])<<8 | uint32(h[8])) & (1<<31 - 1)
	size := 9 + int64(int(h[0])<<16|int(h[1])<<8|int(h[2]))
	isGoAway := http2.FrameType(h[3]) == http2.FrameGoAway
	m := x.streams[id]
	if m != nil {
		c.st, c.ans = &m.slot.st, &m.slot.ans
	} else {
		// A stream no longer open: what comes for it is dropped.
		c.own.st = stream{}
		c.own.ans.reset(0, true)
		c.useOwn()
	}
	x.frames++
	err := c.step()
	if m != nil {
		m.bytesIn += size
	}
	goaway := isGoAway && c.cs.goaway
	c.useOwn()
	if err != nil && !c.refuseShared(m, err) {
		return false
	}
	if m != nil && m.c != nil && (m.slot.st.ended || m.slot.st.reset) {
		if m.slot.st.reset && m.slot.st.code == http2.ErrCodeRefusedStream {
			m.unprocessed = true
		}
		c.end(m, nil)
	}
	if goaway { // each GOAWAY: a second may lower the last stream
		c.goAway()
	}
	x.wakeStalled()
	return !x.closed
}

// refuseShared acts on err, what a frame for m's stream (nil: none open)
// broke (s.mu held), as refuse does on a VU's own connection: a malformed
// answer, or one past a limit, resets its stream and fails its request
// alone; anything else fails the connection, after a GOAWAY for a
// connection error. It says whether the connection goes on.
func (c *Client) refuseShared(m *Member, err error) bool {
	pe, isProto := err.(*protoError)
	if m != nil && (isProto && !pe.conn || err == errLong || err == errHeadLong) {
		code := http2.ErrCodeCancel
		if isProto {
			code = pe.code
		}
		m.slot.st.reset = true
		c.fr.WriteRSTStream(m.slot.st.id, code)
		c.end(m, err)
		return true
	}
	if isProto && pe.conn {
		c.fr.WriteGoAway(0, pe.code, nil)
		c.mux.flush(c)
	}
	c.closeShared(err)
	return false
}

// goAway acts on the SUT's GOAWAY (s.mu held): the streams above its
// last are unprocessed, and no new stream opens on the connection.
func (c *Client) goAway() {
	for id, m := range c.mux.streams {
		if id > c.cs.lastID {
			m.unprocessed = true
			c.end(m, nil)
		}
	}
	c.retire()
}

// end ends m's stream (s.mu held) and hands it back to its Member; a
// retired connection whose last stream ended is closed.
func (c *Client) end(m *Member, err error) {
	x := c.mux
	delete(x.streams, m.slot.st.id)
	if m.slot.st.stalled { // its body waits for a window no longer needed
		m.slot.st.stalled = false
		x.stalled--
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
	m.c, m.err = nil, err
	x.woken++
	select {
	case m.done <- struct{}{}:
	default:
	}
	if x.retired && len(x.streams) == 0 {
		c.closeShared(nil)
	}
}

// abandon closes m's stream from the client's side (s.mu held): its
// request timed out (timedOut) or the run stopped. A connection that
// read no frame from the SUT since the stream opened, a whole --timeout
// ago, carries no new stream.
func (c *Client) abandon(m *Member, timedOut bool) {
	id := m.slot.st.id
	m.slot.st.reset = true
	if timedOut && c.mux.frames == m.framesAt {
		c.retire()
	}
	c.end(m, nil)
	if !c.mux.closed {
		c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		c.mux.flush(c)
	}
}

// retire opens no new stream on c (s.mu held); it closes once its open
// streams end.
func (c *Client) retire() {
	x := c.mux
	x.retired = true
	if x.s.cur == c {
		x.s.cur = nil
	}
	if len(x.streams) == 0 {
		c.closeShared(nil)
	}
}

// closeShared closes the shared connection (s.mu held), failing its open
// streams with err.
func (c *Client) closeShared(err error) {
	x := c.mux
	if x.closed {
		return
	}
	x.closed, x.retired = true, true
	if x.s.cur == c {
		x.s.cur = nil
	}
	delete(x.s.live, c)
	for _, m := range x.streams {
		c.end(m, err)
	}
	c.line.Close()
}

// Interrupt is the hard stop of the Member's VU, which reaches its whole
// group (Shared.Interrupt): the stop is the run's, not one VU's.
func (m *Member) Interrupt() { m.s.Interrupt() }
