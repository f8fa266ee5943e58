package result

import "github.com/replay-dev/replay/pkg/rrpair"

// Answer is a read-only view of one live answer, lent to an Observer or a
// FailureSink for the length of the call: neither it nor a slice it
// returns may be kept. A transport implements it over its own buffers and
// reuses them from answer to answer, so that reading one allocates nothing
// in steady state (slices, not iterators: an iterator behind an interface
// costs an allocation a call).
type Answer interface {
	// Status is the status code.
	Status() int
	// Header is the first value of the header name (any case), nil when
	// the answer has none.
	Header(name string) []byte
	// Headers are the header fields in the order received.
	Headers() []rrpair.Header
	// Trailers are the trailer fields in the order received: where an
	// HTTP/2 answer (gRPC's grpc-status, grpc-message) ends. nil when the
	// answer had none, and always over HTTP/1.1 (gRPC never runs there;
	// the transport does not keep a chunked answer's trailers apart).
	Trailers() []rrpair.Header
	// Cookies are the Set-Cookie fields: each the cookie's name and the
	// whole field value ("name=value; Path=/").
	Cookies() []rrpair.Header
	// Body is the body decoded by its Content-Encoding (see Decode), decoded
	// at the first call and kept for the next; the body as received when it
	// is not encoded or cannot be decoded.
	Body() []byte
	// RawBody is the body as received.
	RawBody() []byte
}
