package transport

import (
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Sessions is a Client that replays a WebSocket session on an upgrade pair
// (docs/websocket.md, Replaying sessions). The VUs ask for it by a type
// assertion: a Client without it sends an upgrade pair as a plain request.
type Sessions interface {
	// Session sends req (the upgrade request of pair, rewritten) on a
	// connection of its own, with a fresh Sec-WebSocket-Key, checks the
	// 101 against that key, then plays s.WS as Session says, filling res
	// as Do does for the upgrade request and out for the session (its
	// WSFail, WSSent, WSReceived; Status for a refused upgrade). The
	// connection is closed after: a WebSocket's is never reused. It
	// returns the upgrade's answer, as Do does.
	Session(req *rrpair.Request, pair *rrpair.Pair, s *Session, res, out *result.Result) result.Answer
}

// Session is what a replayed session follows besides the recording.
type Session struct {
	// WS is the recorded session.
	WS *rrpair.WebSocket
	// Recorded paces the client's messages at their recorded offsets from
	// the 101, divided by Speed (--pace recorded); otherwise each goes as
	// soon as the server messages recorded before it have arrived.
	Recorded bool
	Speed    float64
	// Payload, when set, rewrites a client text message's payload (the
	// transform chain's body rewrites); it returns the payload to send,
	// which may be p itself.
	Payload func(p []byte) []byte
	// Latency receives a WSLatency result for each client message the
	// server answered: from its due time to the next server message.
	Latency func(r result.Result)
	// Received, when set, sees each server data message in order, on the
	// caller's goroutine: its index among the session's server messages,
	// its type and payload (valid during the call), for --compare body.
	Received func(i int, typ rrpair.WSType, payload []byte)
}
