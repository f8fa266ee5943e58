// Package capture is replay's recording reverse proxy: it passes each
// HTTP/1.x request to an upstream and its answer back byte for byte (raw
// path, header case and order, body), and writes each exchange as an
// RRPair line. Each client connection gets its own upstream connection,
// so keep-alive behaves as it did; a single writer owns the output, fed
// through a bounded queue, so memory does not grow with traffic.
package capture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/internal/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Options configure a Proxy.
type Options struct {
	Upstream string // host:port to forward to
	// Session names the session of a pair: "" is one session per client
	// connection; "header:NAME" or "cookie:NAME" takes it from the request.
	Session      string
	RedactHeader []string // header names whose values are recorded as REDACTED
	RedactJSON   []string // top-level (dotted) JSON body fields recorded as REDACTED
	// MaxBody: an exchange whose request body is larger is passed on but
	// not recorded (a replay of a cut body would be a lie); an answer body
	// larger is recorded without its body. Default 16 MiB. Each message is
	// held in memory while it passes.
	MaxBody int64
	// IdleTimeout closes a client connection idle this long (default 2m).
	IdleTimeout time.Duration
}

// Redacted replaces a redacted value.
const Redacted = "REDACTED"

// Stats say what a proxy did.
type Stats struct {
	Connections int64
	Pairs       int64 // exchanges recorded
	Errors      int64 // exchanges that failed (upstream down, bad request)
	TooLarge    int64 // exchanges passed on but not recorded: a request body over MaxBody
	// Unreplayable: exchanges passed on but not recorded, as their pair
	// would make the file refused by Open (a request target that is not a
	// path, such as "GET foo HTTP/1.1").
	Unreplayable int64
}

// Proxy is a running recording proxy.
type Proxy struct {
	opt   Options
	ln    net.Listener
	out   chan []byte
	done  chan error // the writer's result
	wg    sync.WaitGroup
	conns sync.Map // net.Conn -> struct{}, open client connections
	stats struct{ conns, pairs, errs, large, unreplayable atomic.Int64 }
	seq   atomic.Int64
	// closing is set by Close before it cuts idle reads off, so that a
	// connection setting its next read's deadline sees one or the other.
	closing atomic.Bool
}

