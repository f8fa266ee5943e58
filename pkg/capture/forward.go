package capture

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/internal/h2serve"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/reach"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/tlsca"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/negotiate"
)

// ForwardOptions configure a forward proxy: the recording's Options
// (Upstream unused: each request names its host), the CA that terminates
// TLS inside CONNECT tunnels, and how the real hosts are reached.
type ForwardOptions struct {
	Options
	// CA issues the leaf certificates a tunnel's TLS is terminated with:
	// --ca-cert and --ca-key, or --ca-out (generated once). Required.
	CA tlsca.Options
	// Reach is how the calls are made again to the real hosts.
	Reach reach.Options
}

// Validate checks o without reading any file. Its errors name the flag.
func (o *ForwardOptions) Validate() error {
	if !o.CA.Given() {
		return errors.New("--forward: HTTPS_PROXY calls arrive as TLS inside CONNECT tunnels, terminated with a CA's certificates: give --ca-out DIR (a CA generated once) or --ca-cert and --ca-key")
	}
	return o.CA.Validate()
}

// forward is what a forward proxy adds to a Proxy.
type forward struct {
	ca     *tlsca.CA
	dialer *conn.Dialer
	pool   *negotiate.Pool
	h2     *h2serve.Server
	// h2hosts are the authorities that answered "h2" by ALPN: their
	// HTTP/2 clients' calls go through pool.
	h2hosts sync.Map
	// mu guards free: the upstreams of HTTP/2 clients' calls to HTTP/1.1
	// hosts, kept between calls.
	mu   sync.Mutex
	free []*upstream
}

func (f *forward) getUpstream() *upstream {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.free); n > 0 {
		u := f.free[n-1]
		f.free = f.free[:n-1]
		return u
	}
	return f.upstream()
}

func (f *forward) putUpstream(u *upstream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.free = append(f.free, u)
}

// ListenForward starts a forward proxy on addr that writes pairs, each
// with direction OUT, to w (flushed every 200 ms and at Close). A CA to
// generate into --ca-out is written once the proxy listens.
func ListenForward(addr string, w io.Writer, opt ForwardOptions) (*Proxy, error) {
	f, fo, saveCA, err := prepareForward(opt)
	if err != nil {
		return nil, err
	}
	ln, err := fo.bind(addr)
	if err != nil {
		return nil, err
	}
	if saveCA != nil {
		if err := saveCA(); err != nil {
			ln.Close()
			return nil, err
		}
	}
	return serve(ln, w, fo, f), nil
}

// prepareForward checks opt, reads its files and makes the CA (saveCA,
// when not nil, writes it into --ca-out) and the way to the real hosts,
// writing nothing.
func prepareForward(opt ForwardOptions) (f *forward, fo Options, saveCA func() error, err error) {
	if err := opt.Validate(); err != nil {
		return nil, fo, nil, err
	}
	if err := opt.Reach.Check(); err != nil {
		return nil, fo, nil, err
	}
	if fo, err = opt.Options.withDefaults(); err != nil {
		return nil, fo, nil, err
	}
	ca, saveCA, err := opt.CA.Load()
	if err != nil {
		return nil, fo, nil, err
	}
	pol, err := fo.policy()
	if err != nil {
		return nil, fo, nil, err
	}
	co := opt.Reach.ConnOptions()
	co.Allow = pol.CheckUpstream // on the address dialed: a name that resolves to loopback is refused too
	d, err := conn.New(co)
	if err != nil {
		return nil, fo, nil, err
	}
	t, err := negotiate.New(negotiate.Options{Conn: co, HTTP2: negotiate.On,
		Answer: transport.AnswerOptions{MaxBody: int(max(fo.MaxBody, transport.DefaultMaxBody)), MaxHeaderBytes: 64 << 10}})
	if err != nil {
		return nil, fo, nil, err
	}
	return &forward{ca: ca, dialer: d, pool: t.Pool()}, fo, saveCA, nil
}

func (f *forward) shutdown(ctx context.Context) { go f.h2.Shutdown(ctx) }

