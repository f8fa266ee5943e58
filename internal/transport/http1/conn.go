package http1

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// conn is a client's connection.
type conn struct {
	raw    net.Conn // the TCP connection: deadlines and close
	nc     net.Conn // raw, or TLS over it
	addr   string
	https  bool
	opened int64 // Unix ns on the run's clock
	last   int64 // when its last answer ended (run's clock)
	// rc is the TCP connection's raw descriptor, for probeIdle where the
	// platform has a probe; nil otherwise.
	rc syscall.RawConn
	// proto is the protocol the connection speaks: the ALPN protocol
	// negotiated ("h2", "http/1.1"), "h2" for cleartext HTTP/2 by prior
	// knowledge (Connect), "" for HTTP/1.1 without ALPN.
	proto string
}

// recorded is the last recorded host a client resolved to a dial address
// (no --target), kept so that a VU replaying one host resolves it once.
type recorded struct {
	host  []byte
	https bool
	addr  string
	name  string
}

// destination says where req goes: over TLS or not, the dial address, the
// host name for SNI, and the Host header value (a transform's, else the
// target's or the recorded one). last keeps the last recorded host resolved.
func (t *Transport) destination(req *rrpair.Request, last *recorded) (https bool, addr, name string, host []byte) {
	tg := t.target
	if mapped, ok := t.hostMap[string(req.Host)]; ok {
		tg = mapped
	}
	if tg != nil {
		https, addr, name = tg.https, tg.addr, tg.name
	} else {
		https = bytes.Equal(req.Scheme, []byte("https"))
		if last.addr == "" || https != last.https || !bytes.Equal(req.Host, last.host) {
			last.host = append(last.host[:0], req.Host...)
			last.https = https
			last.addr, last.name = dialAddr(string(req.Host), https)
		}
		addr, name = last.addr, last.name
	}
	switch {
	case len(req.HostHeader) > 0:
		host = req.HostHeader
	case tg == nil:
		host = recordedHost(req, req.Host)
	case t.o.KeepHost:
		host = recordedHost(req, tg.host)
	default:
		host = tg.host
	}
	return https, addr, name, host
}

// recordedHost is the recorded Host header value, else fallback.
func recordedHost(req *rrpair.Request, fallback []byte) []byte {
	for i := range req.Headers {
		if rrpair.EqualFold(req.Headers[i].Name, "host") {
			return req.Headers[i].Value
		}
	}
	if len(req.Host) > 0 {
		return req.Host
	}
	return fallback
}

// connect makes sure the client holds a connection to addr, dialing one if
// needed. A new plain connection may carry first, the request's first
// bytes, from the moment it is made (tcpDialer.dial): sent says how many,
// and res.Sent is set when some were. It returns the error kind of a
// failed dial.
func (c *Client) connect(addr, name string, https bool, res *result.Result, first []byte) (sent int, kind result.ErrorKind) {
	o := &c.t.o
	if c.c != nil && (c.c.addr != addr || c.c.https != https ||
		o.MaxConnDuration > 0 && c.now()-c.c.opened >= int64(o.MaxConnDuration)) {
		c.closeConn()
	}
	if c.c != nil && c.c.proto != "h2" && c.now()-c.c.last >= int64(idleProbe) {
		c.probeIdle(res)
	}
	if c.c != nil {
		return 0, result.ErrNone
	}

	deadline := time.Now().Add(o.Timeout)
	var t0 int64
	if o.Timings {
		t0 = c.now()
	}
	if https || c.t.proxy != nil || o.Timings { // Timings keeps connect and send apart
		first = nil
	}
	raw, sent, err := c.dial(addr, deadline, first)
	if o.Timings {
		res.ConnectNs = c.now() - t0
	}
	if err != nil {
		c.lastErr = err
		if c.cut.Load() {
			return 0, result.ErrCancelled
		}
		return 0, dialKind(err)
	}
	if sent > 0 {
		res.Sent = c.dialer.sentAt
	}
	cn := &conn{raw: raw, nc: raw, addr: addr, https: https, opened: c.now(), rc: rawConn(raw)}
	if https {
		if kind := c.handshake(cn, name, deadline); kind != result.ErrNone {
			return 0, kind
		}
		if o.Timings {
			res.TLSNs = c.now() - t0 - res.ConnectNs
		}
	}
	// Established (TCP, and TLS for https): only now is it a connection.
	res.Connected = true
	res.Reconnect = c.hadConn && !o.NoConnectionReuse
	c.hadConn = true
	c.c = cn
	c.active.Store(cn)
	c.cr.nc = cn.nc
	c.br.Reset(&c.cr)
	if c.cut.Load() { // Interrupt may have missed this connection
		cn.raw.SetDeadline(time.Unix(1, 0))
	}
	return sent, result.ErrNone
}

