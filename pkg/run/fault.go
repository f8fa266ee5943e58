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
	if !c.armed {
		debug.SetPanicOnFault(true)
		c.armed = true
	}
	defer func() {
		if r := recover(); r != nil {
			if !c.g.file.Faulted(r) {
				panic(r)
			}
			c.g.faulted.Store(true)
			res.Err, a = result.ErrOther, nil
		}
	}()
	return c.Client.Do(req, pair, res)
}