func (f *forward) close() {
	f.pool.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.free {
		u.line.Close()
	}
	f.free = nil
}

// h1Only is what an HTTP/1.x exchange's upstream connection may speak.
var h1Only = conn.Protocols{ALPN: []string{"http/1.1"}}

// upstream is a client connection's way to the real hosts for its
// HTTP/1.x exchanges: a conn.Line (one connection at a time, kept alive
// while the host stays the same), and the reader and writer of its
// connection.
type upstream struct {
	line *conn.Line
	cn   *conn.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
}

func unixNano() int64 { return time.Now().UnixNano() }

// use makes cn the connection u reads and writes, each read and write
// giving the exchange the upstream timeout again (Line.Arm): a body that
// keeps moving may take longer than it, a host that stops may not.
func (u *upstream) use(cn *conn.Conn) {
	if cn != u.cn {
		u.cn, u.br, u.bw = cn, bufio.NewReaderSize(armed{u}, 64<<10), bufio.NewWriterSize(armed{u}, 64<<10)
	}
	u.line.Arm()
}

// armed is an upstream connection whose reads and writes each arm it.
type armed struct{ u *upstream }

func (a armed) Read(b []byte) (int, error) {
	a.u.line.Arm()
	return a.u.cn.NC.Read(b)
}

func (a armed) Write(b []byte) (int, error) {
	a.u.line.Arm()
	return a.u.cn.NC.Write(b)
}

func (f *forward) upstream() *upstream { return &upstream{line: f.dialer.NewLine(unixNano)} }

// roundTrip passes the exchange of h to authority over scheme: raw (its
// head as it goes) and its body, then the answer back to the client.
func (p *Proxy) roundTrip(u *upstream, cl *client, h head, raw []byte, scheme, authority string) (passed, error) {
	dst := u.line.Route(&rrpair.Request{Scheme: []byte(scheme), Host: []byte(authority)})
	var res result.Result
	cn, _, kind := u.line.Connect(&dst, &res, &h1Only, nil)
	if kind != result.ErrNone {
		_, err := u.line.Failure()
		return passed{}, fmt.Errorf("%s %s: %w", kind, dst.Addr, err)
	}
	u.use(cn)
	x, err := p.pass(cl, h, raw, u.bw, u.br)
	if err != nil {
		u.line.Drop(err)
		return x, err
	}
	u.line.Idle(unixNano())
	if x.res.Close {
		u.line.Drop(nil)
	}
	return x, nil
}

// serveForward serves one client connection of the forward proxy:
// absolute-form requests (HTTP_PROXY), or a CONNECT that turns it into a
// tunnel (HTTPS_PROXY).
func (p *Proxy) serveForward(c net.Conn, connID int64, h2 *atomic.Bool) {
	session := "c-" + strconv.FormatInt(connID, 10)
	up := p.fwd.upstream()
	defer up.line.Close()
	cl := p.newClient(c, c, nil)
	for {
		h, ok := p.nextHead(cl)
		if !ok {
			return
		}
		req := h.req
		if req.Method == "CONNECT" {
			p.w.Done(h.seq, nil)
			c.SetReadDeadline(time.Time{})
			p.stats.tunnels.Add(1)
			if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
				return
			}
			p.serveTunnel(&bufConn{Conn: c, br: cl.br}, req.Target, session, h2)
			return
		}
		scheme, authority, origin, ok := reach.AbsoluteForm(req.Target)
		if !ok {
			p.fail(h.seq)
			p.badRequest(cl, "a forward proxy takes absolute-form requests (HTTP_PROXY: GET http://host/path) and CONNECT (HTTPS_PROXY), got target "+strconv.Quote(req.Target))
			return
		}
		raw := originForm(req, origin)
		if !p.exchangeH1(up, cl, h, raw, scheme, authority, session) {
			return
		}
	}
}

