package capture

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/replay-dev/replay/internal/rawhttp"
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
	defer up.Close()
	cr, ur := bufio.NewReaderSize(c, 64<<10), bufio.NewReaderSize(up, 64<<10)
	session := "c-" + strconv.FormatInt(connID, 10)
	for {
		if !p.awaitRequest(c, cr) {
			return
		}
		// The ticket and ts of the request's first byte: lines go in the
		// order requests began, whatever their bodies' length.
		seq, start := p.w.BeginAt()
		req, ok := p.readRequest(cr, c)
		if !ok {
			p.w.Done(seq, nil)
			return
		}
		if _, err := up.Write(req.Raw); err != nil {
			p.fail(seq)
			io.WriteString(c, badGateway)
			return
		}
		res, err := passAnswer(ur, c, req)
		if err != nil {
			p.fail(seq)
			return
		}
		end := time.Now()
		if _, err := c.Write(res.Raw); err != nil {
			p.fail(seq)
			return
		}
		p.recordRaw(seq, req, res, exchange{start: start, end: end, session: session, host: p.opt.Authority})
		if req.Close || res.Close {
			return
		}
	}
}

// passAnswer reads the answer to req from upstream (ur), passing interim
// answers on to the client c.
func passAnswer(ur *bufio.Reader, c io.Writer, req *rawhttp.Message) (*rawhttp.Message, error) {
	return rawhttp.ReadResponse(ur, req.Method, func(m *rawhttp.Message) error {
		if m.Status == 100 && req.Continued || req.Version == "1.0" {
			return nil // the client had its 100 from us, or takes no 1xx (RFC 9110 15.2)
		}
		_, err := c.Write(m.Raw) // interim answers pass on, unrecorded
		return err
	})
}

// fail counts a failed exchange and gives its ticket back empty.
func (p *Proxy) fail(seq int64) {
	p.stats.errs.Add(1)
	p.w.Done(seq, nil)
}
