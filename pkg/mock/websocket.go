package mock

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/metrics/expo"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/websocket"
	"github.com/valyala/fasthttp"
)

// WebSocket sessions. A request that matches a recorded upgrade pair (a
// 101 answer, by the rules of any request) is answered with a 101 whose
// Sec-WebSocket-Accept answers the client's own key, and the connection,
// taken from fasthttp (RequestCtx.Hijack), then plays the recorded
// session: each server message after the client message it followed in
// the recording (WSPaceReply, the default), or at its recorded offset
// times the --latency factor (WSPaceRecorded), then the recorded close.
// permessage-deflate is never offered: the 101 names no extension, so
// the client sends and gets uncompressed frames.
//
// Bounds: a client message longer than twice the longest recorded client
// message of the session plus bodySlack (the rule of request bodies) is
// not read: the session closes with 1009; a frame RFC 6455 forbids closes
// it with 1002 (1007 for text that is not UTF-8), counted as a protocol
// error and logged. A connection holds its reader's buffer (at most that
// bound), its writer's (the longest recorded server message) and its
// session's list of messages, decoded once, their payloads read from the
// mapped file: nothing grows with the session's length.

// The pacing of a session's server messages (--ws-pace).
const (
	WSPaceReply    = "reply"
	WSPaceRecorded = "recorded"
)

// wsVolatile are the handshake's fields each client makes anew (its key,
// the accept answering it) or negotiates (version, extensions): never part
// of a signature, even when --match-header names them.
var wsVolatile = []string{"sec-websocket-key", "sec-websocket-accept", "sec-websocket-version", "sec-websocket-extensions"}

// wsCloseWait bounds how long a session waits for the client's close
// after sending its own.
const wsCloseWait = time.Second

// wsStats are the sessions' counts.
type wsStats struct {
	sessions, sent, received, protocolErrors, tooLarge, refused atomic.Int64
}

// WSReport counts the WebSocket sessions the mock played.
type WSReport struct {
	Sessions int64 `json:"sessions"`
	// MessagesSent are the recorded server messages sent; MessagesReceived
	// the client's data messages read.
	MessagesSent     int64 `json:"messages_sent"`
	MessagesReceived int64 `json:"messages_received"`
	// ProtocolErrors are sessions closed with 1002 (or 1007): a frame RFC
	// 6455 forbids. TooLarge are sessions closed with 1009: a client
	// message over its bound.
	ProtocolErrors int64 `json:"protocol_errors"`
	TooLarge       int64 `json:"too_large"`
	// Refused are upgrades that matched a recorded one but were no valid
	// WebSocket handshake (answered 400).
	Refused int64 `json:"refused"`
}

func (st *wsStats) report() *WSReport {
	r := &WSReport{Sessions: st.sessions.Load(), MessagesSent: st.sent.Load(), MessagesReceived: st.received.Load(),
		ProtocolErrors: st.protocolErrors.Load(), TooLarge: st.tooLarge.Load(), Refused: st.refused.Load()}
	if *r == (WSReport{}) {
		return nil
	}
	return r
}

// writeMetrics writes the sessions' families.
func (st *wsStats) writeMetrics(e *expo.Writer) {
	const sessions, messages = "replay_mock_websocket_sessions_total", "replay_mock_websocket_messages_total"
	e.Family(sessions, "counter", "WebSocket sessions played, and those closed for a protocol error (1002) or a message too large (1009).")
	for _, c := range []struct {
		result string
		n      *atomic.Int64
	}{{"opened", &st.sessions}, {"protocol_error", &st.protocolErrors}, {"too_large", &st.tooLarge}} {
		e.Sample(sessions, expo.Label("result", c.result), float64(c.n.Load()))
	}
	e.Family(messages, "counter", "WebSocket messages: sent (recorded server messages played), received (the clients').")
	e.Sample(messages, expo.Label("direction", "sent"), float64(st.sent.Load()))
	e.Sample(messages, expo.Label("direction", "received"), float64(st.received.Load()))
}

// text is the report's line of sessions.
func (r *WSReport) text() string {
	return fmt.Sprintf("websocket: %d sessions, %d messages sent, %d received; closed for a protocol error %d, for a message too large %d; upgrades refused %d\n",
		r.Sessions, r.MessagesSent, r.MessagesReceived, r.ProtocolErrors, r.TooLarge, r.Refused)
}

// parseWSPace reads --ws-pace.
func parseWSPace(s string) (recorded bool, err error) {
	switch s {
	case "", WSPaceReply:
		return false, nil
	case WSPaceRecorded:
		return true, nil
	}
	return false, fmt.Errorf("--ws-pace: want reply or recorded, got %q", s)
}

