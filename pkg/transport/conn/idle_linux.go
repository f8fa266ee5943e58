package conn

import (
	"net"
	"syscall"
	"unsafe"
)

// rawConn is the raw descriptor of a connection tcpDialer opened, for the
// idle probe; nil for any other.
func rawConn(nc net.Conn) syscall.RawConn {
	if tc, ok := nc.(*tcpConn); ok {
		return tc.rc
	}
	return nil
}

// peek is probeIdle's RawConn callback (bound once: l.peekFn): one
// non-blocking MSG_PEEK of a byte, which consumes nothing.
func (l *Line) peek(fd uintptr) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&l.peekBuf[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	switch {
	case errno == syscall.EAGAIN:
		l.peekState = idleAlive
	case errno == syscall.EINTR:
		l.peekState = idleUnknown
	case errno != 0, n == 0: // an RST, or the SUT's FIN
		l.peekState = idleClosed
	default:
		l.peekState = idleData
	}
}
