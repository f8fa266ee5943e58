//go:build !linux

package vu

import (
	"context"
	"net"
	"sync/atomic"
	"time"
)

// tcpDialer dials through net.Dialer where the lean dialer of
// dial_linux.go is not built; the run's hard stop cancels ctx.
type tcpDialer struct {
	nd net.Dialer
}

func newTCPDialer(*atomic.Bool) *tcpDialer {
	// No TCP keep-alive probes: a VU's connection is busy or closed.
	return &tcpDialer{nd: net.Dialer{KeepAlive: -1}}
}

func (d *tcpDialer) dial(ctx context.Context, addr string, deadline time.Time, _ int64) (net.Conn, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return d.nd.DialContext(ctx, "tcp", addr)
}

func (d *tcpDialer) interrupt() {}