// Listen starts a proxy on addr that forwards to opt.Upstream and writes
// pairs to w (flushed every 200 ms and at Close).
func Listen(addr string, w io.Writer, opt Options) (*Proxy, error) {
	if opt.Upstream == "" {
		return nil, errors.New("no upstream")
	}
	if opt.MaxBody == 0 {
		opt.MaxBody = 16 << 20
	}
	if opt.IdleTimeout == 0 {
		opt.IdleTimeout = 2 * time.Minute
	}
	if s := opt.Session; s != "" && !strings.HasPrefix(s, "header:") && !strings.HasPrefix(s, "cookie:") {
		return nil, fmt.Errorf("session %q: want header:NAME or cookie:NAME", s)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{opt: opt, ln: ln, out: make(chan []byte, 1024), done: make(chan error, 1)}
	go p.write(w)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stats reports what the proxy did so far.
func (p *Proxy) Stats() Stats {
	return Stats{Connections: p.stats.conns.Load(), Pairs: p.stats.pairs.Load(), Errors: p.stats.errs.Load(),
		TooLarge: p.stats.large.Load(), Unreplayable: p.stats.unreplayable.Load()}
}

// Close stops accepting, lets each connection finish the exchange under
// way (within ctx), closes them, and flushes the output. It returns the
// writer's error.
func (p *Proxy) Close(ctx context.Context) error {
	p.closing.Store(true)
	p.ln.Close()
	finished := make(chan struct{})
	go func() { p.wg.Wait(); close(finished) }()
	// Idle connections wait in a read: cut them off now; busy ones get ctx.
	p.conns.Range(func(k, _ any) bool {
		k.(net.Conn).SetReadDeadline(time.Now())
		return true
	})
	select {
	case <-finished:
	case <-ctx.Done():
		p.conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		<-finished
	}
	close(p.out)
	return <-p.done
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.stats.conns.Add(1)
		p.wg.Add(1)
		go p.serve(c, p.seq.Add(1))
	}
}

// write is the one writer of the output.
func (p *Proxy) write(w io.Writer) {
	bw := bufio.NewWriterSize(w, 64<<10)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var err error
	for {
		select {
		case line, ok := <-p.out:
			if !ok {
				if ferr := bw.Flush(); err == nil {
					err = ferr
				}
				p.done <- err
				return
			}
			if _, werr := bw.Write(line); werr != nil && err == nil {
				err = werr
			}
		case <-tick.C:
			if ferr := bw.Flush(); ferr != nil && err == nil {
				err = ferr
			}
		}
	}
}

// serve proxies one client connection over its own upstream connection.
func (p *Proxy) serve(c net.Conn, connID int64) {
	defer p.wg.Done()
	p.conns.Store(c, struct{}{})
	defer func() { p.conns.Delete(c); c.Close() }()
	up, err := net.DialTimeout("tcp", p.opt.Upstream, 10*time.Second)
	if err != nil {
		p.stats.errs.Add(1)
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	defer up.Close()
	cr, ur := bufio.NewReaderSize(c, 64<<10), bufio.NewReaderSize(up, 64<<10)
	session := "c-" + strconv.FormatInt(connID, 10)
	for {
		c.SetReadDeadline(time.Now().Add(p.opt.IdleTimeout))
		if p.closing.Load() {
			return
		}
		req, err := rawhttp.Read(cr, true, "", c)
		if err != nil {
			if !errors.Is(err, io.EOF) && !isTimeout(err) {
				p.stats.errs.Add(1)
			}
			return
		}
		start := time.Now()
		if _, err := up.Write(req.Raw); err != nil {
			p.stats.errs.Add(1)
			io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		res, err := rawhttp.ReadResponse(ur, req.Method, func(m *rawhttp.Message) error {
			if m.Status == 100 && req.Continued || req.Version == "1.0" {
				return nil // the client had its 100 from us, or takes no 1xx (RFC 9110 15.2)
			}
			_, err := c.Write(m.Raw) // interim answers pass on, unrecorded
			return err
		})
		if err != nil {
			p.stats.errs.Add(1)
			return
		}
		end := time.Now()
		if _, err := c.Write(res.Raw); err != nil {
			p.stats.errs.Add(1)
			return
		}
		if int64(len(req.Body)) > p.opt.MaxBody {
			p.stats.large.Add(1)
		} else {
			if int64(len(res.Body)) > p.opt.MaxBody {
				res.Body = nil
			}
			p.record(req, res, start, end, session)
		}
		if req.Close || res.Close {
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// record queues the pair of an exchange, unless Open would refuse it.
func (p *Proxy) record(req, res *rawhttp.Message, start, end time.Time, connSession string) {
	r := &rrpair.Record{TS: start, Duration: max(end.Sub(start), time.Microsecond), Protocol: "http", Version: req.Version,
		Method: req.Method, URI: req.Target, Status: res.Status}
	session := connSession
	if s := p.opt.Session; s != "" {
		session = ""
		kind, name, _ := strings.Cut(s, ":")
		for _, h := range req.Headers {
			switch {
			case kind == "header" && strings.EqualFold(h.Name, name):
				session = h.Value
			case kind == "cookie" && strings.EqualFold(h.Name, "Cookie"):
				for _, kv := range strings.Split(h.Value, ";") {
					if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == name {
						session = v
					}
				}
			}
		}
	}
	r.Session = session
	for _, h := range req.Headers {
		if strings.EqualFold(h.Name, "Host") {
			r.Host = h.Value
		}
		if !rrpair.ConnectionHeader(h.Name) {
			r.Headers = append(r.Headers, p.redactHeader(h))
		}
	}
	for _, h := range res.Headers {
		if !rrpair.ConnectionHeader(h.Name) {
			r.ResHeaders = append(r.ResHeaders, p.redactHeader(h))
		}
	}
	r.Body, r.ResBody = p.redactJSON(req.Body), p.redactJSON(res.Body)
	line, err := rrpair.AppendChecked(nil, r)
	if err != nil {
		p.stats.unreplayable.Add(1)
		return
	}
	p.stats.pairs.Add(1)
	p.out <- line
}

func (p *Proxy) redactHeader(h rrpair.Field) rrpair.Field {
	for _, name := range p.opt.RedactHeader {
		if strings.EqualFold(h.Name, name) {
			return rrpair.Field{Name: h.Name, Value: Redacted}
		}
	}
	return h
}

// redactJSON replaces the configured fields of a JSON object body. A body
// it changes is written again by encoding/json (keys sorted).
func (p *Proxy) redactJSON(body []byte) []byte {
	if len(p.opt.RedactJSON) == 0 || len(body) == 0 || bytes.TrimSpace(body)[0] != '{' {
		return body
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return body
	}
	changed := false
	for _, path := range p.opt.RedactJSON {
		obj := doc
		parts := strings.Split(path, ".")
		for i, k := range parts {
			v, ok := obj[k]
			if !ok {
				break
			}
			if i == len(parts)-1 {
				obj[k] = Redacted
				changed = true
				break
			}
			if obj, ok = v.(map[string]any); !ok {
				break
			}
		}
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return body
	}
	return out
}
