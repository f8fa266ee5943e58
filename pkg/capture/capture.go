// Package capture is replay's recording proxies: `replay record`, a
// reverse proxy in front of a service, and `replay record --forward`, a
// forward proxy for the service's own outbound calls (HTTP_PROXY,
// HTTPS_PROXY). Each passes every HTTP/1.x request on byte for byte (raw
// path, header case and order, body) and its answer back the same way,
// and writes each exchange as an RRPair line. Each client connection gets
// its own upstream connection, so keep-alive behaves as it did; a single
// writer owns the output, fed through a bounded queue, and writes the
// lines in the order the requests began (Writer), so memory does not grow
// with traffic.
//
// The forward proxy terminates TLS inside CONNECT tunnels with a leaf
// certificate of the name asked for, issued by the CA it is given
// (pkg/tlsca), and makes the call again to the real host with normal
// certificate checks, through the transport's connection layer
// (pkg/transport/conn); a client that offers HTTP/2 by ALPN is served
// HTTP/2 (net/http's server, internal/h2serve) and its calls made again
// with the transport's HTTP/2 client (pkg/transport/negotiate), gRPC
// trailers included. Its pairs say `direction: OUT`.
package capture

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/internal/connset"
	"github.com/replay-dev/replay/internal/h2serve"
	"github.com/replay-dev/replay/internal/listen"
	"github.com/replay-dev/replay/pkg/reach"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/rs/zerolog"
)

// Options configure a Proxy.
type Options struct {
	Upstream string // host:port to forward to (the reverse proxy)
	// Authority is the upstream as its URL names it (--upstream
	// http://svc:8080: "svc:8080"), recorded as each pair's http.req.host
	// by the reverse proxy, so that a replay without --target goes where
	// the recording's requests went; Upstream when empty. The client's
	// Host header is kept as it sent it (replayed with --keep-host).
	Authority string
	// Window is how long a finished exchange's line waits for earlier
	// ones still under way (rrpair.WriterOptions.Window; rrpair.DefaultWindow when 0).
	Window time.Duration
	// Session names the session of a pair: "" is one session per client
	// connection; "header:NAME" or "cookie:NAME" takes it from the request.
	Session string
	// Redact is the preset of headers redacted: RedactCredentials (the
	// default, when "") or RedactNone.
	Redact       string
	RedactHeader []string // header names whose values are recorded as REDACTED
	RedactJSON   []string // top-level (dotted) JSON body fields recorded as REDACTED
	// MaxBody: an exchange whose request body is larger is passed on but
	// not recorded (a replay of a cut body would be a lie); an answer body
	// larger is recorded without its body. Default 16 MiB. Each message is
	// held in memory while it passes.
	MaxBody int64
	// AllowRemote lets the proxy listen beyond loopback (--allow-remote);
	// AllowPublicClients lets it then answer clients from public
	// addresses (--allow-public-clients); AllowUpstream are the CIDR
	// prefixes of loopback or link-local addresses the forward proxy may
	// still reach for a client (--allow-upstream). internal/listen's
	// policy.
	AllowRemote, AllowPublicClients bool
	AllowUpstream                   []string
	// Log is where the listener says what it retried (out of
	// descriptors) and refused (public clients); nothing when zero.
	Log zerolog.Logger
	// IdleTimeout closes a client connection idle this long (default
	// 2m): waiting for a request, or while a body streams, no byte read
	// or written for that long.
	IdleTimeout time.Duration
	// HeadTimeout closes a client connection whose request head (its
	// line and headers) is not whole this long after its first byte
	// (default 30s; HTTP/2: the time to a stream's headers).
	HeadTimeout time.Duration
	// MaxConns bounds the client connections served at once (default
	// DefaultMaxConns, --max-conns): past it, new ones wait in the listen
	// queue, so that a flood of connections holds a bounded memory (an
	// HTTP/2 one its streams' handlers too).
	MaxConns int
}

// DefaultMaxConns is how many client connections a recorder serves at
// once, as many as the mock.
const DefaultMaxConns = 1024

