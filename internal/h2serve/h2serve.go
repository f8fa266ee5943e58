// Package h2serve serves single connections as HTTP/2 with net/http's
// server, for the servers that accept connections themselves and tell
// their protocols apart by the first bytes (the forward recorder inside
// CONNECT tunnels; the mock answers HTTP/2 with internal/h2answer and
// feeds its HTTP/1.1 server with Listener): a *tls.Conn whose handshake chose "h2" by
// ALPN, or a cleartext connection that begins with the HTTP/2 preface
// (h2c by prior knowledge). Each connection carries a value of its own to
// the handler (Value), and Shutdown ends them gracefully (GOAWAY, then
// close once their streams are done).
package h2serve

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server serves the connections handed to it as HTTP/2.
type Server struct {
	hs     *http.Server
	ln     *Listener
	conns  sync.Map // net.Conn -> *entry, the connections being served
	served chan error
}

type entry struct {
	val  any
	once sync.Once
	done chan struct{}
}

type valueKey struct{}

// Limits bound what a client may hold of the server (zero: net/http's
// default, or no bound).
type Limits struct {
	// Idle closes a connection with no stream open this long (GOAWAY).
	Idle time.Duration
	// Read resets a stream whose request (its body) has not all arrived
	// this long after it opened.
	Read time.Duration
	// Write closes a connection to which nothing could be written this
	// long while there was something to write (a client that reads
	// nothing).
	Write time.Duration
	// Streams bounds the streams open at once on a connection (net/http's
	// default: 250); handlers of streams reset at once count until they
	// return.
	Streams int
}

// New starts a server whose streams h answers, with no timeouts.
func New(h http.Handler) *Server { return NewWith(h, Limits{}) }

// NewIdle is New with connections closed once idle (no stream open) for
// idle, when it is not 0.
func NewIdle(h http.Handler, idle time.Duration) *Server { return NewWith(h, Limits{Idle: idle}) }

// NewWith starts a server whose streams h answers, within t.
func NewWith(h http.Handler, t Limits) *Server {
	s := &Server{ln: NewListener(handAddr{}), served: make(chan error, 1)}
	var p http.Protocols
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	s.hs = &http.Server{Handler: h, Protocols: &p, ConnContext: s.connContext, ConnState: s.connState,
		IdleTimeout: t.Idle, ReadTimeout: t.Read, HTTP2: &http.HTTP2Config{WriteByteTimeout: t.Write, MaxConcurrentStreams: t.Streams},
		ErrorLog: log.New(io.Discard, "", 0)} // a client's broken connection is the caller's to count, not to print
	go func() { s.served <- s.hs.Serve(s.ln) }()
	return s
}

// Serve serves c as HTTP/2 until it closes; the handler finds val with
// Value. c is a *tls.Conn that negotiated "h2", or a cleartext connection
// whose first bytes are the HTTP/2 preface.
func (s *Server) Serve(c net.Conn, val any) {
	e := &entry{val: val, done: make(chan struct{})}
	s.conns.Store(c, e)
	defer s.conns.Delete(c)
	if !s.ln.Hand(c) {
		c.Close()
		return
	}
	<-e.done
}

// Value is the value the connection of r was served with.
func Value(r *http.Request) any { return r.Context().Value(valueKey{}) }

func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	if e, ok := s.conns.Load(c); ok {
		return context.WithValue(ctx, valueKey{}, e.(*entry).val)
	}
	return ctx
}

// connState sees a connection's end: net/http reports StateClosed for an
// HTTP/2 connection when its serving ends.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	if e, ok := s.conns.Load(c); ok {
		e := e.(*entry)
		e.once.Do(func() { close(e.done) })
	}
}

// Shutdown stops taking connections and ends those served gracefully:
// GOAWAY, then close once their streams are done, within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.hs.Shutdown(ctx)
	<-s.served
	return err
}

// Close closes every connection at once.
func (s *Server) Close() error { return s.hs.Close() }

// Listener is a net.Listener fed by hand: for a server that takes a
// listener (net/http's here, fasthttp's in the mock) and connections that
// were accepted, and told apart, elsewhere. The server's own shutdown
// then covers them (idle ones closed, busy ones waited for).
type Listener struct {
	c      chan net.Conn
	closed chan struct{}
	once   sync.Once
	addr   net.Addr
}

// NewListener is a Listener that says it listens on addr.
func NewListener(addr net.Addr) *Listener {
	return &Listener{c: make(chan net.Conn), closed: make(chan struct{}), addr: addr}
}

// Hand gives c to the server's next Accept; false when the listener is
// closed (c is not taken).
func (l *Listener) Hand(c net.Conn) bool {
	select {
	case l.c <- c:
		return true
	case <-l.closed:
		return false
	}
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener: Accept and Hand fail from now on.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr implements net.Listener.
func (l *Listener) Addr() net.Addr { return l.addr }

type handAddr struct{}

func (handAddr) Network() string { return "hand" }
func (handAddr) String() string  { return "handed" }
