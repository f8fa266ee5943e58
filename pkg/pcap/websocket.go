package pcap

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/websocket"
)

// maxWSMessage bounds one WebSocket message held while its frames arrive
// (as a recorder's --max-body): a message over it is counted, not kept,
// and its side is read no further.
const maxWSMessage = 16 << 20

// wsconn follows the WebSocket session that an upgrade's 101 began on a
// connection (Options.WebSockets): each side's bytes are gathered until
// they hold a whole message (or a control frame), which the framer then
// reads; the messages are kept on the upgrade pair, written when the
// connection ends.
type wsconn struct {
	c     *conn
	x     *h1ex
	res   *rawhttp.Message
	start int64 // capture time of the 101
	side  [2]wsSide
	ws    rrpair.WebSocket
	held  int
	done  bool
}

// wsSide is one side of a session: the bytes of its frames not yet a
// whole message, where the scan of them stands, and the framer that reads
// whole messages from queue.
type wsSide struct {
	from    websocket.Sender
	pending []byte
	scan    int
	queue   bytes.Reader
	r       *websocket.Reader
	stopped bool
}

// webSocket turns the connection of exchange x, whose upgrade m answered
// 101 at capture time ts, into a WebSocket session.
func (h *h1conn) webSocket(x *h1ex, m *rawhttp.Message, ts int64) {
	x.x.end = ts
	w := &wsconn{c: h.c, x: x, res: m, start: ts, ws: rrpair.WebSocket{Messages: []rrpair.WSMessage{}}}
	d, err := websocket.ParseExtensions(rawhttp.Values(m.Headers, "sec-websocket-extensions")...)
	for i, from := range []websocket.Sender{websocket.Client, websocket.Server} {
		s := &w.side[i]
		s.from = from
		s.r = websocket.NewReader(&s.queue, websocket.ReaderOptions{Sender: from, MaxMessage: maxWSMessage, Deflate: d, NoUTF8Check: true})
		s.stopped = err != nil
	}
	if err != nil {
		w.ws.Error = err.Error()
	}
	h.c.ws = w
	h.c.proto = [2]proto{protoWS, protoWS}
	h.req.reset(h1Done)
	h.res.reset(h1Done)
}

// switched takes a connection on which HTTP ended with exchange x, answered
// m at capture time ts (a 101, a CONNECT's 2xx): a WebSocket session read
// when Options.WebSockets asks, else a tunnel passed over.
func (h *h1conn) switched(x *h1ex, m *rawhttp.Message, ts int64) {
	if m.Status == 101 && h.keepsWebSocket(x) {
		h.webSocket(x, m, ts)
		return
	}
	h.tunnel(x, m)
}

// keepsWebSocket says whether the session that the 101 to x begins is
// read: Options.WebSockets, and x asked for a WebSocket.
func (h *h1conn) keepsWebSocket(x *h1ex) bool {
	return h.c.a.opt.WebSockets && x.req != nil && rawhttp.HasToken(x.req.Headers, "upgrade", "websocket")
}

func (w *wsconn) sideOf(client bool) *wsSide {
	if client {
		return &w.side[0]
	}
	return &w.side[1]
}

// data takes bytes of one side in order, at capture time ts.
func (w *wsconn) data(client bool, b []byte, ts int64) {
	s := w.sideOf(client)
	if s.stopped || w.done {
		return
	}
	s.pending = append(s.pending, b...)
	w.hold(len(b))
	for {
		size, fin, op, ok := websocket.FrameSize(s.pending[s.scan:])
		if !ok || int64(len(s.pending)-s.scan) < size {
			if int64(len(s.pending)) > maxWSMessage+64<<10 || ok && size > maxWSMessage+14 {
				w.stop(s, fmt.Sprintf("%s: a message over the bound of %d bytes: the side's later messages not read", s.from, maxWSMessage), true)
			}
			return
		}
		s.scan += int(size)
		if fin || op.IsControl() {
			if w.read(s, ts); s.stopped {
				return
			}
		}
	}
}

// read hands the framer the frames gathered, which end a message, and
// keeps the message it reads.
func (w *wsconn) read(s *wsSide, ts int64) {
	s.queue.Reset(s.pending[:s.scan])
	m, err := s.r.ReadMessage()
	var tooLarge *websocket.TooLargeError
	switch {
	case err == nil:
		w.keep(s, &m, ts)
	case errors.As(err, &tooLarge), errors.Is(err, websocket.ErrContextLost):
		websocket.CountOversize(&w.ws, s.from)
	default:
		w.stop(s, s.from.String()+": "+err.Error(), false)
		return
	}
	if s.queue.Len() != 0 { // the framer reads whole messages: none is left
		w.stop(s, fmt.Sprintf("%s: frames left over after a message", s.from), false)
		return
	}
	w.hold(-s.scan)
	s.pending = append(s.pending[:0], s.pending[s.scan:]...)
	s.scan = 0
}

// keep adds message m of side s, whole at capture time ts.
func (w *wsconn) keep(s *wsSide, m *websocket.Message, ts int64) {
	at := max(time.Duration(ts-w.start), 0)
	if n := len(w.ws.Messages); n > 0 {
		at = max(at, w.ws.Messages[n-1].Offset)
	}
	w.hold(websocket.Keep(&w.ws, s.from, m, at))
}

// stop reads side s no further, for why (oversize: a message over the
// bound, counted), and gives its bytes up.
func (w *wsconn) stop(s *wsSide, why string, oversize bool) {
	if oversize {
		websocket.CountOversize(&w.ws, s.from)
	}
	if w.ws.Error == "" {
		w.ws.Error = why
	}
	s.stopped = true
	w.hold(-len(s.pending))
	s.pending, s.scan = nil, 0
}

// gap takes n bytes of one side the capture lost: the side is read no
// further.
func (w *wsconn) gap(client bool, n int, kind string, at place) {
	s := w.sideOf(client)
	if !s.stopped {
		w.stop(s, fmt.Sprintf("%s: %s", s.from, lostBytes(n, kind, at)), false)
	}
}

// shed gives up what the session holds of messages under way, to keep
// within --max-buffer.
func (w *wsconn) shed() {
	for i := range w.side {
		if s := &w.side[i]; !s.stopped && len(s.pending) > 0 {
			w.stop(s, fmt.Sprintf("%s: given up to keep within --max-buffer (%d bytes)", s.from, w.c.a.opt.MaxBuffer), false)
		}
	}
}

// close writes the upgrade pair with its session, once: the connection
// ended.
func (w *wsconn) close() {
	if w.done {
		return
	}
	w.done = true
	r := h1Record(w.x.req, false)
	r.Status, r.ResHeaders = w.res.Status, keptFields(w.res.Headers, false)
	ws := w.ws
	r.WebSocket = &ws
	w.c.a.out.st.WebSockets++
	w.c.a.out.write(w.c, r, w.x.x, "HTTP/"+w.x.req.Version)
	for i := range w.side {
		w.hold(-len(w.side[i].pending))
		w.side[i].pending = nil
	}
	w.hold(-w.held)
}

// hold counts n more bytes held by the session (less, when n is
// negative).
func (w *wsconn) hold(n int) {
	w.held += n
	w.c.hold(n)
}