// serveTunnel serves a CONNECT tunnel to target (host:port): TLS
// terminated with the leaf of the name asked for, or plaintext, then
// HTTP/2 when ALPN chose it, else HTTP/1.x, origin-form.
func (p *Proxy) serveTunnel(c net.Conn, target, session string, h2 *atomic.Bool) {
	name, _, err := net.SplitHostPort(target)
	if err != nil {
		p.stats.errs.Add(1)
		return
	}
	ac, err := tlsca.Accept(c, p.fwd.ca, name, []string{"h2", "http/1.1"}, time.Now().Add(p.opt.HeadTimeout))
	if err != nil {
		if !errors.Is(err, io.EOF) {
			p.stats.errs.Add(1)
		}
		return
	}
	c.SetDeadline(time.Time{})
	scheme := "http"
	if ac.TLS {
		scheme = "https"
		p.stats.tls.Add(1)
	}
	authority := reach.Authority(target, scheme)
	if ac.Proto == "h2" {
		h2.Store(true)
		tn := &tunnel{scheme: scheme, authority: authority, session: session}
		tn.idle.L = &tn.mu
		p.fwd.h2.Serve(ac.Conn, tn) // the *tls.Conn: net/http tells TLS by its type
		tn.wait()
		return
	}
	up := p.fwd.upstream()
	defer up.line.Close()
	cl := p.newClient(c, ac, nil)
	for {
		h, ok := p.nextHead(cl)
		if !ok {
			return
		}
		h.req.Headers = dropProxyHeaders(h.req.Headers)
		if !p.exchangeH1(up, cl, h, h.req.Raw, scheme, authority, session) {
			return
		}
	}
}

// exchangeH1 makes an HTTP/1.x exchange again to the real host and
// records it; false when the client connection ends after it.
func (p *Proxy) exchangeH1(up *upstream, cl *client, h head, raw []byte, scheme, authority, session string) bool {
	x, err := p.roundTrip(up, cl, h, raw, scheme, authority)
	if err != nil {
		p.fail(h.seq)
		if !x.answered {
			msg := "replay record --forward: " + authority + ": " + err.Error()
			io.WriteString(cl.bw, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(msg))+"\r\n\r\n"+msg)
			cl.bw.Flush()
		}
		return false
	}
	end := time.Now()
	if x.res.Status == 101 { // HTTP is over on this connection
		end, x.ws = p.relayUpgrade(cl, h.req, x, upstreamSide{r: up.br, w: armed{up}, conn: up.cn.NC})
		up.line.Drop(nil)
	}
	p.recordRaw(h.seq, h.req, x, exchange{start: h.start, end: end, session: session, host: authority, scheme: scheme, direction: "OUT"})
	return !h.req.Close && !x.res.Close && x.res.Status != 101
}

// originForm is req as it goes to the host it names: the request line in
// origin-form, the proxy's own headers (Proxy-Connection,
// Proxy-Authorization) left out, every other byte as the client sent it.
// req's target and headers become what is recorded.
func originForm(req *rawhttp.Message, origin string) []byte {
	raw := req.Raw
	out := make([]byte, 0, len(raw))
	out = append(out, req.Method+" "+origin+" HTTP/"+req.Version+"\r\n"...)
	rest := raw[bytes.IndexByte(raw, '\n')+1:]
	for {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			break
		}
		line := rest[:nl+1]
		rest = rest[nl+1:]
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			out = append(out, line...)
			break
		}
		name, _, _ := bytes.Cut(line, []byte(":"))
		if !proxyHeader(string(name)) {
			out = append(out, line...)
		}
	}
	req.Target, req.Headers = origin, dropProxyHeaders(req.Headers)
	return append(out, rest...)
}

// proxyHeader reports whether a header is the proxy's own, not the
// request's.
func proxyHeader(name string) bool {
	return strings.EqualFold(name, "Proxy-Connection") || strings.EqualFold(name, "Proxy-Authorization")
}

func dropProxyHeaders(hs []rrpair.Field) []rrpair.Field {
	out := hs[:0:0]
	for _, h := range hs {
		if !proxyHeader(h.Name) {
			out = append(out, h)
		}
	}
	return out
}

// bufConn is a connection whose reads go through br, which may hold what
// the client sent after its CONNECT.
type bufConn struct {
	net.Conn
	br *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.br.Read(p) }
