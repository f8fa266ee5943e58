package vu

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// conn is a VU's connection.
type conn struct {
	raw    net.Conn // the TCP connection: deadlines and close
	nc     net.Conn // raw, or TLS over it
	addr   string
	https  bool
	opened int64 // Unix ns on the run's clock
}

// destination says where req goes: over TLS or not, the dial address, the
// host name for SNI, and the Host header value (a transform's, else the
// target's or the recorded one).
func (v *vu) destination(req *rrpair.Request) (https bool, addr, name string, host []byte) {
	cfg := v.r.cfg
	t := cfg.target
	if mapped, ok := cfg.hostMap[string(req.Host)]; ok {
		t = mapped
	}
	if t != nil {
		https, addr, name = t.https, t.addr, t.name
	} else {
		https = bytes.Equal(req.Scheme, []byte("https"))
		if v.lastAddr == "" || https != v.lastHTTPS || !bytes.Equal(req.Host, v.lastHost) {
			v.lastHost = append(v.lastHost[:0], req.Host...)
			v.lastHTTPS = https
			v.lastAddr, v.lastName = dialAddr(string(req.Host), https)
		}
		addr, name = v.lastAddr, v.lastName
	}
	switch {
	case len(req.HostHeader) > 0:
		host = req.HostHeader
	case t == nil:
		host = recordedHost(req, req.Host)
	case cfg.KeepHost:
		host = recordedHost(req, t.host)
	default:
		host = t.host
	}
	return https, addr, name, host
}

// recordedHost is the recorded Host header value, else fallback.
func recordedHost(req *rrpair.Request, fallback []byte) []byte {
	for i := range req.Headers {
		if equalFold(req.Headers[i].Name, "host") {
			return req.Headers[i].Value
		}
	}
	if len(req.Host) > 0 {
		return req.Host
	}
	return fallback
}

// connect makes sure the VU holds a connection to addr, dialing one if
// needed. A new plain connection may carry first, the request's first
// bytes, from the moment it is made (tcpDialer.dial): sent says how many,
// and res.Sent is set when some were. It returns the error kind of a
// failed dial.
func (v *vu) connect(addr, name string, https bool, res *result.Result, first []byte) (sent int, kind result.ErrorKind) {
	cfg := v.r.cfg
	if v.c != nil && (v.c.addr != addr || v.c.https != https ||
		cfg.MaxConnDuration > 0 && v.r.nanos()-v.c.opened >= int64(cfg.MaxConnDuration)) {
		v.closeConn()
	}
	if v.c != nil {
		return 0, result.ErrNone
	}
	res.Connected = true
	res.Reconnect = v.hadConn && !cfg.NoConnectionReuse
	v.hadConn = true

	deadline := time.Now().Add(cfg.Timeout)
	var t0 int64
	if cfg.Timings {
		t0 = v.r.nanos()
	}
	if https || cfg.proxy != nil || cfg.Timings { // Timings keeps connect and send apart
		first = nil
	}
	raw, sent, err := v.dial(addr, deadline, first)
	if cfg.Timings {
		res.ConnectNs = v.r.nanos() - t0
	}
	if err != nil {
		v.lastErr = err
		if v.r.hard.Load() {
			return 0, result.ErrCancelled
		}
		return 0, result.ErrConnect
	}
	if sent > 0 {
		res.Sent = v.dialer.sentAt
	}
	c := &conn{raw: raw, nc: raw, addr: addr, https: https, opened: v.r.nanos()}
	if https {
		tc := cfg.tls.Clone()
		if tc.ServerName == "" { // --server-name overrides the host dialed
			tc.ServerName = name
		}
		tlsConn := tls.Client(raw, tc)
		ctx, cancel := context.WithDeadline(v.r.hardCtx, deadline)
		err := tlsConn.HandshakeContext(ctx)
		timedOut := ctx.Err() != nil
		cancel()
		if err != nil {
			v.lastErr = err
			raw.Close()
			if v.r.hard.Load() {
				return 0, result.ErrCancelled
			}
			if timedOut {
				return 0, result.ErrTimeout
			}
			return 0, result.ErrTLS
		}
		c.nc = tlsConn
		if cfg.Timings {
			res.TLSNs = v.r.nanos() - t0 - res.ConnectNs
		}
	}
	v.c = c
	v.active.Store(c)
	v.cr.nc = c.nc
	v.br.Reset(&v.cr)
	if v.r.hard.Load() { // the stopper may have missed this connection
		c.raw.SetDeadline(time.Unix(1, 0))
	}
	return sent, result.ErrNone
}

// dial opens a TCP connection to addr, through the --proxy's CONNECT
// tunnel when there is one (the request then goes through it unchanged,
// origin-form, as it would directly).
func (v *vu) dial(addr string, deadline time.Time, first []byte) (net.Conn, int, error) {
	p := v.r.cfg.proxy
	if p == nil {
		return v.dialer.dial(v.r.hardCtx, addr, deadline, first)
	}
	c, _, err := v.dialer.dial(v.r.hardCtx, p.addr, deadline, nil)
	if err != nil {
		return nil, 0, err
	}
	c.SetDeadline(deadline)
	req := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n" + p.auth + "\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, 0, err
	}
	// Read the answer byte by byte up to its blank line, so that nothing
	// of the tunnelled stream is consumed here.
	var head []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if _, err := c.Read(one); err != nil {
			c.Close()
			return nil, 0, err
		}
		if head = append(head, one[0]); len(head) > 16<<10 {
			c.Close()
			return nil, 0, errors.New("proxy: CONNECT answer too long")
		}
	}
	if f := bytes.Fields(head); len(f) < 2 || f[1][0] != '2' {
		c.Close()
		return nil, 0, fmt.Errorf("proxy: CONNECT %s: %s", addr, bytes.SplitN(head, []byte("\r\n"), 2)[0])
	}
	c.SetDeadline(time.Time{})
	return c, 0, nil
}

func (v *vu) closeConn() {
	if v.c == nil {
		return
	}
	v.active.Store(nil)
	v.c.nc.Close()
	v.c = nil
}

// interrupt cuts off the VU's in-flight request: called by the stopper
// when the grace expires, from another goroutine.
func (v *vu) interrupt() {
	v.dialer.interrupt()
	if c := v.active.Load(); c != nil {
		c.raw.SetDeadline(time.Unix(1, 0))
	}
}
