package conn

import (
	"net"
	"syscall"
	"unsafe"
)

// A VU's sockets are recycled. A connection the VU is done with, plain TCP
// and ended cleanly (Line.Drop with no error), is shut down rather than
// closed: its FIN goes out when close would have sent it, and its socket
// waits as the dialer's spare. The next dial connects that socket again
// once the old connection's close is complete both ways (TCP_CLOSE):
// connect to AF_UNSPEC unconnects it, and connect to the address opens a
// new connection, with a port and a handshake of its own, as a new
// socket's would; on the wire nothing differs (but that bytes the peer
// sent after a complete answer, never read, no longer turn the close into
// a reset: unconnecting drops them). That spares the kernel
// making and freeing a socket (its inode, file and memory) and the
// runtime the poller's registration, an os.File and its finalizer: about
// a fifth of a request's CPU with --no-connection-reuse on loopback.
//
// A spare whose close is not complete is closed then, as it would have
// been at once: the peer has not closed its side, or has not yet
// acknowledged the client's FIN, a round trip after it went. Over a
// network a closed loop dials again sooner than that, so there a spare is
// seldom ready; after one that was not, the next recycleSkip connections
// are closed at once, so that a miss (a state read and a shutdown for
// nothing) costs a VU at most one connection in recycleSkip.

// tcpClose is TCP_CLOSE, the state of a socket whose connection has
// ended both ways (tcp_info's tcpi_state).
const tcpClose = 7

// recycleSkip is how many connections are closed rather than recycled
// after a spare that was not ready.
const recycleSkip = 64

// recycle keeps nc's socket as the dialer's spare, shut down: true when
// it did. nc is then closed for its holders (net.ErrClosed); only
// a connection no other goroutine reads may go (Line.endConn).
func (d *tcpDialer) recycle(nc net.Conn) bool {
	c, ok := nc.(*tcpConn)
	if !ok {
		return false
	}
	if d.skip > 0 {
		d.skip--
		return false
	}
	if c.closed.Swap(true) {
		return false
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_SHUTDOWN, uintptr(c.fd), syscall.SHUT_WR, 0)
	if errno != 0 && errno != syscall.ENOTCONN { // ENOTCONN: already ended (reset)
		c.f.Close()
		return true
	}
	d.closeSpare()
	d.spare = c
	return true
}

// takeSpare is a new connection on the spare socket, unconnected, to be
// connected to ra; nil when there is none or it cannot be (closed then).
func (d *tcpDialer) takeSpare(ra remoteAddr) *tcpConn {
	sp := d.spare
	if sp == nil {
		return nil
	}
	d.spare = nil
	if sp.family != ra.family { // another address family: not a miss
		sp.f.Close()
		return nil
	}
	if tcpState(sp.fd) != tcpClose || disconnect(sp.fd) != 0 {
		sp.f.Close()
		d.skip = recycleSkip
		return nil
	}
	// A reset after the shutdown left its error on the socket, which the
	// connect clears (TestSpareAfterReset).
	return newTCPConnRC(sp.f, sp.fd, ra, sp.rc)
}

// closeSpare closes the spare socket, if any.
func (d *tcpDialer) closeSpare() {
	if d.spare != nil {
		d.spare.f.Close()
		d.spare = nil
	}
}

// tcpState is the TCP state of fd (tcp_info's first byte); 0 when it
// cannot be read.
func tcpState(fd int) byte {
	var info [8]byte
	n := uint32(len(info))
	_, _, errno := syscall.RawSyscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.IPPROTO_TCP, syscall.TCP_INFO,
		uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&n)), 0)
	if errno != 0 {
		return 0
	}
	return info[0]
}

// disconnect unconnects fd, a TCP socket whose connection has ended
// (connect to AF_UNSPEC), so that it may connect again.
func disconnect(fd int) syscall.Errno {
	sa := syscall.RawSockaddr{Family: syscall.AF_UNSPEC}
	_, _, errno := syscall.RawSyscall(syscall.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
	return errno
}
