package loopback

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Serve accepts connections on a free 127.0.0.1 port and hands each to
// handle on a goroutine of its own, which closes it on return. It returns
// the address and the count of connections accepted; when t ends the
// listener closes and Serve waits for every handler. For test servers
// that speak something Raw does not (a CONNECT proxy, hand-framed answers).
func Serve(t testing.TB, handle func(c net.Conn)) (addr string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int64{}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String(), conns
}

// ServeClosing is Serve for servers that hold connections open (a
// hostile peer waiting for the next request, or stalling): handle gets a
// channel closed when the test ends, and the connections still open then
// are closed before Serve waits for their handlers.
func ServeClosing(t testing.TB, handle func(c net.Conn, quit <-chan struct{})) (addr string, conns *atomic.Int64) {
	t.Helper()
	quit := make(chan struct{})
	var open sync.Map
	addr, conns = Serve(t, func(c net.Conn) {
		open.Store(c, nil)
		defer open.Delete(c)
		handle(c, quit)
	})
	// Registered after Serve's cleanup, so run before it.
	t.Cleanup(func() {
		close(quit)
		open.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	})
	return addr, conns
}