// isUpgradeRequest says whether a request asks for an upgrade (an Upgrade
// field): --passthrough does not send one on, as the mock relays no
// session.
func isUpgradeRequest(hs []rrpair.Header) bool {
	for _, h := range hs {
		if rrpair.EqualFold(h.Name, "upgrade") {
			return true
		}
	}
	return false
}

// upgrade answers ctx, which matched the upgrade pair sc.pair: a 400 when
// the request is no WebSocket handshake, else the 101 and the session,
// played on the connection fasthttp hands over.
func (s *Server) upgrade(ctx *fasthttp.RequestCtx, sc *scratch, cs *connState) {
	key, err := websocket.CheckRequest(func(name string) string { return string(ctx.Request.Header.Peek(name)) })
	var rec *rrpair.WebSocket
	if err == nil {
		rec, err = sc.pair.WebSocket()
	}
	if err != nil {
		s.ws.refused.Add(1)
		ctx.SetStatusCode(400)
		ctx.SetBodyString(fmt.Sprintf("replay mock: the request matches the recorded upgrade of line %d, but: %v", sc.pair.Line, err))
		ctx.SetConnectionClose()
		return
	}
	if rec == nil {
		rec = &rrpair.WebSocket{}
	}
	ss := newWSSession(s, rec, cs)
	proto := subprotocol(string(ctx.Request.Header.Peek("Sec-WebSocket-Protocol")), string(headerValue(sc.pair.Res.Headers, "sec-websocket-protocol")))
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		ss.conn = c
		ss.run(key, proto)
	})
}

// subprotocol is the subprotocol the 101 names, from the client's offer
// (a comma-separated list) and the recorded 101's choice: the recorded one
// when the client offers it, else, when the recorded server chose one,
// the client's first (a client that offered subprotocols fails a 101
// that names none, as Node's ws does); "" when the recording chose none or
// the client offers none.
func subprotocol(offered, recorded string) string {
	first := ""
	for _, p := range strings.Split(offered, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if strings.EqualFold(p, strings.TrimSpace(recorded)) {
			return p
		}
		if first == "" {
			first = p
		}
	}
	if strings.TrimSpace(recorded) == "" {
		return ""
	}
	return first
}

// wsSession is one session played to a client.
type wsSession struct {
	s     *Server
	cs    *connState
	conn  net.Conn
	msgs  []rrpair.WSMessage
	limit int64

	mu       sync.Mutex // guards w and closeAt: the player and the reader both write
	w        *websocket.Writer
	closeAt  time.Time // when a close frame was sent (zero: not yet)
	got      atomic.Int64
	moved    chan struct{} // a client message came (capacity 1)
	readDone chan struct{} // the reader has ended
}

func newWSSession(s *Server, rec *rrpair.WebSocket, cs *connState) *wsSession {
	longest := 0
	for _, m := range rec.Messages {
		if m.From == rrpair.WSClient {
			longest = max(longest, len(m.Data))
		}
	}
	// The payloads point into the mapped file (or were unescaped by the
	// decoder), not into the scratch: they outlive the handler, and the
	// file stays mapped until every connection is done (Close).
	return &wsSession{s: s, cs: cs, msgs: rec.Messages, limit: int64(2*longest + bodySlack),
		moved: make(chan struct{}, 1), readDone: make(chan struct{})}
}

// run answers the 101 (naming proto, when not empty) and plays the
// session until it closes.
func (ss *wsSession) run(key, proto string) {
	s := ss.s
	ss.conn.SetWriteDeadline(time.Now().Add(s.o.IdleTimeout))
	var extra []string
	if proto != "" {
		extra = append(extra, "Sec-WebSocket-Protocol: "+proto)
	}
	if _, err := ss.conn.Write(websocket.AppendAnswer(nil, key, extra...)); err != nil {
		return
	}
	s.ws.sessions.Add(1)
	ss.w = websocket.NewWriter(ss.conn, websocket.Server)
	played := make(chan struct{})
	go func() {
		defer close(played)
		ss.play()
	}()
	ss.read()
	close(ss.readDone)
	<-played
	lingerClose(ss.conn, ss.cs.raw)
}

