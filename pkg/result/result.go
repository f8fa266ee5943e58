// Package result is the vocabulary of what a run emits, shared by the
// engine that produces it (vu, the transports), the rewriters that learn
// from it (transform) and the report that folds it (report): the
// fixed-size Result of one request and its error kinds, the run's own
// counters, a read-only view of a live answer (Answer), and the
// interfaces through which results, answers and failures are handed on
// (Sink, Observer, FailureSink). It imports nothing of the project but
// the file format, so that none of those rooms depends on another.
package result

// ErrorKind classifies why a request failed without an HTTP response.
// The names are the keys of the summary's "errors" object (docs/design.md, Counting).
type ErrorKind uint8

// The error kinds. ErrNone means an HTTP response was read (its status may
// still be ≥ 400, which the report counts as failed).
const (
	ErrNone      ErrorKind = iota
	ErrConnect             // never reached the SUT: dial or resolve failed
	ErrTimeout             // --timeout passed before the answer was complete
	ErrReset               // connection reset or broken pipe
	ErrEOF                 // the SUT closed the connection before a complete answer
	ErrTLS                 // TLS handshake or record error
	ErrCancelled           // cut off by the stop (grace expired)
	ErrOther               // anything else, such as a malformed response
	// ErrLocal is the generator's own limit, never the SUT's: no file
	// descriptor (EMFILE, ENFILE), no local port (EADDRNOTAVAIL) or no
	// buffer (ENOBUFS) left on this machine. Appended last so that the
	// numbers of the kinds before it stay.
	ErrLocal
	// The HTTP/2 kinds (appended, so that the numbers before them stay).
	ErrStreamReset // the SUT reset the request's stream (RST_STREAM, with a code other than REFUSED_STREAM after the retry)
	ErrGoAway      // the SUT sent GOAWAY and the request was in flight on a stream it may have processed
	ErrFlowControl // the request body could not be sent within --timeout: the SUT's flow-control window stayed closed
	ErrNoHTTP2     // HTTP/2 was needed (a gRPC pair, --h2c, --http2 on) and the SUT did not speak it
	// ErrProtocol is an HTTP/2 answer RFC 9113 calls malformed (§8.1.1,
	// §8.2: fields a client must not accept, a content-length the DATA
	// disagrees with, a 101) or a connection error of the SUT's (a frame
	// over the advertised size, data past a window, a bad header
	// compression): the stream is reset, or the connection closed, as the
	// RFC classes it. Appended, so that the numbers before it stay.
	ErrProtocol
	numErrorKinds
)

// NumErrorKinds is the number of ErrorKind values, ErrNone included, for
// arrays indexed by kind.
const NumErrorKinds = int(numErrorKinds)

var errorKindNames = [...]string{"", "connect", "timeout", "reset", "eof", "tls", "cancelled", "other", "local",
	"stream_reset", "goaway", "flow_control", "no_http2", "protocol"}

// String returns the kind's name as the summary spells it ("" for ErrNone).
func (k ErrorKind) String() string {
	if int(k) < len(errorKindNames) {
		return errorKindNames[k]
	}
	return "other"
}

// Result is the fixed-size record of one request begun by a VU. VUs hand it
// to a Sink by value; it holds no pointers, so recording it allocates nothing.
//
// Times are Unix nanoseconds on the run's clock. Latency is End−Due (it runs
// from when the request was due, so a late start is not hidden: no
// coordinated omission); service time is End−Sent.
type Result struct {
	Due      int64 // when the request was due to start
	Sent     int64 // when its first byte was written (= End if never written)
	End      int64 // when the last byte of the answer was read, or the error
	BytesOut int64 // request bytes written to the socket
	BytesIn  int64 // response bytes read from the socket
	VU       uint32
	Status   uint16    // HTTP status; 0 unless Err is ErrNone
	Endpoint uint16    // index into the file's endpoint table
	Err      ErrorKind // ErrNone when a response was read
	// Written reports that at least one byte of the request reached the
	// socket: a request cut off before that never reached the SUT.
	Written bool
	// Reconnect reports that this request opened a connection replacing an
	// earlier one of the same VU (not counted with --no-connection-reuse).
	Reconnect bool
	// Connected reports that this request opened a new connection.
	Connected bool
	// Downgraded reports a pair recorded as HTTP/2 sent as HTTP/1.1.
	Downgraded bool
	// Upgraded reports a pair recorded as HTTP/1.x (or without a version)
	// sent as HTTP/2.
	Upgraded bool
	// Proto is the protocol of the connection the request went out on:
	// ProtoHTTP1 or ProtoHTTP2 (0 when no connection was had).
	Proto uint8
	// Retried reports the one retry replay makes: the SUT declared the
	// request unprocessed (an HTTP/2 GOAWAY above its stream, or
	// REFUSED_STREAM) and it was sent again, once, on a new connection.
	// The request is counted once; this result is the second attempt's.
	Retried bool
	// GRPC reports an answer to a gRPC pair (rrpair.Pair.IsGRPC) whose
	// status GRPCStatus holds: from grpc-status in the trailers (or the
	// headers of a Trailers-Only answer), or mapped from the HTTP status
	// when the answer had none. 0 (OK) is success, anything else failure.
	GRPC       bool
	GRPCStatus uint8
	// Redirect reports a request that followed a redirect
	// (--follow-redirects), not one of the file.
	Redirect bool
	// RedirectLimit reports a request whose answer asked for one more
	// redirect when --follow-redirects hops had been followed: the chain
	// was cut there (a loop, usually), the answer counted as it is.
	RedirectLimit bool
	// Unsolicited reports that the SUT sent bytes no request asked for on
	// this request's connection (more than a complete answer, or anything
	// on an idle connection): the connection was closed, so that they
	// were not read as the next request's answer.
	Unsolicited bool

	// WS says what a WebSocket result is (websocket.go): WSNone for a
	// request, WSSession or WSLatency otherwise. A session's WSFail,
	// WSSent and WSReceived are its outcome and its data messages,
	// WSPings the server's pings, WSUnanswered the client messages sent
	// that the recording answered and the server did not.
	WS           uint8
	WSFail       WSFail
	WSSent       uint32
	WSReceived   uint32
	WSPings      uint32
	WSUnanswered uint32

	// Phase timings, in ns, with Config.Timings (0 otherwise): dialing and
	// the TLS handshake (requests that opened a connection), writing the
	// request, waiting for the first byte of the answer, and receiving the
	// rest (k6's http_req_connecting, _tls_handshaking, _sending, _waiting,
	// _receiving).
	ConnectNs, TLSNs, SendNs, WaitNs, ReceiveNs int64
}

// Succeeded reports whether r counts as succeeded (docs/design.md, Counting):
// an answer with a status below 400, or, to a gRPC call, an answer whose
// grpc-status is 0 (OK), whatever its HTTP status. Anything else failed.
func (r *Result) Succeeded() bool {
	if r.Err != ErrNone {
		return false
	}
	if r.GRPC {
		return r.GRPCStatus == GRPCOK
	}
	return r.Status < 400
}

// The protocols of Result.Proto.
const (
	ProtoHTTP1 uint8 = 1
	ProtoHTTP2 uint8 = 2
)

// Sink receives results. Record is called from every VU concurrently and
// must not block for long: it sits on the hot path.
type Sink interface {
	Record(r Result)
}
