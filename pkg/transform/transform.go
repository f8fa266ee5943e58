// Package transform rewrites outgoing requests so that recorded traffic is
// valid again at replay time, and learns from live responses what later
// requests need (correlation). A Chain is built once from a Spec (a YAML
// file, flags, or both), checked before any traffic is sent, and then
// called by every VU: as vu.Rewriter before each request and as
// result.Observer after each answer.
//
// The transforms, applied in the order given:
//
//	timestamps  move timestamps by (now − recorded ts), keeping their format
//	jwt         re-sign JWTs with a configured key: fresh iat/nbf/exp, claims kept
//	headers     set, remove, rename headers
//	query       set, remove query parameters
//	path        rewrite the path by prefix or regular expression
//	host        send another Host header, whatever --target says
//	correlate   replace a recorded value by the one the SUT returned live
//	fresh       new IDs, keys and names of the recorded shape, unique in the run
//	cookies     a per-session cookie jar (Set-Cookie → Cookie)
//
// replay mock rewrites its answers with a chain of its own
// (Options.Answers, Chain.RewriteAnswer): timestamps and headers on the
// answer, and echo, the live request's values where the recorded answer
// repeated its recorded request's.
//
// Body rewrites (timestamps and JWTs in JSON bodies, correlated values in
// bodies, a correlation ID in a JSON body) skip a gRPC call's body, which
// is length-prefixed protobuf, and count it; what they do to the URI and
// headers (gRPC metadata) still applies.
//
// Each VU owns its scratch buffers and what it learned, so the hot path
// takes no lock; header, query, timestamp and cached-JWT rewrites reuse
// those buffers and allocate nothing per request in steady state.
package transform

