package http1

import (
	"errors"
	"net"
	"time"

	"github.com/replay-dev/replay/pkg/result"
)

// idleProbe: a connection that sat this long since its last answer is
// probed (probeIdle) before a request is written on it. A busy connection
// is not: what the SUT sent beyond an answer is seen in the read buffer
// after the answer (keepOrClose), without a system call.
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
// connect opens a new one (a reconnect, as any), and marks
// res.Unsolicited for bytes. On Linux the probe is a non-blocking peek at
// the socket (peek); a TLS record seen there may be the protocol's own (a
// session ticket, close_notify), so readIdle reads through TLS to tell.
func (c *Client) probeIdle(res *result.Result) {
	cn := c.c
	st := idleUnknown
	if cn.rc != nil {
		c.peekState = idleUnknown
		if cn.rc.Control(c.peekFn) == nil {
			st = c.peekState
		}
	}
	if st == idleUnknown || st == idleData && cn.https {
		st = c.readIdle()
	}
	switch st {
	case idleClosed:
		c.closeConn()
	case idleData:
		res.Unsolicited = true
		c.closeConn()
	}
}

// readIdle reads what waits on the idle connection, through TLS if any,
// for at most idleRead: data, the end of the connection, or nothing.
func (c *Client) readIdle() idleState {
	raw := c.c.raw
	raw.SetReadDeadline(time.Now().Add(idleRead))
	_, err := c.br.Peek(1)
	raw.SetReadDeadline(time.Time{})
	var ne net.Error
	switch {
	case err == nil:
		return idleData
	case errors.As(err, &ne) && ne.Timeout():
		return idleAlive
	}
	return idleClosed
}
