package conn

// exchange is the state of one Exchange, kept in the Line so that its
// callback is bound once and nothing is allocated per request.
type exchange struct {
	out, in    []byte // what to write, then nil; where to read
	w, n       int    // written, read
	wrote      int64  // when the write returned (with Timings)
	werr, rerr error
}

// Exchanged is what an Exchange did.
type Exchanged struct {
	// Written is how many bytes of the request went out, WroteAt when the
	// write returned (the run's clock; with Timings only).
	Written int
	WroteAt int64
	// Read is how many bytes of the answer were read.
	Read int
	// WriteErr is why the request did not go out (Written is then how
	// much did); ReadErr why nothing could be read after it went. A
	// request only partly written without an error (the socket's buffer
	// was full) has neither: its caller writes the rest and reads itself.
	WriteErr, ReadErr error
}

// CanExchange reports whether Exchange can carry a request on the Line's
// connection: a plain TCP connection of the Linux dialer. Elsewhere (TLS,
// other platforms) a protocol writes and reads on Conn.NC.
func (l *Line) CanExchange() bool {
	return l.c != nil && l.c.rc != nil && l.c.NC == l.c.Raw
}

// Exchange writes out, a whole request, on the Line's connection, then
// waits for its answer and reads into in what has come of it: one write,
// one read, and one wait on the poller between them, where a write then
// a read would try the read first, fail it (nothing has come yet) and
// wait then. The wait is armed before the write goes, so that an answer
// that comes at once is not missed. Bounded by the deadline Arm set; cut
// by Interrupt. Only when CanExchange.
func (l *Line) Exchange(out, in []byte) Exchanged {
	x := &l.xch
	*x = exchange{out: out, in: in}
	if len(out) == 0 || len(in) == 0 {
		panic("conn: Exchange of nothing")
	}
	err := l.c.rc.Read(l.xchFn)
	x.out, x.in = nil, nil
	e := Exchanged{Written: x.w, WroteAt: x.wrote, Read: x.n}
	switch {
	case x.werr != nil:
		e.WriteErr = l.c.opError("write", x.werr)
	case err != nil && x.w == 0:
		e.WriteErr = l.c.opError("write", err) // cut, or timed out, before the write
	case err != nil:
		e.ReadErr = l.c.opError("read", err)
	case x.rerr != nil:
		e.ReadErr = l.c.opError("read", x.rerr)
	}
	return e
}
