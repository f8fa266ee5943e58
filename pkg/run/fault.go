package run

import (
	"runtime/debug"
	"sync/atomic"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
)

// faultGuard wraps a transport so that a client reading a pair's bytes
// from a traffic file truncated under the run (its pages gone: SIGBUS)
// fails that request instead of crashing the process. The VU's next
// Decode faults too, and ends the run with rrpair.ErrFileChanged; faulted
// says it happened, for a run whose last request was the one.
type faultGuard struct {
	transport.Transport
	file    *rrpair.File
	faulted atomic.Bool
}

// NewClient implements transport.Transport.
func (g *faultGuard) NewClient(vu int, now func() int64) transport.Client {
	return &guardedClient{Client: g.Transport.NewClient(vu, now), g: g}
}

// guardedClient is a client whose Do turns a fault in the file's mapping
// into a failed request.
type guardedClient struct {
	transport.Client
	g     *faultGuard
	armed bool // panic-on-fault is set on the VU's goroutine
}

// Do implements transport.Client. It is called on the VU's goroutine
// only, so panic-on-fault is set once there (it belongs to the goroutine),
// not on every request; the recover stays per request.
func (c *guardedClient) Do(req *rrpair.Request, pair *rrpair.Pair, res *result.Result) (a result.Answer) {
	c.arm()
	defer func() {
		if r := recover(); r != nil {
			c.fault(r, res)
			a = nil
		}
	}()
	return c.Client.Do(req, pair, res)
}

// Session implements transport.Sessions when the client it guards does,
// with the same guard as Do; otherwise the pair goes as a plain request
// and out is left as it was (no session: out.WS stays WSNone).
func (c *guardedClient) Session(req *rrpair.Request, pair *rrpair.Pair, s *transport.Session, res, out *result.Result) (a result.Answer) {
	sc, ok := c.Client.(transport.Sessions)
	if !ok {
		return c.Do(req, pair, res)
	}
	c.arm()
	defer func() {
		if r := recover(); r != nil {
			c.fault(r, res)
			a, out.WSFail = nil, result.WSError
		}
	}()
	return sc.Session(req, pair, s, res, out)
}

// arm sets panic-on-fault on the VU's goroutine, once.
func (c *guardedClient) arm() {
	if !c.armed {
		debug.SetPanicOnFault(true)
		c.armed = true
	}
}

// fault fails the request whose client panicked with r when r is a fault
// in the file's mapping, and panics again otherwise.
func (c *guardedClient) fault(r any, res *result.Result) {
	if !c.g.file.Faulted(r) {
		panic(r)
	}
	c.g.faulted.Store(true)
	res.Err = result.ErrOther
}
