package result

import "github.com/replay-dev/replay/pkg/rrpair"

// Observer sees each live answer (correlation learns from it, comparison
// checks it). It is called from every VU concurrently, with that VU's
// number, and must not keep pair or a past the call.
type Observer interface {
	Observe(vu int, pair *rrpair.Pair, a Answer)
}

// Failure is a failed request (not Result.Succeeded): an error, a status
// of 400 or more, or a gRPC status other than OK. It is valid only during
// the FailureSink's call.
type Failure struct {
	VU     int
	Pair   *rrpair.Pair
	Addr   string // where it was sent
	Head   []byte // request line and headers as written; nil if never built (dial failed)
	Body   []byte // the body sent
	Result *Result
	Answer Answer // the answer; nil when Result.Err is not ErrNone
	Err    error  // what went wrong, when there was no answer
}

// FailureSink receives failed requests (--dump-failures). It is called from
// every VU concurrently, only for failures, and must not keep f.
type FailureSink interface {
	Failed(f *Failure)
}
