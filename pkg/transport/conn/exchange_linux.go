package conn

import "syscall"

// exchangeStep is Exchange's RawConn read callback (bound once:
// l.xchFn). Its first call writes the request and returns false, so that
// the runtime parks the VU on the poller until the answer makes the
// socket readable; the next calls read. The socket is non-blocking: no
// call blocks, and a read that finds nothing is not made before the wait.
func (l *Line) exchangeStep(fd uintptr) bool {
	x := &l.xch
	if x.out != nil {
		out := x.out
		x.out = nil
		if tc, ok := l.c.Raw.(*tcpConn); ok {
			tc.beforeWrite(fd)
		}
		n, errno := rawIO(syscall.SYS_WRITE, fd, out)
		if l.d.o.Timings {
			x.wrote = l.now()
		}
		switch {
		case errno == syscall.EAGAIN: // the socket's buffer is full: the caller writes
		case errno != 0:
			x.werr = errno
		default:
			x.w = n
		}
		// Only a whole request waits for its answer here; the caller
		// writes what is left of a partial one the usual way.
		return x.w < len(out)
	}
	n, errno := rawIO(syscall.SYS_READ, fd, x.in)
	switch errno {
	case 0:
		x.n = n
	case syscall.EAGAIN: // a wake-up for nothing: wait again
		return false
	default:
		x.rerr = errno
	}
	return true
}

// opError names a failure of Exchange as a read or a write of the
// connection would.
func (cn *Conn) opError(op string, err error) error {
	if tc, ok := cn.Raw.(*tcpConn); ok {
		return tc.opError(op, err)
	}
	return err
}
