// Package ws replays a recorded WebSocket session on a connection a 101
// handed over (docs/websocket.md, Replaying sessions): the client's
// messages in order, paced after the server's or at their recorded
// offsets, the server's read and counted (pings answered), the close as
// recorded. It speaks the protocol with pkg/websocket's framer; the
// upgrade itself is HTTP/1.1's (pkg/transport/http1, Client.Upgrade), and
// pkg/transport/negotiate puts the two together as a transport.Sessions.
package ws

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/websocket"
)

// SetKey gives req, an upgrade request, a fresh Sec-WebSocket-Key in the
// place of the recorded one (a replayed key is a replayed nonce), and the
// fields an upgrade needs where the recording lacks them (Upgrade,
// Sec-WebSocket-Version); it returns the key, which the 101 must answer.
func SetKey(req *rrpair.Request) string {
	key := websocket.NewKey()
	var hasKey, hasUpgrade, hasVersion bool
	for i := range req.Headers {
		h := &req.Headers[i]
		switch {
		case rrpair.EqualFold(h.Name, "sec-websocket-key"):
			h.Value, hasKey = []byte(key), true
		case rrpair.EqualFold(h.Name, "upgrade"):
			hasUpgrade = true
		case rrpair.EqualFold(h.Name, "sec-websocket-version"):
			hasVersion = true
		}
	}
	if !hasUpgrade {
		req.Headers = append(req.Headers, rrpair.Header{Name: []byte("Upgrade"), Value: []byte("websocket")})
	}
	if !hasVersion {
		req.Headers = append(req.Headers, rrpair.Header{Name: []byte("Sec-WebSocket-Version"), Value: []byte("13")})
	}
	if !hasKey {
		req.Headers = append(req.Headers, rrpair.Header{Name: []byte("Sec-WebSocket-Key"), Value: []byte(key)})
	}
	return key
}

// Opened judges the upgrade's outcome, res (the upgrade request's
// result), into out, the session's: true when a 101 answered key and the
// session may be played; otherwise out says why not (WSError without an
// answer, WSTimeout when the upgrade's answer did not come in time, WSRefused with the status of one that refused, or of a 101 that
// did not answer the key).
func Opened(res *result.Result, get func(name string) string, key string, out *result.Result) bool {
	switch res.Err {
	case result.ErrNone:
	case result.ErrTimeout:
		out.WSFail = result.WSTimeout
		return false
	default:
		out.WSFail = result.WSError
		return false
	}
	if websocket.CheckAnswer(int(res.Status), get, key) != nil {
		out.WSFail, out.Status = result.WSRefused, res.Status
		return false
	}
	return true
}

// Conn is the upgraded connection a session plays on.
type Conn struct {
	NC net.Conn
	// R reads NC: it may hold the server's first bytes after the 101.
	R *bufio.Reader
	// Get reads a field of the 101 ("" when absent).
	Get func(name string) string
	// Now is the run's clock (Unix ns); Cut reports the hard stop (every
	// deadline set must then be one long past).
	Now func() int64
	Cut func() bool
	// Timeout bounds each wait for the server (--timeout).
	Timeout time.Duration
	// MaxMessage bounds a server message (the answer limit, --max-answer-body).
	MaxMessage int64
}

// event is what the reading goroutine saw: a data message (at, its
// arrival; with Session.Received, its type and a copy of its payload), a
// ping (its payload, for the pong), the server's close, or the end of the
// direction (err).
type event struct {
	at      int64
	ping    bool
	closed  bool
	code    uint16 // the close's code (websocket.CloseNoStatus: none)
	err     error
	typ     rrpair.WSType
	payload []byte
}

// The reading goroutine queues at most inboxEvents events, or inboxBytes
// of payload copies (one event whatever its size), before it waits for the
// VU to take them: a server that writes while the VU writes a message it
// does not yet read is read on meanwhile, so that neither side's write
// waits for the other's (RFC 6455 lets both send at once), and what is
// held stays bounded however chatty the server.
const (
	inboxEvents = 4096
	inboxBytes  = 16 << 20
)

// inbox hands the reading goroutine's events to the VU's.
type inbox struct {
	mu    sync.Mutex
	q     []event
	bytes int
	wake  chan struct{} // something was queued (capacity 1)
	room  chan struct{} // the queue was emptied (capacity 1)
}