// DefaultHeadTimeout is the time a request head has to come whole
// (--head-timeout).
const DefaultHeadTimeout = 30 * time.Second

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
	// Tunnels are the CONNECT tunnels opened (forward proxy), TLS those
	// that carried TLS, terminated here.
	Tunnels, TLS int64
	// Cut are answers recorded with their body cut at MaxBody
	// (http.res.bodyCut says the whole size).
	Cut int64
	// WebSockets are the WebSocket sessions relayed after their upgrade's
	// 101 and recorded on its pair, their messages with it.
	WebSockets int64
	// Slow are client connections closed for a request head not whole
	// within the head timeout, or ended in the middle of one.
	Slow int64
	// AcceptRetries are accepts that failed for a lack of resources
	// (descriptors, buffers) and were tried again; PublicRefused the
	// clients from public addresses closed (internal/listen);
	// ConnWaits the times accepting waited for a --max-conns slot
	// (listen.Slots.Waited).
	AcceptRetries, PublicRefused, ConnWaits int64
	// OutOfOrder are lines written out of the order their requests began
	// in: exchanges under way longer than the reorder window (Window), or
	// while MaxWaiting later ones were done, written when they ended.
	OutOfOrder int64
}

// Proxy is a running recording proxy.
type Proxy struct {
	opt Options
	fwd *forward // the forward proxy's; nil for the reverse proxy
	ln  *listen.Listener
	w   *rrpair.Writer
	// out is the output Start opened (nil for Listen's writer): put in
	// place by Close.
	out     *openOutput
	outPath string
	wg      sync.WaitGroup // the accept loop
	// slots bounds the connections served (MaxConns); stopAccept, closed
	// by Close, ends an accept loop waiting for one.
	slots      *listen.Slots
	stopAccept chan struct{}
	stopOnce   sync.Once
	conns      connset.Set // open client connections
	ups        sync.Map    // net.Conn -> struct{}: the reverse proxy's upstream connections
	stats      struct {
		conns, pairs, errs, large, unreplayable, tunnels, tls, cut, slow, webSockets atomic.Int64
	}
	seq atomic.Int64
	// closing is set by Close before it cuts idle reads off, so that a
	// connection setting its next read's deadline sees one or the other.
	closing atomic.Bool
}

// withDefaults checks opt and fills its defaults.
func (opt Options) withDefaults() (Options, error) {
	if opt.MaxBody == 0 {
		opt.MaxBody = 16 << 20
	}
	if opt.IdleTimeout == 0 {
		opt.IdleTimeout = 2 * time.Minute
	}
	if opt.HeadTimeout == 0 {
		opt.HeadTimeout = DefaultHeadTimeout
	}
	if opt.MaxConns == 0 {
		opt.MaxConns = DefaultMaxConns
	}
	if opt.MaxConns < 0 {
		return opt, fmt.Errorf("--max-conns: want a positive count, got %d", opt.MaxConns)
	}
	if opt.IdleTimeout < 0 || opt.HeadTimeout < 0 {
		return opt, fmt.Errorf("--idle-timeout %v, --head-timeout %v: want positive durations", opt.IdleTimeout, opt.HeadTimeout)
	}
	if s := opt.Session; s != "" && !strings.HasPrefix(s, "header:") && !strings.HasPrefix(s, "cookie:") {
		return opt, fmt.Errorf("session %q: want header:NAME or cookie:NAME", s)
	}
	switch opt.Redact {
	case "":
		opt.Redact = RedactCredentials
	case RedactCredentials, RedactNone:
	default:
		return opt, fmt.Errorf("--redact %q: want %s (the default) or %s", opt.Redact, RedactCredentials, RedactNone)
	}
	if opt.Window < 0 {
		return opt, fmt.Errorf("--reorder-window: want a positive duration such as 2s, got %v", opt.Window)
	}
	if opt.Authority == "" {
		opt.Authority = opt.Upstream
	}
	return opt, nil
}

// policy is opt's listening policy; its error names --allow-upstream.
func (opt *Options) policy() (listen.Policy, error) {
	ups, err := listen.ParseUpstreams(opt.AllowUpstream)
	return listen.Policy{AllowRemote: opt.AllowRemote, AllowPublicClients: opt.AllowPublicClients, Upstreams: ups}, err
}

