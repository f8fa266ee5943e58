package capture

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// client is a client connection's side of its HTTP/1.x exchanges: what
// is read (through br) and written (through bw), and the deadlines of the
// connection under them. A head must come whole within the head timeout;
// while a body streams, each read and write has the idle timeout.
type client struct {
	p         *Proxy
	c         net.Conn      // where the deadlines are set
	rw        io.ReadWriter // read and written: c, or TLS over it
	br        *bufio.Reader
	bw        *bufio.Writer
	streaming bool // reads and writes move their deadline on
}

func (p *Proxy) newClient(c net.Conn, rw io.ReadWriter, br *bufio.Reader) *client {
	cl := &client{p: p, c: c, rw: rw}
	if br == nil {
		br = bufio.NewReaderSize(timedReader{cl}, 64<<10)
	}
	cl.br, cl.bw = br, bufio.NewWriterSize(timedWriter{cl}, 64<<10)
	return cl
}

type timedReader struct{ cl *client }

func (t timedReader) Read(b []byte) (int, error) {
	if t.cl.streaming {
		t.cl.c.SetReadDeadline(time.Now().Add(t.cl.p.opt.IdleTimeout))
	}
	return t.cl.rw.Read(b)
}

type timedWriter struct{ cl *client }

func (t timedWriter) Write(b []byte) (int, error) {
	t.cl.c.SetWriteDeadline(time.Now().Add(t.cl.p.opt.IdleTimeout))
	return t.cl.rw.Write(b)
}

// head is a request's head as read, with its ticket and when it began.
type head struct {
	seq   int64
	start time.Time
	req   *rawhttp.Message
	f     rawhttp.Framing
}

// nextHead reads a client connection's next request head: its first byte
// within the idle timeout, the rest within the head timeout. ok is false
// when the connection ends: the proxy is closing, the client went or was
// too slow, or sent what is not a request (counted; a head framed against
// RFC 9112 answered 400).
func (p *Proxy) nextHead(cl *client) (h head, ok bool) {
	cl.streaming = false
	if !p.awaitRequest(cl.c, cl.br) {
		return h, false
	}
	// The ticket and ts of the request's first byte: lines go in the
	// order requests began, whatever their bodies' length.
	h.seq, h.start = p.w.BeginAt()
	cl.c.SetReadDeadline(time.Now().Add(p.opt.HeadTimeout))
	req, f, err := rawhttp.ReadHead(cl.br, true)
	if err != nil {
		p.w.Done(h.seq, nil)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isTimeout(err) {
			p.stats.slow.Add(1)
		} else {
			p.stats.errs.Add(1)
			p.badRequest(cl, err.Error())
		}
		return h, false
	}
	h.req, h.f = req, f
	return h, true
}

// badRequest answers 400 with msg and the connection's end.
func (p *Proxy) badRequest(cl *client, msg string) {
	msg = "replay record: " + msg
	io.WriteString(cl.bw, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(msg))+"\r\n\r\n"+msg)
	cl.bw.Flush()
}

// passed is an exchange passed through: the answer's head, and what was
// kept of both bodies.
type passed struct {
	res              *rawhttp.Message
	reqBody, resBody rawhttp.Body
	// answered says the answer's head went to the client: an error
	// after it cannot be told the client as a 502.
	answered bool
	// ws is the WebSocket session that followed a 101, recorded on its
	// upgrade pair; nil for any other exchange.
	ws *rrpair.WebSocket
}

// pass passes one exchange through: raw (the request's head as it goes
// upstream) and the body, streamed from the client, to uw; the answer
// read from ur, interim answers included, streamed to the client. Bodies
// pass in the buffers' memory whatever their size; each keeps at most
// MaxBody bytes for the record, its whole size counted.
func (p *Proxy) pass(cl *client, h head, raw []byte, uw *bufio.Writer, ur *bufio.Reader) (x passed, err error) {
	x.reqBody, x.resBody = rawhttp.Body{Max: p.opt.MaxBody}, rawhttp.Body{Max: p.opt.MaxBody}
	req := h.req
	if rawhttp.HasToken(req.Headers, "expect", "100-continue") {
		if err := cl.writeFlush(continue100); err != nil {
			return x, err
		}
		req.Continued = true
	}
	cl.streaming = true
	if _, err := uw.Write(raw); err != nil {
		return x, err
	}
	if err := req.CopyBody(uw, cl.br, h.f, "", &x.reqBody); err != nil {
		return x, err
	}
	if err := uw.Flush(); err != nil {
		return x, err
	}
	err = passAnswer(cl, req, ur, &x) // before x is read: passAnswer fills it
	return x, err
}

// passAnswer streams the answer read from ur to the client, the interim
// ones the client takes included (unrecorded), and keeps the final one in x.
func passAnswer(cl *client, req *rawhttp.Message, ur *bufio.Reader, x *passed) error {
	for {
		res, f, err := rawhttp.ReadHead(ur, false)
		if err != nil {
			return err
		}
		if res.Status/100 == 1 && res.Status != 101 {
			if res.Status == 100 && req.Continued || req.Version == "1.0" {
				continue // the client had its 100 from us, or takes no 1xx (RFC 9110 15.2)
			}
			if err := cl.writeFlush(res.Raw); err != nil { // interim answers pass on, unrecorded
				return err
			}
			continue
		}
		x.res, x.answered = res, true
		if _, err := cl.bw.Write(res.Raw); err != nil {
			return err
		}
		if err := res.CopyBody(cl.bw, ur, f, req.Method, &x.resBody); err != nil {
			return err
		}
		return cl.bw.Flush()
	}
}

// continue100 is the interim answer the proxy gives a request that
// expects one.
var continue100 = []byte("HTTP/1.1 100 Continue\r\n\r\n")

// writeFlush writes b to the client and flushes it.
func (cl *client) writeFlush(b []byte) error {
	if _, err := cl.bw.Write(b); err != nil {
		return err
	}
	return cl.bw.Flush()
}
