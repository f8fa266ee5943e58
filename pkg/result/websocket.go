package result

// A WebSocket session replayed (docs/websocket.md, Replaying sessions) is
// recorded as results too, on the one queue the requests take, so that the
// recorder folds it in order with them and the hot path keeps its one
// shape: the upgrade request is a Result like any other (its status 101,
// or the status that refused it), and beside it
//
//   - a session Result (WS == WSSession): how the session ended (WSFail),
//     the data messages sent and received (WSSent, WSReceived), and the
//     upgrade's status (Status): 101 for a session opened (or a 101 that
//     did not answer the key: WSRefused), the status that refused it, or 0
//     without an answer;
//   - a latency Result per client message answered (WS == WSLatency):
//     from when the message was due (Due) to when the next server message
//     arrived (End).
//
// Neither counts as a request.

// The kinds of Result.WS.
const (
	WSNone    uint8 = iota // a request
	WSSession              // a WebSocket session ended
	WSLatency              // a client message and the server message that followed it
)

// WSFail is how a replayed session ended: WSOK, or the kind of its
// failure. The names are the keys of the summary's
// "websocket.sessions_failed" object.
type WSFail uint8

// The session failure kinds.
const (
	WSOK WSFail = iota
	// WSRefused: the upgrade was answered with a status other than 101
	// (the session Result's Status), or a 101 that did not answer the key.
	WSRefused
	// WSClosedEarly: the server closed the session (a close frame or the
	// connection) before the recorded messages were exchanged.
	WSClosedEarly
	// WSTimeout: the request timeout passed while the session waited for
	// the server (a message it recorded, or its close).
	WSTimeout
	// WSTooLarge: a server message over the answer limit (--max-answer-body)
	// ended the session.
	WSTooLarge
	// WSProtocol: the server broke RFC 6455 (a malformed frame).
	WSProtocol
	// WSCloseError: the recorded messages were exchanged, then the server
	// closed with a code that says it failed (1011, 1008...), not the one
	// it closed with in the recording.
	WSCloseError
	// WSError: no session: the upgrade request failed without an answer
	// (its kind is the request's), or the connection failed during the
	// session (reset, cancelled).
	WSError
	numWSFails
)

// NumWSFails is the number of WSFail values, WSOK included, for arrays
// indexed by kind.
const NumWSFails = int(numWSFails)

var wsFailNames = [...]string{"", "refused", "closed_early", "timeout", "too_large", "protocol", "close_error", "error"}

// String is the kind's name as the summary spells it ("" for WSOK).
func (k WSFail) String() string {
	if int(k) < len(wsFailNames) {
		return wsFailNames[k]
	}
	return "error"
}

// WSFailNames are the names of the failure kinds, WSRefused to WSError,
// in order.
func WSFailNames() []string { return wsFailNames[1:] }