// bind listens on addr (--listen) as opt's policy allows.
func (opt *Options) bind(addr string) (*listen.Listener, error) {
	pol, err := opt.policy()
	if err != nil {
		return nil, err
	}
	return listen.Bind(addr, "--listen", pol, "record", opt.Log)
}

// Listen starts a reverse proxy on addr that forwards to opt.Upstream and
// writes pairs to w (flushed every 200 ms and at Close).
func Listen(addr string, w io.Writer, opt Options) (*Proxy, error) {
	if opt.Upstream == "" {
		return nil, errors.New("no upstream")
	}
	return listenOn(addr, w, opt, nil)
}

func listenOn(addr string, w io.Writer, opt Options, fwd *forward) (*Proxy, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	ln, err := opt.bind(addr)
	if err != nil {
		return nil, err
	}
	return serve(ln, w, opt, fwd), nil
}

// serve starts a proxy on ln, its options checked, writing pairs to w.
func serve(ln *listen.Listener, w io.Writer, opt Options, fwd *forward) *Proxy {
	p := &Proxy{opt: opt, fwd: fwd, ln: ln, w: rrpair.NewWriterWith(w, rrpair.WriterOptions{Window: opt.Window}),
		slots: listen.NewSlots(opt.MaxConns, "record", opt.Log), stopAccept: make(chan struct{})}
	if fwd != nil {
		// At most 100 streams a connection, as the mock: a client that
		// opens and resets streams at once holds that many handlers.
		fwd.h2 = h2serve.NewWith(http.HandlerFunc(p.exchangeH2), h2serve.Limits{Idle: opt.IdleTimeout, Streams: 100})
	}
	p.wg.Add(1)
	go p.accept()
	return p
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stats reports what the proxy did so far.
func (p *Proxy) Stats() Stats {
	return Stats{Connections: p.stats.conns.Load(), Pairs: p.stats.pairs.Load(), Errors: p.stats.errs.Load(),
		TooLarge: p.stats.large.Load(), Unreplayable: p.stats.unreplayable.Load(),
		Tunnels: p.stats.tunnels.Load(), TLS: p.stats.tls.Load(), Cut: p.stats.cut.Load(), Slow: p.stats.slow.Load(),
		WebSockets:    p.stats.webSockets.Load(),
		AcceptRetries: p.ln.Retried(), PublicRefused: p.ln.Refused(), ConnWaits: p.slots.Waited(),
		OutOfOrder: p.w.OutOfOrder()}
}

// Close stops accepting, lets each connection finish the exchange under
// way (within ctx), closes them, and flushes the output. It returns the
// writer's error.
func (p *Proxy) Close(ctx context.Context) error {
	p.closing.Store(true)
	p.stopOnce.Do(func() { close(p.stopAccept) })
	p.ln.Close()
	p.wg.Wait()
	// An exchange still waiting on its upstream when ctx ends is cut
	// there too: Drain closes the client's side only.
	stop := context.AfterFunc(ctx, func() {
		p.ups.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		if p.fwd != nil { // the HTTP/2 streams' exchanges, which their connections wait for
			p.fwd.pool.Interrupt()
		}
	})
	defer stop()
	// Idle connections wait in a read: cut them off now; busy ones get
	// ctx. An HTTP/2 connection is told GOAWAY: its streams under way
	// finish, then it closes.
	if p.fwd != nil {
		p.fwd.shutdown(ctx)
	}
	p.conns.Drain(ctx)
	if p.fwd != nil {
		p.fwd.close()
	}
	err := p.w.Close()
	if p.out != nil {
		if err != nil {
			p.out.abort()
			return fmt.Errorf("-o %s: %w (nothing written: the file is as it was)", p.outPath, err)
		}
		err = p.out.commit()
	}
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		if !p.slots.Take(p.stopAccept) { // at most --max-conns served at once: the rest wait in the listen queue
			return
		}
		c, err := p.ln.Accept()
		if err != nil {
			p.slots.Give()
			return
		}
		p.stats.conns.Add(1)
		h2 := p.conns.Add(c)
		go func() {
			defer p.slots.Give()
			defer p.conns.Done(c)
			if p.fwd != nil {
				p.serveForward(c, p.seq.Add(1), h2)
			} else {
				p.serve(c, p.seq.Add(1))
			}
		}()
	}
}