import (
	"fmt"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// step is one transform of the chain.
type step interface {
	name() string
	// apply rewrites c.req in place, setting c.changed when it changed
	// something and c.failed when it found something it could not rewrite.
	apply(c *call)
}

// learner is a step that also learns from live responses.
type learner interface {
	step
	// observe learns from the live answer to pair, on the VU of st; the
	// learner is step i of the chain (for its counts).
	observe(st *vuState, i int, pair *rrpair.Pair, a result.Answer)
	// needsRecorded reports whether it reads the recorded response.
	needsRecorded() bool
}

// Chain is a run's transform chain. Build it with Program.Chain (a Program
// comes from Compile, once a run); it is safe for use
// by many VUs at once, each with its own number.
type Chain struct {
	steps    []step
	learners []int // indexes of the steps that are learners
	clock    bool  // a step reads the time: read it once a request
	vus      []vuState
	now      func() time.Time
}

// vuState is what one VU owns: scratch buffers, counts, what it learned.
type vuState struct {
	bufs      [][5][]byte // per step
	counts    []result.TransformCount
	walker    jsonWalker
	ts        tsState
	jwtFinder pathFinder
	lastJWT   lastJWT
	finder    pathFinder
	spans     []span
	learn     sessionState
	vu        int // the VU's number
	stamp     vuStamp
	topKey    topKey
	fresh     vuFresh
	cmp       cmpState       // MapLearned's
	call      call           // the request going through the chain
	payload   rrpair.Request // a WebSocket message going through it (RewritePayload)
	_         [64]byte       // keep VUs off each other's cache lines
}

// call is one request (or, for the mock, one answer) going through the
// chain on one VU.
type call struct {
	st   *vuState
	req  *rrpair.Request
	pair *rrpair.Pair
	// live is, when the chain rewrites a mock's answer (req, the recorded
	// answer of pair), the live request it answers; nil for a request.
	live            *rrpair.Request
	now             int64 // Unix ns; 0 unless a step of the chain reads the time
	step            int
	changed, failed bool
	// grpc tells a gRPC call (rrpair.IsGRPC), whose body is
	// length-prefixed protobuf that no body rewrite may touch; found once a
	// request, by the first step that asks (grpcKnown). skipped is set
	// when the step left such a body alone (bodyAllowed).
	grpc, grpcKnown, skipped bool
}

// bodyAllowed reports whether the current step may read and rewrite the
// request body: not a gRPC call's. A step asks it only where it would
// work on the body, so that a gRPC body it leaves alone is counted
// (TransformCount.SkippedGRPC); its header work still applies. Only a
// request with a body pays for looking at its headers.
func (c *call) bodyAllowed() bool {
	if len(c.req.Body) == 0 {
		return true // nothing to rewrite, nothing to skip
	}
	if !c.grpcKnown {
		c.grpc, c.grpcKnown = rrpair.IsGRPC(c.req.Headers), true
	}
	if c.grpc {
		c.skipped = true
	}
	return !c.grpc
}

// buf returns the current step's scratch buffer k (0 to 4).
func (c *call) buf(k int) *[]byte { return &c.st.bufs[c.step][k] }

// Options are what a Chain needs to know of the run.
type Options struct {
	// VUs is the most VUs the run will have; VU numbers go from 0 to VUs-1.
	VUs int
	// Endpoints is the file's endpoint table (rrpair.File.Endpoints), for
	// transforms limited to an endpoint.
	Endpoints []string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Stamp, when set, stamps each request with a correlation ID, last
	// in the chain.
	Stamp *StampOptions
	// Seed derives fresh values: the same seed, the same values.
	Seed uint64
	// Answers says that the chain rewrites a mock's answers
	// (RewriteAnswer): only the answer transforms (timestamps, headers,
	// echo) are accepted, and echo only there.
	Answers bool
	// Shard and Shards place this process among the run's shards (0 and 1
	// unsharded), and RunVUs is the most VUs of the whole run, before
	// sharding divided them (0: VUs): no shard has more than
	// ceil(RunVUs/Shards). Fresh values are unique across shards by them.
	Shard, Shards, RunVUs int
}

func newChain(steps []step, opt Options) *Chain {
	c := &Chain{steps: steps, now: opt.Now}
	if c.now == nil {
		c.now = time.Now
	}
	for i, s := range steps {
		if _, ok := s.(learner); ok {
			c.learners = append(c.learners, i)
		}
		switch s.(type) {
		case *timestamps, *jwtSigner, *stamp:
			c.clock = true
		}
	}
	c.vus = make([]vuState, max(opt.VUs, 1))
	for i := range c.vus {
		c.vus[i].vu = i
		c.vus[i].bufs = make([][5][]byte, len(steps))
		c.vus[i].counts = make([]result.TransformCount, len(steps))
	}
	return c
}

// Len is the number of transforms.
func (c *Chain) Len() int { return len(c.steps) }

// Names lists the transforms in order.
func (c *Chain) Names() []string {
	names := make([]string, len(c.steps))
	for i, s := range c.steps {
		names[i] = s.name()
	}
	return names
}

// NeedsResponses reports whether the chain reads recorded responses, which
// the VUs must then decode (vu.Pool.DecodeResponses).
func (c *Chain) NeedsResponses() bool {
	for _, i := range c.learners {
		if c.steps[i].(learner).needsRecorded() {
			return true
		}
	}
	return false
}

// Learns reports whether the chain learns from live responses, so that it
// must also be one of the pool's observers.
func (c *Chain) Learns() bool { return len(c.learners) > 0 }

func (c *Chain) state(vu int) (*vuState, error) {
	if vu < 0 || vu >= len(c.vus) {
		return nil, fmt.Errorf("transform: VU %d out of range: the chain was built for %d VUs", vu, len(c.vus))
	}
	return &c.vus[vu], nil
}

// Begin starts a new iteration (session) on VU vu: what it learned in the
// previous one is forgotten.
func (c *Chain) Begin(vu int) {
	if st, err := c.state(vu); err == nil {
		st.learn.reset()
		st.fresh.reset()
	}
}

// Rewrite applies the chain to req, the request of pair, on VU vu.
func (c *Chain) Rewrite(vu int, req *rrpair.Request, pair *rrpair.Pair) error {
	return c.rewrite(vu, req, pair, nil)
}

// RewriteAnswer applies the chain of a mock (built with Options.Answers)
// to ans, the recorded answer of pair given as a Request (its Headers and
// Body; its body decoded), on slot vu: timestamps move by (now − the
// pair's ts), and echo puts live's values where the answer repeated the
// recorded request's. It allocates: a mock's answers are not the replay's
// hot path.
func (c *Chain) RewriteAnswer(vu int, ans *rrpair.Request, pair *rrpair.Pair, live *rrpair.Request) error {
	return c.rewrite(vu, ans, pair, live)
}

func (c *Chain) rewrite(vu int, req *rrpair.Request, pair *rrpair.Pair, live *rrpair.Request) error {
	st, err := c.state(vu)
	if err != nil {
		return err
	}
	// The call lives in the VU's state: on the stack it would escape to
	// the heap through the step interface, once per request.
	cl := &st.call
	*cl = call{st: st, req: req, pair: pair, live: live}
	if c.clock {
		cl.now = c.now().UnixNano()
	}
	for i, s := range c.steps {
		cl.applyStep(i, s)
	}
	return nil
}

// applyStep applies s, step i of the chain, to the call and counts what
// it did.
func (cl *call) applyStep(i int, s step) {
	st := cl.st
	cl.step, cl.changed, cl.failed, cl.skipped = i, false, false, false
	s.apply(cl)
	if cl.changed {
		st.counts[i].Changed++
	}
	if cl.failed {
		st.counts[i].Failed++
	}
	if cl.skipped {
		st.counts[i].SkippedGRPC++
	}
}

// Observe lets the learning transforms learn from a live answer.
func (c *Chain) Observe(vu int, pair *rrpair.Pair, a result.Answer) {
	st, err := c.state(vu)
	if err != nil {
		return
	}
	for _, i := range c.learners {
		c.steps[i].(learner).observe(st, i, pair, a)
	}
}

// Counts sums what each transform did over every VU. Call it after the
// run, not during it.
func (c *Chain) Counts() []result.TransformCount {
	out := make([]result.TransformCount, len(c.steps))
	for i, s := range c.steps {
		out[i].Name = s.name()
		for v := range c.vus {
			out[i].Changed += c.vus[v].counts[i].Changed
			out[i].Failed += c.vus[v].counts[i].Failed
			out[i].SkippedGRPC += c.vus[v].counts[i].SkippedGRPC
		}
	}
	return out
}