// read reads the client's messages until the session ends: pings
// answered, data messages counted (the player waits on them), a close
// answered with the same code.
func (ss *wsSession) read() {
	s := ss.s
	r := websocket.NewReader(ss.conn, websocket.ReaderOptions{Sender: websocket.Client, MaxMessage: ss.limit})
	for {
		ss.setReadDeadline()
		if s.closing.Load() {
			ss.close(websocket.CloseGoingAway, "replay mock is stopping")
			return
		}
		m, err := r.ReadMessage()
		if err != nil {
			ss.readFailed(err)
			return
		}
		switch m.Opcode {
		case websocket.OpPing:
			ss.write(websocket.OpPong, m.Payload)
		case websocket.OpPong:
		case websocket.OpClose:
			code := m.Code
			if code == websocket.CloseNoStatus {
				code = websocket.CloseNormal
			}
			ss.close(code, "")
			return
		default:
			s.ws.received.Add(1)
			ss.got.Add(1)
			select {
			case ss.moved <- struct{}{}:
			default:
			}
		}
	}
}

// setReadDeadline gives the next read --idle-timeout, or what is left of
// wsCloseWait once a close was sent.
func (ss *wsSession) setReadDeadline() {
	ss.mu.Lock() // under the lock: close sets the deadline too
	defer ss.mu.Unlock()
	if ss.closeAt.IsZero() {
		ss.conn.SetReadDeadline(time.Now().Add(ss.s.o.IdleTimeout))
		return
	}
	ss.conn.SetReadDeadline(ss.closeAt.Add(wsCloseWait))
}

// readFailed ends the session on a read error: a message over the bound
// (1009), a protocol error (1002, 1007), a timeout (1001), the client
// gone.
func (ss *wsSession) readFailed(err error) {
	s := ss.s
	var tooLarge *websocket.TooLargeError
	var pe *websocket.ProtocolError
	var ne net.Error
	switch {
	case errors.As(err, &tooLarge):
		s.ws.tooLarge.Add(1)
		ss.close(websocket.CloseTooBig, "message over "+strconv.FormatInt(ss.limit, 10)+" bytes")
	case errors.As(err, &pe):
		s.ws.protocolErrors.Add(1)
		if held, ok := s.missLog.allow(s.o.Now()); ok {
			s.o.Log.Warn().Err(err).Str("client", ss.cs.raw.RemoteAddr().String()).Int64("held_back", held).Msg("websocket session closed: protocol error")
		}
		ss.close(pe.Code, pe.Reason)
	case errors.As(err, &ne) && ne.Timeout():
		reason := "idle"
		if s.closing.Load() { // the stop's drain cut the read short
			reason = "replay mock is stopping"
		}
		ss.close(websocket.CloseGoingAway, reason)
	}
}

// write sends one message, unless a close was sent already.
func (ss *wsSession) write(op websocket.Opcode, payload []byte) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.closeAt.IsZero() {
		return false
	}
	ss.conn.SetWriteDeadline(time.Now().Add(ss.s.o.IdleTimeout))
	return ss.w.WriteMessage(op, payload) == nil
}

// close sends a close frame, once.
func (ss *wsSession) close(code uint16, reason string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.closeAt.IsZero() {
		return
	}
	ss.closeAt = time.Now()
	ss.conn.SetWriteDeadline(ss.closeAt.Add(wsCloseWait))
	ss.w.WriteClose(code, reason)
	ss.conn.SetReadDeadline(ss.closeAt.Add(wsCloseWait)) // the reader waits for the client's close that long
}

// play sends the recorded server messages in order, each when it is due,
// and the recorded server close; a recorded client close ends it (the
// reader answers the client's).
func (ss *wsSession) play() {
	recorded, _ := parseWSPace(ss.s.o.WSPace)
	start := time.Now()
	var need int64 // client messages before the next server message
	for i := range ss.msgs {
		m := &ss.msgs[i]
		if m.From == rrpair.WSClient {
			if m.Type == rrpair.WSClose {
				return
			}
			need++
			continue
		}
		if !ss.due(recorded, need, start.Add(time.Duration(float64(m.Offset)*ss.s.latency))) {
			return
		}
		if m.Type == rrpair.WSClose {
			code := uint16(m.Code)
			if code == 0 {
				code = websocket.CloseNoStatus
			}
			ss.close(code, m.Reason)
			return
		}
		op := websocket.OpText
		if m.Type == rrpair.WSBinary {
			op = websocket.OpBinary
		}
		if !ss.write(op, m.Data) {
			return
		}
		ss.s.ws.sent.Add(1)
	}
}

// due waits until a server message is due: the client has sent need
// messages (reply pacing), or at is reached (recorded pacing). false when
// the session ended first.
func (ss *wsSession) due(recorded bool, need int64, at time.Time) bool {
	if recorded {
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ss.readDone:
			return false
		}
	}
	for ss.got.Load() < need {
		select {
		case <-ss.moved:
		case <-ss.readDone:
			return false
		}
	}
	return true
}
