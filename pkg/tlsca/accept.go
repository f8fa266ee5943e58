package tlsca

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// recordHandshake is the first byte of a TLS record carrying a handshake
// (a ClientHello): no HTTP/1.x method and no HTTP/2 preface starts with it.
const recordHandshake = 0x16

// PeekConn is a connection whose first bytes were read to tell what it
// speaks: a Read returns them first, then reads on. After them it adds no
// copy and no buffer of its own.
type PeekConn struct {
	net.Conn
	pre []byte
}

// Peek reads from c until at least n bytes are there (fewer when c ends
// first: the error says why) and returns c with them put back; Peeked
// shows them.
func Peek(c net.Conn, n int) (*PeekConn, error) {
	p := &PeekConn{Conn: c}
	return p, p.fill(n)
}

// Peeked are the bytes read ahead and not yet returned by Read.
func (p *PeekConn) Peeked() []byte { return p.pre }

// More reads until n bytes are peeked.
func (p *PeekConn) More(n int) error { return p.fill(n) }

func (p *PeekConn) fill(n int) error {
	if cap(p.pre) < n {
		p.pre = append(make([]byte, 0, max(n, 32)), p.pre...)
	}
	for len(p.pre) < n {
		m, err := p.Conn.Read(p.pre[len(p.pre):n])
		p.pre = p.pre[:len(p.pre)+m]
		if err != nil {
			return err
		}
	}
	return nil
}

// Read returns the peeked bytes first.
func (p *PeekConn) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// Conn is a client's connection after Accept: TLS terminated, or the
// plaintext it sent, first bytes included.
type Conn struct {
	net.Conn
	// TLS says the client spoke TLS (terminated here); Proto is the
	// protocol ALPN chose ("h2", "http/1.1"; "" when the client offered
	// none), ServerName the name the client asked for (SNI).
	TLS        bool
	Proto      string
	ServerName string
}

// ErrNoCA is Accept's error for a TLS handshake when no CA was given.
var ErrNoCA = errors.New("the client began a TLS handshake, and no CA was given to terminate it (--ca-cert and --ca-key, or --ca-out)")

// Accept tells what c speaks by its first byte: a TLS handshake is
// completed with the leaf of the name the client asks for (fallback when
// it names none: the CONNECT target's host, or the host served), offering
// alpn; anything else is plaintext, returned with its first bytes put
// back. The handshake must end by deadline. ca may be nil: a TLS
// handshake then fails with ErrNoCA.
func Accept(c net.Conn, ca *CA, fallback string, alpn []string, deadline time.Time) (*Conn, error) {
	c.SetReadDeadline(deadline)
	p, err := Peek(c, 1)
	if err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Time{})
	if p.pre[0] != recordHandshake {
		return &Conn{Conn: p}, nil
	}
	if ca == nil {
		return nil, ErrNoCA
	}
	tc := tls.Server(p, ca.ServerConfig(fallback, alpn))
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	st := tc.ConnectionState()
	return &Conn{Conn: tc, TLS: true, Proto: st.NegotiatedProtocol, ServerName: st.ServerName}, nil
}
