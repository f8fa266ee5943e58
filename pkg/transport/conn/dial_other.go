//go:build !linux

package conn

import (
	"context"
	"net"
	"net/netip"
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

// allow sets the check of each address dialed (Options.Allow), through
// net.Dialer's Control: on the address about to be connected to.
func (d *tcpDialer) allow(check func(netip.Addr) error) {
	if check == nil {
		return
	}
	d.nd.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		return check(ap.Addr())
	}
}

// recycle keeps no socket here: nc is closed as usual (false).
func (d *tcpDialer) recycle(net.Conn) bool { return false }

func (d *tcpDialer) closeSpare() {}
