package mock

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/internal/h2answer"
	"github.com/replay-dev/replay/internal/h2serve"
	"github.com/replay-dev/replay/internal/printflog"
	"github.com/replay-dev/replay/pkg/tlsca"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
)

// connState is what the mock knows of a client connection: the raw TCP
// connection (reset on purpose), the host it answers as (a --serve HOST,
// a CONNECT target; nil: the request says), its scheme, and its own
// answer counts (--order session).
type connState struct {
	raw    net.Conn
	id     uint64
	host   []byte
	scheme string
	h2     *atomic.Bool

	mu     sync.Mutex // guards counts: HTTP/2 streams come concurrently
	counts map[uint64]uint32
}

// servedConn is a connection handed to the HTTP/1.1 server, with its
// state; done closes when the server closes it.
type servedConn struct {
	net.Conn
	cs   *connState
	once sync.Once
	done chan struct{}
	// linger: the last request's body was left unread (over its limit):
	// Close lets the client read the answer before the connection goes.
	linger atomic.Bool
	// heads are the answers to send in the place of fasthttp's (one
	// goroutine queues and writes them: fasthttp's for the connection).
	heads heads
}

// Write puts the queued answers in the place of fasthttp's heads.
func (c *servedConn) Write(p []byte) (int, error) {
	if !c.heads.pending() {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(c.heads.rewrite(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *servedConn) Close() error {
	if c.linger.Load() {
		lingerClose(c.Conn, c.cs.raw)
	}
	err := c.Conn.Close()
	c.once.Do(func() { close(c.done) })
	return err
}

// lingerTime bounds how long a connection whose request body was left
// unread is drained before it closes.
const lingerTime = time.Second

// lingerClose ends the writing side of raw (the answer is flushed) and
// discards what the client still sends, at most lingerTime: closed at
// once, a connection with unread bytes is reset, and a client still
// sending its body could lose the answer (net/http does the same).
func lingerClose(c, raw net.Conn) {
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(lingerTime))
	var buf [4 << 10]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// h2Preface is what an HTTP/2 client with prior knowledge sends first.
var h2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// alpn is what a TLS handshake with the mock may choose.
var alpn = []string{"h2", "http/1.1"}

// serve starts the servers and the accept loops.
func (s *Server) serve() {
	s.started = s.o.Now()
	s.h1 = &fasthttp.Server{
		Handler:                       s.handleH1,
		Name:                          "",
		NoDefaultServerHeader:         true,
		NoDefaultDate:                 true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: true,
		DisablePreParseMultipartForm:  true,
		IdleTimeout:                   s.o.IdleTimeout,
		ReadTimeout:                   s.o.HeadTimeout, // a request's head; its body gets --idle-timeout (readH1Body)
		WriteTimeout:                  s.o.IdleTimeout,
		MaxRequestBodySize:            bodySlack, // bodies are read by the handler, as far as matching needs (body.go)
		StreamRequestBody:             true,
		ReadBufferSize:                16 << 10,
		CloseOnShutdown:               true,
		Logger:                        printflog.Logger{Log: s.o.Log, Level: zerolog.DebugLevel, From: "fasthttp"},
	}
	s.h1ln = h2serve.NewListener(s.lns[0].ln.Addr())
	go func() { s.h1done <- s.h1.Serve(s.h1ln) }()
	// At most 100 streams a connection (RFC 9113's least advice; the 101st
	// refused): a client that opens and resets streams at once holds at
	// most that many answers per connection. A header list at most 64 KiB.
	s.h2 = h2answer.New(h2Handler{s}, h2answer.Limits{Idle: s.o.IdleTimeout, Streams: 100, HeaderList: 64 << 10})
	for _, l := range s.lns {
		s.wg.Add(1)
		go s.accept(l)
	}
}

func (s *Server) accept(l served) {
	defer s.wg.Done()
	for {
		if !s.connSlots.Take(s.stopAccept) { // at most --max-conns served at once: the rest wait in the listen queue
			return
		}
		c, err := l.ln.Accept()
		if err != nil {
			s.connSlots.Give()
			return
		}
		h2 := s.conns.Add(c)
		go func() {
			defer s.connSlots.Give()
			s.handleConn(c, l.host, h2)
		}()
	}
}

// handleConn tells what a client speaks by its first bytes: TLS
// (terminated with the leaf of the name it asks for), HTTP/2 with prior
// knowledge, or HTTP/1.x.
func (s *Server) handleConn(c net.Conn, host []byte, h2 *atomic.Bool) {
	defer s.conns.Done(c)
	if s.closing.Load() {
		return
	}
	cs := &connState{raw: c, id: s.connSeq.Add(1), host: host, scheme: "http", h2: h2}
	c.SetReadDeadline(time.Now().Add(s.o.IdleTimeout))
	pc, err := tlsca.Peek(c, 1)
	if err != nil {
		return
	}
	s.speak(pc, cs, string(host))
}

// speak serves c, whose first byte is peeked, as what it speaks. name is
// the server name for a TLS client that sends none.
func (s *Server) speak(pc *tlsca.PeekConn, cs *connState, name string) {
	// The first byte came: the rest of a TLS handshake or of the HTTP/2
	// preface gets --head-timeout, as an HTTP/1.1 head does.
	deadline := time.Now().Add(s.o.HeadTimeout)
	pc.SetReadDeadline(deadline)
	if pc.Peeked()[0] == 0x16 {
		ac, err := tlsca.Accept(pc, s.ca, name, alpn, deadline)
		if err != nil {
			s.st.tlsErrors.Add(1)
			s.o.Log.Debug().Err(err).Str("client", cs.raw.RemoteAddr().String()).Msg("tls handshake failed")
			return
		}
		cs.scheme = "https"
		if ac.Proto == "h2" {
			s.serveH2(ac.Conn, cs)
			return
		}
		s.serveH1(ac, cs)
		return
	}
	if pc.Peeked()[0] == h2Preface[0] {
		if err := pc.More(len(h2Preface)); err == nil && bytes.Equal(pc.Peeked(), h2Preface) {
			s.serveH2(pc, cs)
			return
		}
	}
	s.serveH1(pc, cs)
}

// serveH1 hands c to the HTTP/1.1 server and waits until it is done.
func (s *Server) serveH1(c net.Conn, cs *connState) {
	c.SetReadDeadline(time.Time{})
	sc := &servedConn{Conn: c, cs: cs, done: make(chan struct{})}
	if !s.h1ln.Hand(sc) {
		return
	}
	<-sc.done
}

// serveH2 serves c as HTTP/2 (the server reads the client's preface): a
// *tls.Conn that chose h2, or a cleartext connection that begins with the
// preface.
func (s *Server) serveH2(c net.Conn, cs *connState) {
	c.SetReadDeadline(time.Time{})
	cs.h2.Store(true)
	s.h2.Serve(c, cs)
}

// tunnel serves a CONNECT tunnel to target (host:port): TLS terminated
// with the leaf of the name asked for, or plaintext, each request answered
// as the target's host.
func (s *Server) tunnel(c net.Conn, target string, parent *connState) {
	name, _, err := net.SplitHostPort(target)
	if err != nil {
		return
	}
	cs := &connState{raw: parent.raw, id: s.connSeq.Add(1), host: normHost(nil, []byte(target)), scheme: "http", h2: parent.h2}
	c.SetReadDeadline(time.Now().Add(s.o.IdleTimeout))
	pc, err := tlsca.Peek(c, 1)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			s.o.Log.Debug().Err(err).Str("target", target).Msg("tunnel ended before its first byte")
		}
		return
	}
	s.speak(pc, cs, name)
}
