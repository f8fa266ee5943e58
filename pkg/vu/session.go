package vu

import (
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport"
)

// PayloadRewriter is a Rewriter that also rewrites a WebSocket client's
// text messages (the transform chain's body rewrites: timestamps,
// correlation, fresh values), on VU vu, for the upgrade pair's session. It
// returns the payload to send, which may be payload itself.
type PayloadRewriter interface {
	RewritePayload(vu int, payload []byte, pair *rrpair.Pair) []byte
}

// SessionObserver is an Observer that also sees the server's data
// messages of a WebSocket session (the comparer, --compare body): on VU
// vu, in the session of pair, a message of type typ, its payload valid
// during the call, with the recorded server data message of the same rank
// (nil when the server sent more than were recorded). It is called on the
// VU's goroutine, as the session takes the message in.
type SessionObserver interface {
	ObserveMessage(vu int, pair *rrpair.Pair, recorded *rrpair.WSMessage, typ rrpair.WSType, payload []byte)
}

// wsState is what a VU keeps to play WebSocket sessions: its client's
// Sessions (nil when the transport plays none) and the session's settings,
// built once.
type wsState struct {
	sessions transport.Sessions
	session  transport.Session
	out      result.Result
	// servers are the indexes of the session's recorded server data
	// messages, for the SessionObserver.
	servers []int
}

// initSessions sets the VU up for the sessions of upgrade pairs, when its
// client plays them.
func (v *vu) initSessions() {
	sc, ok := v.client.(transport.Sessions)
	if !ok {
		return
	}
	cfg := v.r.cfg
	v.ws = &wsState{sessions: sc}
	s := &v.ws.session
	s.Recorded, s.Speed = cfg.Model == schedule.Recorded, cfg.Speed
	if s.Speed <= 0 {
		s.Speed = 1
	}
	s.Latency = v.wsLatency
	if pr, ok := v.r.pool.Rewriter.(PayloadRewriter); ok {
		s.Payload = func(p []byte) []byte { return pr.RewritePayload(v.id, p, &v.pair) }
	}
	for _, o := range v.r.pool.Observers {
		if so, ok := o.(SessionObserver); ok {
			s.Received = func(i int, typ rrpair.WSType, p []byte) {
				so.ObserveMessage(v.id, &v.pair, v.recordedServer(i), typ, p)
			}
		}
	}
}

// recordedServer is the session's recorded server data message i; nil
// past the last.
func (v *vu) recordedServer(i int) *rrpair.WSMessage {
	if i >= len(v.ws.servers) {
		return nil
	}
	return &v.ws.session.WS.Messages[v.ws.servers[i]]
}

// wsLatency records a client message's latency to the server's answer.
func (v *vu) wsLatency(r result.Result) {
	r.VU, r.Endpoint = uint32(v.id), v.pair.Endpoint
	v.r.pool.Sink.Record(r)
}

// session sends the current pair, an upgrade pair with a recorded session,
// and plays the session; ok false when the pair is not one (or the VU's
// client plays no sessions), for do to send it as a plain request.
func (v *vu) session(req *rrpair.Request) (ans result.Answer, ok bool) {
	if v.ws == nil || v.pair.WebSocketRaw == nil || v.hop {
		return nil, false
	}
	rec, err := v.pair.WebSocket()
	if err != nil || rec == nil {
		return nil, false
	}
	v.ws.session.WS = rec
	if v.ws.session.Received != nil {
		v.ws.servers = v.ws.servers[:0]
		for i := range rec.Messages {
			if m := &rec.Messages[i]; m.From == rrpair.WSServer && m.Type != rrpair.WSClose {
				v.ws.servers = append(v.ws.servers, i)
			}
		}
	}
	out := &v.ws.out
	*out = result.Result{VU: uint32(v.id), Endpoint: v.pair.Endpoint, Due: v.res.Due}
	ans = v.ws.sessions.Session(req, &v.pair, &v.ws.session, &v.res, out)
	if out.WS == result.WSSession {
		out.Sent, out.End = v.res.Sent, v.r.nanos()
		v.r.pool.Sink.Record(*out)
	}
	return ans, true
}