// handshake runs the TLS handshake over cn's TCP connection, by the
// deadline or until Interrupt, and returns the error kind of a failure
// (cn closed then).
func (c *Client) handshake(cn *conn, name string, deadline time.Time) result.ErrorKind {
	tc := c.t.tls.Clone()
	if tc.ServerName == "" { // --server-name overrides the host dialed
		tc.ServerName = name
	}
	tc.NextProtos = c.alpn
	tlsConn := tls.Client(cn.raw, tc)
	ctx, cancel := context.WithDeadline(c.ctx, deadline)
	err := tlsConn.HandshakeContext(ctx)
	timedOut := ctx.Err() != nil
	cancel()
	if err != nil {
		c.lastErr = err
		cn.raw.Close()
		if c.cut.Load() {
			return result.ErrCancelled
		}
		if timedOut {
			return result.ErrTimeout
		}
		// The SUT reached and then gone (an RST, a close) is not a TLS
		// failure.
		if k := kindOf(err); k == result.ErrReset || k == result.ErrEOF {
			return k
		}
		return result.ErrTLS
	}
	cn.nc = tlsConn
	cn.proto = tlsConn.ConnectionState().NegotiatedProtocol
	return result.ErrNone
}

// dial opens a TCP connection to addr, through the --proxy's CONNECT
// tunnel when there is one (the request then goes through it unchanged,
// origin-form, as it would directly).
func (c *Client) dial(addr string, deadline time.Time, first []byte) (net.Conn, int, error) {
	p := c.t.proxy
	if p == nil {
		return c.dialer.dial(c.ctx, addr, deadline, first)
	}
	nc, _, err := c.dialer.dial(c.ctx, p.addr, deadline, nil)
	if err != nil {
		return nil, 0, err
	}
	if err := tunnel(nc, p, addr, deadline); err != nil {
		nc.Close()
		return nil, 0, err
	}
	return nc, 0, nil
}

// tunnel asks the proxy at the other end of nc for a tunnel to addr.
func tunnel(nc net.Conn, p *proxy, addr string, deadline time.Time) error {
	nc.SetDeadline(deadline)
	req := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n" + p.auth + "\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		return err
	}
	// Read the answer byte by byte up to its blank line, so that nothing
	// of the tunnelled stream is consumed here.
	var head []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if _, err := nc.Read(one); err != nil {
			return err
		}
		if head = append(head, one[0]); len(head) > 16<<10 {
			return errors.New("proxy: CONNECT answer too long")
		}
	}
	if f := bytes.Fields(head); len(f) < 2 || f[1][0] != '2' {
		return fmt.Errorf("proxy: CONNECT %s: %s", addr, bytes.SplitN(head, []byte("\r\n"), 2)[0])
	}
	nc.SetDeadline(time.Time{})
	return nil
}

func (c *Client) closeConn() {
	if c.c == nil {
		return
	}
	c.active.Store(nil)
	c.c.nc.Close()
	c.c = nil
}