func newInbox() *inbox {
	return &inbox{wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// put queues e, first waiting while the queue is full.
func (in *inbox) put(e event) {
	in.mu.Lock()
	for len(in.q) >= inboxEvents || (len(in.q) > 0 && in.bytes+len(e.payload) > inboxBytes) {
		in.mu.Unlock()
		<-in.room
		in.mu.Lock()
	}
	in.q = append(in.q, e)
	in.bytes += len(e.payload)
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// take moves the events queued into dst (emptied first) and returns it.
func (in *inbox) take(dst []event) []event {
	in.mu.Lock()
	dst, in.q = in.q, dst[:0]
	in.bytes = 0
	in.mu.Unlock()
	select {
	case in.room <- struct{}{}:
	default:
	}
	return dst
}

// player is one session under way.
type player struct {
	c   *Conn
	s   *transport.Session
	out *result.Result

	w *websocket.Writer // written on the VU's goroutine only: the messages and the pongs

	in       *inbox
	batch    []event // the events being taken, kept for the next batch
	over     bool    // the session is played: pings are no longer answered
	total    int     // the server's recorded data messages
	t0       int64   // the 101's arrival
	arrivals []int64 // of the server's data messages, in order, up to the recorded count
	received int     // the server's data messages, all of them
	pings    int     // the server's pings
	// expecting counts the client messages sent since the server's last
	// data message that the recording has answered: unanswered at the end.
	expecting int
	pending   []int64 // due times of the client messages not yet answered
	closed    bool    // the server closed (a close frame or the connection)
	code      uint16  // the code of the server's close frame; 0 without one
	err       error   // the direction ended on an error
	wrote     bool    // the client's close went
}

// Play plays s on c, from t0 (when the 101 arrived), and fills out's
// WSFail, WSSent and WSReceived; a 101 that took an extension the client
// cannot read (from the recorded offer, sent as it was) is refused; and
// WSPings. It returns when the session ended, with
// its reading goroutine gone: the caller closes the connection then, and
// may reuse c.R.
func Play(c *Conn, s *transport.Session, t0 int64, out *result.Result) {
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	p := &player{c: c, s: s, out: out, t0: t0, in: newInbox(), total: serverMessages(s.WS.Messages)}
	p.w = websocket.NewWriter(c.NC, websocket.Client)
	ext, err := websocket.ParseExtensions(c.Get("Sec-WebSocket-Extensions"))
	if err != nil { // an extension the 101 took that the client cannot read: the handshake failed
		out.WSFail = result.WSRefused
		return
	}
	c.NC.SetReadDeadline(time.Time{}) // the waits are the player's, on its timers
	p.checkCut()
	rd := websocket.NewReader(c.R, websocket.ReaderOptions{Sender: websocket.Server, MaxMessage: c.MaxMessage, Deflate: ext})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.read(rd)
	}()
	out.WSFail = p.play()
	// The reading goroutine ends on a deadline long past; what it still
	// queues is taken (which also frees it when it waits for room).
	p.over = true
	c.NC.SetReadDeadline(time.Unix(1, 0))
	for gone := false; !gone; {
		select {
		case <-p.in.wake:
			p.takeAll()
		case <-done:
			gone = true
		}
	}
	p.takeAll() // what it queued before it went
	out.WSReceived, out.WSPings, out.WSUnanswered = uint32(p.received), uint32(p.pings), uint32(p.expecting)
}

// checkCut keeps the hard stop's deadline when a deadline was just set.
func (p *player) checkCut() {
	if p.c.Cut() {
		p.c.NC.SetDeadline(time.Unix(1, 0))
	}
}

// read is the reading goroutine: server messages until the close, the
// end of the connection or an error. It never writes: a ping is queued
// for the VU's goroutine to answer, so that a server that does not read
// while the VU writes cannot stop the reading too.
func (p *player) read(rd *websocket.Reader) {
	for {
		m, err := rd.ReadMessage()
		if err != nil {
			p.in.put(event{err: err})
			return
		}
		switch m.Opcode {
		case websocket.OpPing:
			p.in.put(event{ping: true, payload: append([]byte(nil), m.Payload...)})
		case websocket.OpPong:
		case websocket.OpClose:
			p.in.put(event{closed: true, code: m.Code, at: p.c.Now()})
			return
		default:
			e := event{at: p.c.Now()}
			if p.s.Received != nil { // seen on the VU's goroutine (take)
				e.payload = append([]byte(nil), m.Payload...)
				if m.Opcode == websocket.OpBinary {
					e.typ = rrpair.WSBinary
				}
			}
			p.in.put(e)
		}
	}
}

// write writes with a write deadline of the request timeout.
func (p *player) write(f func(w *websocket.Writer) error) error {
	p.c.NC.SetWriteDeadline(time.Now().Add(p.c.Timeout))
	p.checkCut()
	return f(p.w)
}

// takeAll folds the events queued into the session, in order.
func (p *player) takeAll() {
	p.batch = p.in.take(p.batch)
	for i := range p.batch {
		p.take(p.batch[i])
		p.batch[i] = event{} // its payload is not kept past the batch
	}
}

// take folds an event of the reading goroutine into the session: a server
// data message answers the client messages pending (their latencies).
func (p *player) take(e event) {
	switch {
	case e.ping:
		p.pings++
		// Answered while the session is played, and not after the
		// client's close (RFC 6455 5.5.1); a failed write is the next
		// write's or read's to report.
		if !p.over && !p.wrote {
			p.write(func(w *websocket.Writer) error { return w.WriteMessage(websocket.OpPong, e.payload) })
		}
	case e.err != nil:
		p.closed = true
		if !errors.Is(e.err, net.ErrClosed) && !isEOF(e.err) {
			p.err = e.err
		}
	case e.closed:
		p.closed, p.code = true, e.code
	default:
		if p.s.Received != nil {
			p.s.Received(p.received, e.typ, e.payload)
		}
		p.received++
		if len(p.arrivals) < p.total { // only the recorded ones pace the client: a chatty server grows nothing
			p.arrivals = append(p.arrivals, e.at)
		}
		for _, due := range p.pending {
			if p.s.Latency != nil {
				p.s.Latency(result.Result{WS: result.WSLatency, Due: due, Sent: due, End: e.at})
			}
		}
		p.pending = p.pending[:0]
		p.expecting = 0
	}
}
