package capture

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"time"
)

// serve proxies one client connection of the reverse proxy over its own
// upstream connection.
func (p *Proxy) serve(c net.Conn, connID int64) {
	up, err := net.DialTimeout("tcp", p.opt.Upstream, 10*time.Second)
	if err != nil {
		p.stats.errs.Add(1)
		io.WriteString(c, badGateway)
		return
	}
	p.ups.Store(up, struct{}{})
	defer func() { p.ups.Delete(up); up.Close() }()
	cl := p.newClient(c, c, nil)
	// An upstream silent for the idle timeout ends the exchange: it
	// would hold its client's connection for good.
	idle := idleConn{up, p.opt.IdleTimeout}
	ur, uw := bufio.NewReaderSize(idle, 64<<10), bufio.NewWriterSize(idle, 64<<10)
	session := "c-" + strconv.FormatInt(connID, 10)
	for {
		h, ok := p.nextHead(cl)
		if !ok {
			return
		}
		x, err := p.pass(cl, h, h.req.Raw, uw, ur)
		if err != nil {
			p.fail(h.seq)
			if !x.answered {
				io.WriteString(cl.bw, badGateway)
				cl.bw.Flush()
			}
			return
		}
		if x.res.Status == 101 { // HTTP is over on this connection
			answered, ws := p.relayUpgrade(cl, h.req, x, upstreamSide{r: ur, w: idle, conn: up})
			x.ws = ws
			p.recordRaw(h.seq, h.req, x, exchange{start: h.start, end: answered, session: session, host: p.opt.Authority})
			return
		}
		p.recordRaw(h.seq, h.req, x, exchange{start: h.start, end: time.Now(), session: session, host: p.opt.Authority})
		if h.req.Close || x.res.Close {
			return
		}
	}
}

// fail counts a failed exchange and gives its ticket back empty.
func (p *Proxy) fail(seq int64) {
	p.stats.errs.Add(1)
	p.w.Done(seq, nil)
}

// idleConn is a connection each of whose reads and writes must move
// within d.
type idleConn struct {
	net.Conn
	d time.Duration
}

func (c idleConn) Read(b []byte) (int, error) {
	c.SetReadDeadline(time.Now().Add(c.d))
	return c.Conn.Read(b)
}

func (c idleConn) Write(b []byte) (int, error) {
	c.SetWriteDeadline(time.Now().Add(c.d))
	return c.Conn.Write(b)
}
