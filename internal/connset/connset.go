// Package connset is the client connections a server holds (the
// recording proxies, the mock): tracked while they are served, and at
// shutdown the idle ones cut at once, the busy ones let finish the
// exchange under way, and all closed when the grace runs out.
package connset

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Set is the connections being served.
type Set struct {
	m  sync.Map // net.Conn -> *atomic.Bool: it speaks HTTP/2
	wg sync.WaitGroup
}

// Add tracks c until Done; the flag it returns says that c speaks
// HTTP/2, whose shutdown is its server's (GOAWAY): Drain does not cut its
// reads.
func (s *Set) Add(c net.Conn) (h2 *atomic.Bool) {
	h2 = new(atomic.Bool)
	s.wg.Add(1)
	s.m.Store(c, h2)
	return h2
}

// Done closes c and stops tracking it.
func (s *Set) Done(c net.Conn) {
	s.m.Delete(c)
	c.Close()
	s.wg.Done()
}

// Drain cuts the idle reads of the HTTP/1.x connections off (a connection
// in the middle of an exchange finishes it, then finds its next read cut),
// and waits for every connection to be Done; when ctx ends first, it
// closes them all and waits again.
func (s *Set) Drain(ctx context.Context) {
	finished := make(chan struct{})
	go func() { s.wg.Wait(); close(finished) }()
	s.m.Range(func(k, v any) bool {
		if !v.(*atomic.Bool).Load() {
			k.(net.Conn).SetReadDeadline(time.Now())
		}
		return true
	})
	select {
	case <-finished:
	case <-ctx.Done():
		s.m.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		<-finished
	}
}