// awaitRequest waits, within the idle timeout, for the first byte of a
// client connection's next request: when it began. false when the
// connection ends first (the proxy is closing, the client went).
func (p *Proxy) awaitRequest(c net.Conn, br *bufio.Reader) bool {
	c.SetReadDeadline(time.Now().Add(p.opt.IdleTimeout))
	if p.closing.Load() {
		return false // after the deadline: Close's cut of idle reads is not undone
	}
	if _, err := br.Peek(1); err != nil {
		p.countReadError(err)
		return false
	}
	return true
}

// countReadError counts a client's read that failed otherwise than by
// the client going or staying idle.
func (p *Proxy) countReadError(err error) {
	if !errors.Is(err, io.EOF) && !isTimeout(err) {
		p.stats.errs.Add(1)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

const badGateway = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

// Start starts what `replay record` asks for on addr (--listen): the reverse proxy
// to upstream ("http://host[:port]"), or with forward the forward proxy
// (fo's CA and Reach, which only it takes), writing to out. Everything is
// checked before anything is written: a refused start (a bad flag, a busy
// port, a CA that does not load) leaves the disk as it was; the output
// file and a CA generated into --ca-out are written only once the proxy
// listens. Errors name the flag. Close puts the output in place.
func Start(addr, upstream string, fwd bool, out Output, fo ForwardOptions) (*Proxy, error) {
	if err := out.check(); err != nil {
		return nil, err
	}
	var f *forward
	var saveCA func() error
	opt := fo.Options
	if fwd {
		if upstream != "" {
			return nil, errors.New("--upstream: a forward proxy sends each call to the host it names; drop --upstream or --forward")
		}
		var err error
		if f, opt, saveCA, err = prepareForward(fo); err != nil {
			return nil, err
		}
	} else {
		var err error
		if opt, err = reverseOptions(upstream, fo); err != nil {
			return nil, err
		}
	}
	ln, err := opt.bind(addr)
	if err != nil {
		return nil, err
	}
	o, err := out.open()
	if err != nil {
		ln.Close()
		return nil, err
	}
	if saveCA != nil {
		if err := saveCA(); err != nil {
			ln.Close()
			o.abort()
			return nil, err
		}
	}
	p := serve(ln, o.w, opt, f)
	p.out, p.outPath = o, out.Path
	return p, nil
}

// reverseOptions checks the flags of the reverse proxy, which takes none
// of the forward proxy's, and gives fo's options with upstream
// (--upstream, "http://host[:port]") and their defaults.
func reverseOptions(upstream string, fo ForwardOptions) (Options, error) {
	opt := fo.Options
	if fo.CA.Given() || fo.Reach != (reach.Options{}) {
		return opt, errors.New("--ca-cert, --ca-key, --ca-out, --upstream-insecure, --upstream-ca, --client-cert and --client-key: only with --forward")
	}
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return opt, fmt.Errorf("--upstream: want http://host:port, got %q", upstream)
	}
	opt.Upstream, opt.Authority = u.Host, u.Host
	if u.Port() == "" {
		opt.Upstream += ":80"
	}
	return opt.withDefaults()
}

// MarshalZerologObject writes s as the fields of a log line.
func (s Stats) MarshalZerologObject(e *zerolog.Event) {
	e.Int64("pairs", s.Pairs).Int64("connections", s.Connections).Int64("tunnels", s.Tunnels).Int64("errors", s.Errors).
		Int64("websockets", s.WebSockets).Int64("too_large", s.TooLarge).Int64("answers_cut", s.Cut).Int64("slow_heads", s.Slow).Int64("unreplayable", s.Unreplayable).Int64("out_of_order", s.OutOfOrder).
		Int64("accept_retries", s.AcceptRetries).Int64("public_refused", s.PublicRefused).Int64("conn_waits", s.ConnWaits)
}
