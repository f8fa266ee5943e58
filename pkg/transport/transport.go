// Package transport is the boundary between the virtual users and a wire
// protocol: the interfaces through which a VU sends one request and reads
// its answer, without knowing how, and what every protocol shares that is
// not about connections (the redirect rule, the limits on what is kept of
// an answer). Beneath it, transport/conn is the connection layer (where a
// request goes, dialing, TLS, proxies, reconnects, the hard stop);
// transport/http1 and transport/http2 speak their protocol on it, beside
// each other; transport/negotiate chooses between them per connection and
// is the Transport a run builds. The scheduler in pkg/vu calls only these
// interfaces, so that a protocol is added beside the others without
// touching it.
package transport

import (
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Transport makes the per-VU clients of a run. Its methods are safe for
// concurrent use; it holds only what it was configured with.
type Transport interface {
	// Check says, before any traffic, why some request of f could not be
	// sent (a recorded host with nowhere to go), naming the flag to fix;
	// nil when every request has a destination.
	Check(f *rrpair.File) error
	// NewClient makes the client of VU vu. now is the run's clock, in Unix
	// nanoseconds, that stamps the Results the client fills.
	NewClient(vu int, now func() int64) Client
	// AppendWire appends req to dst exactly as a client would write it on
	// the wire, and returns where it would go (host:port): a dry run's
	// view of the request. It sends nothing.
	AppendWire(dst []byte, req *rrpair.Request) (addr string, wire []byte)
}

// Client is one VU's client: it holds the VU's connection (one at a time,
// never shared) and its buffers, reused from request to request. It is used
// by that VU's goroutine only, except Interrupt.
type Client interface {
	// Do sends req (the request of pair, rewritten) and reads its answer,
	// filling res: Sent, End, BytesOut, BytesIn, Written, Status, Err,
	// Connected, Reconnect, Proto, Downgraded, Upgraded, Retried, GRPC and
	// GRPCStatus, and the phase timings. The caller
	// set the rest (VU, Endpoint, Due, Redirect). It returns the answer,
	// valid until the next Do, or nil when there is none (res.Err is not
	// result.ErrNone). In steady state it allocates nothing.
	Do(req *rrpair.Request, pair *rrpair.Pair, res *result.Result) result.Answer
	// Redirect turns req, the request of the last Do, into the next hop of
	// a redirect its answer asked for, and reports whether there is one.
	Redirect(req *rrpair.Request) bool
	// Failure is what a failure report needs about the last Do: where the
	// request went, its head as written (nil if never built or never
	// sent), the body sent, and the error when there was no answer.
	Failure() (addr string, head, body []byte, err error)
	// Interrupt cuts the request in flight off, whatever it is doing
	// (resolving, connecting, writing, reading), and makes every later Do
	// fail as result.ErrCancelled: the hard stop. Safe to call from any
	// goroutine, more than once.
	Interrupt()
	// Close closes the client's connection and releases what it holds,
	// when the VU is done: the client is not used after.
	Close()
}
