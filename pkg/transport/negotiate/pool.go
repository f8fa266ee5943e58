package negotiate

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
)

// Pool makes requests for callers that come concurrently and are not VUs:
// the forward recorder making a client's HTTP/2 streams again, the mock
// passing a miss through. Each request takes a client of its own (one
// connection each, kept alive for the next request that takes it) and
// gives it back; a Reply is copied out of the client's buffers. At most
// MaxIdle clients are kept for later: past them a client given back is
// closed, so that what a burst made (its buffers, its connections) is
// not held for the rest of a server's life.
type Pool struct {
	t         *Transport
	mu        sync.Mutex // guards free, all
	free, all []transport.Client
}

// MaxIdle is how many clients a Pool keeps between requests.
const MaxIdle = 64

// Reply is an answer copied out of a client's buffers: its own.
type Reply struct {
	Status            int
	Headers, Trailers []rrpair.Field
	Body              []byte // as received (RawBody)
	Proto             string // "HTTP/1.1" or "HTTP/2"
}

// Pool is a pool of the transport's clients.
func (t *Transport) Pool() *Pool { return &Pool{t: t} }

// Do sends req (pair's request, whose version and gRPC-ness it reads) and
// returns its answer, or why there is none.
func (p *Pool) Do(req *rrpair.Request, pair *rrpair.Pair) (*Reply, error) {
	return p.DoContext(context.Background(), req, pair)
}

// DoContext is Do cut off when ctx ends (the caller's client went: a
// stream reset, a connection closed), wherever the request is: resolving,
// connecting, waiting for the answer. The client it took is then spent
// (its Interrupt is for good): closed, not given back.
func (p *Pool) DoContext(ctx context.Context, req *rrpair.Request, pair *rrpair.Pair) (*Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := p.get()
	stop := context.AfterFunc(ctx, c.Interrupt)
	var res result.Result
	ans := c.Do(req, pair, &res)
	if !stop() {
		p.drop(c)
		return nil, ctx.Err()
	}
	defer p.put(c) // after the answer is copied out of its buffers
	if ans == nil {
		addr, _, _, err := c.Failure()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", res.Err, addr, err)
		}
		return nil, fmt.Errorf("%s %s", res.Err, addr)
	}
	r := &Reply{Status: ans.Status(), Headers: fields(ans.Headers()), Trailers: fields(ans.Trailers()), Body: bytes.Clone(ans.RawBody()), Proto: "HTTP/1.1"}
	if res.Proto == result.ProtoHTTP2 {
		r.Proto = "HTTP/2"
	}
	return r, nil
}

// fields copies header fields out of an answer's buffers.
func fields(hs []rrpair.Header) []rrpair.Field {
	if len(hs) == 0 {
		return nil
	}
	out := make([]rrpair.Field, len(hs))
	for i, h := range hs {
		out[i] = rrpair.Field{Name: string(h.Name), Value: string(h.Value)}
	}
	return out
}

func (p *Pool) get() transport.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		return c
	}
	c := p.t.NewClient(len(p.all), unixNano)
	p.all = append(p.all, c)
	return c
}

// drop closes c, which is not given back.
func (p *Pool) drop(c transport.Client) {
	p.mu.Lock()
	p.all = slices.DeleteFunc(p.all, func(o transport.Client) bool { return o == c })
	p.mu.Unlock()
	c.Close()
}

func (p *Pool) put(c transport.Client) {
	p.mu.Lock()
	if len(p.free) < MaxIdle {
		p.free = append(p.free, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.drop(c)
}

// Interrupt cuts off the requests in flight (each returns at once,
// cancelled; its client's later ones too): for a caller that must stop
// its exchanges before it closes the pool.
func (p *Pool) Interrupt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.all {
		c.Interrupt()
	}
}

// Close closes every client's connection. The pool is not used after.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.all {
		c.Close()
	}
	p.all, p.free = nil, nil
}

func unixNano() int64 { return time.Now().UnixNano() }
