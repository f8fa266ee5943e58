//go:build !linux

package conn

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// tcpDialer dials through net.Dialer where the lean dialer of
// dial_linux.go is not built; the Line's Interrupt cancels ctx.
type tcpDialer struct {
	nd     net.Dialer
	sentAt int64 // never set: nothing is sent early
}

func newTCPDialer(*atomic.Bool, func() int64) *tcpDialer {
	// No TCP keep-alive probes: a VU's connection is busy or closed.
	return &tcpDialer{nd: net.Dialer{KeepAlive: -1}}
}

// dial sends nothing early: first is written by the caller.
func (d *tcpDialer) dial(ctx context.Context, addr string, deadline time.Time, _ []byte) (net.Conn, int, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := d.nd.DialContext(ctx, "tcp", addr)
	return c, 0, err
}

func (d *tcpDialer) interrupt() {}

// setControl has every address dialed checked by control (nil: none).
func (d *tcpDialer) setControl(control func(network, address string, c syscall.RawConn) error) {
	d.nd.Control = control
}
