package conn

import (
	"errors"
	"net"
	"time"

	"github.com/replay-dev/replay/pkg/result"
)

// idleProbe: a connection that sat this long since its last answer is
// probed (probeIdle) before a request is written on it. A busy connection
// is not: what the SUT sent beyond an answer is the protocol's to see in
// its read buffer after the answer (HTTP/1.1's keepOrClose), without a
// system call.
const idleProbe = time.Millisecond

// idleRead bounds readIdle's wait, where a read has to tell (TLS, or no
// probe on the platform).
const idleRead = time.Millisecond

// idleState is what probeIdle learned of an idle connection.
type idleState uint8

const (
	idleUnknown idleState = iota // the probe could not tell
	idleAlive                    // nothing to read: the connection is usable
	idleClosed                   // EOF or RST: the SUT closed it
	idleData                     // bytes no request asked for
)

// probeIdle checks, before a request is written on a connection that sat
// idle, that the SUT has not closed it meanwhile (a keep-alive timeout)
// and sent nothing unasked. Otherwise it closes the connection, so that
// Connect opens a new one (a reconnect, as any), and marks
// res.Unsolicited for bytes. On Linux the probe is a non-blocking peek at
// the socket (peek); a TLS record seen there may be the protocol's own (a
// session ticket, close_notify), so readIdle reads through TLS to tell.
func (l *Line) probeIdle(res *result.Result) {
	cn := l.c
	st := idleUnknown
	if cn.rc != nil {
		l.peekState = idleUnknown
		if cn.rc.Control(l.peekFn) == nil {
			st = l.peekState
		}
	}
	if st == idleUnknown || st == idleData && cn.HTTPS {
		st = l.readIdle()
	}
	switch st {
	case idleClosed: // the SUT closed it: ended cleanly
		l.endConn(true)
	case idleData:
		res.Unsolicited = true
		l.closeConn()
	}
}

// readIdle reads what waits on the idle connection, through TLS if any,
// for at most idleRead: data, the end of the connection, or nothing. A
// byte it reads is lost, but then the connection is not used again.
func (l *Line) readIdle() idleState {
	cn := l.c
	cn.Raw.SetReadDeadline(time.Now().Add(idleRead))
	n, err := cn.NC.Read(l.peekBuf[:])
	for i := 0; n == 0 && err == nil && i < 100; i++ { // as bufio does
		n, err = cn.NC.Read(l.peekBuf[:])
	}
	cn.Raw.SetReadDeadline(time.Time{})
	var ne net.Error
	switch {
	case n > 0:
		return idleData
	case errors.As(err, &ne) && ne.Timeout():
		return idleAlive
	}
	return idleClosed
}
