// Package mock is `replay mock`: a server that answers a service's calls
// to its dependencies from recorded pairs (by default the file's OUT
// pairs, which `replay record --forward` writes), so that the service
// under test runs for real while replay plays every dependency around it.
//
// Calls arrive as to a proxy (absolute-form requests for HTTP_PROXY,
// CONNECT tunnels for HTTPS_PROXY, TLS terminated with a leaf of the CA
// it is given, pkg/tlsca; plaintext inside a tunnel told by its first
// byte), or origin-form to a listener that answers as one recorded host
// (--serve HOST=ADDR; a file with one host needs none). HTTP/1.1 is served
// by fasthttp, HTTP/2 (ALPN h2, h2c prior knowledge) and gRPC by a server
// of the mock's own (internal/h2answer, h2.go): one goroutine a
// connection, a stream answered on it when its answer needs no waiting.
//
// A request is matched by its signature (sig.go): method, host, path,
// query with parameter order ignored, body (JSON canonically, any other
// byte for byte), and the headers --match-header names; a redacted value
// matches anything. An exact match is tried first; only when none, the
// places where the recording holds rotating values (UUIDs, ULIDs, times,
// JWTs, nonces) are ignored and the match tried again. The k-th identical
// call gets the k-th recorded answer, then the last again (or round again
// with Cycle). A miss fails closed: the miss status with a body naming
// the nearest recorded request and what differs, unless Passthrough.
//
// The file is memory-mapped as a run maps it (rrpair), and the index of
// signatures is built once at start (index.go: 52 bytes a pair); an
// answer is decoded from the mapping when it is given.
package mock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/internal/connset"
	"github.com/replay-dev/replay/internal/h2answer"
	"github.com/replay-dev/replay/internal/h2serve"
	"github.com/replay-dev/replay/internal/listen"
	"github.com/replay-dev/replay/pkg/reach"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/sniff"
	"github.com/replay-dev/replay/pkg/tlsca"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/replay-dev/replay/pkg/transport/negotiate"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
)

// Options configure a mock server.
type Options struct {
	// File is the traffic file (RRPair JSON Lines).
	File string
	// Keep and Drop choose the pairs, KEY=VALUE rules as `replay run`
	// reads them (rrpair.Rule); without a Keep rule on direction, the OUT
	// pairs only. Filter, when set, is used instead (rules compiled).
	Keep, Drop []string
	Filter     *rrpair.Filter
	// Listen is the proxy's address (HTTP_PROXY, HTTPS_PROXY), which also
	// answers origin-form requests as the file's one host, or the host
	// their Host header names. "": none.
	Listen string
	// Serve are "HOST=ADDR": ADDR answers origin-form requests as the
	// recorded HOST (TLS with a leaf of the CA for HOST when a client
	// begins TLS).
	Serve []string
	// CA terminates TLS: CONNECT tunnels that carry it, and --serve
	// listeners a client speaks TLS to.
	CA tlsca.Options
	// MatchHeaders are header names whose values are part of a signature
	// (headers are ignored otherwise).
	MatchHeaders []string
	// Ignore are JSON paths ("id", "items.*.ts") and query parameter names
	// a signature ignores.
	Ignore []string
	// NoAutoIgnore turns the second matching pass off.
	NoAutoIgnore bool
	// Order is how the k-th call is counted: "global" (default), per
	// signature across all callers; or "session", per Session.
	Order string
	// Session is, with Order "session": "" per client connection, or
	// "header:NAME" / "cookie:NAME", per value of that header or cookie
	// (as `replay record --session` wrote tags.session).
	Session string
	// Cycle gives the answers of a signature round again after the last,
	// instead of the last again.
	Cycle bool
	// MissStatus is the status of a miss (default 404).
	MissStatus int
	// Passthrough sends a miss to the real host instead, and RecordMisses
	// (when not nil) gets those exchanges as RRPair lines (direction OUT).
	Passthrough bool
	// RecordMisses is the path of the file to record them to (created,
	// and written as they come, so that a crash keeps what was recorded);
	// RecordMissesTo, when set, is written instead.
	RecordMisses   string
	RecordMissesTo io.Writer
	// Upstream is how Passthrough reaches the real hosts (as the forward
	// recorder does): --upstream-insecure, --upstream-ca, --client-cert
	// and --client-key.
	Upstream reach.Options
	// Latency is when an answer is given: "recorded" (default: after the
	// recorded duration), "0" (at once), or a factor of the recorded
	// duration ("0.5").
	Latency string
	// WSPace is when a WebSocket session's server messages go: "reply"
	// (default: each after the client message it followed in the
	// recording) or "recorded" (at its recorded offset from the 101,
	// times the Latency factor).
	WSPace string
	// Transforms rewrite the answers (timestamps, headers, echo): the
	// spec, or the file TransformsFile (--transforms) when it is nil.
	Transforms     *transform.Spec
	TransformsFile string
	// Faults are injected on purpose, drawn with Seed.
	Faults Faults
	Seed   uint64
	// AllowRemote lets --listen and --serve bind beyond loopback;
	// AllowPublicClients then answers clients from public addresses too;
	// AllowUpstream are the CIDR prefixes of loopback and link-local
	// addresses --passthrough may still reach (internal/listen's policy).
	AllowRemote, AllowPublicClients bool
	AllowUpstream                   []string
	// IdleTimeout closes a client connection idle this long (default 2m):
	// HTTP/1.1 between requests, HTTP/2 with no stream open, a CONNECT
	// tunnel before its first byte; a request body that has not arrived
	// within it, and an answer the client has not read within it, end
	// their connection (HTTP/2: their stream) too.
	IdleTimeout time.Duration
	// HeadTimeout closes an HTTP/1.1 connection whose request head has
	// not all arrived this long after its first byte (default 10s): a
	// client that sends part of a head and stalls.
	HeadTimeout time.Duration
	// MaxConns bounds the client connections served at once (default
	// DefaultMaxConns): past it, new ones wait in the listen queue, so
	// that a flood of connections cannot grow memory without bound.
	MaxConns int
	// Log gets a line per miss (at most one a second, with a count of
	// those left out) and per connection that failed.
	Log zerolog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultMissStatus is the status of a miss.
const DefaultMissStatus = 404

// DefaultMaxConns is how many client connections are served at once.
const DefaultMaxConns = 1024

// DefaultHeadTimeout is how long an HTTP/1.1 request head may take to
// arrive after its first byte.
const DefaultHeadTimeout = 10 * time.Second

// Validate checks o without reading any file. Its errors name the flag.
func (o *Options) Validate() error {
	var errs []error
	if o.File == "" {
		errs = append(errs, errors.New("-f: the traffic file to answer from is required"))
	}
	errs = append(errs, o.validateListeners(), o.CA.Validate(), o.validateMatching(), o.validateAnswers())
	if o.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("--max-conns: want a positive count, got %d", o.MaxConns))
	}
	if o.IdleTimeout < 0 || o.HeadTimeout < 0 {
		errs = append(errs, fmt.Errorf("--idle-timeout and --head-timeout: want a positive duration, got %v and %v", o.IdleTimeout, o.HeadTimeout))
	}
	if _, err := listen.ParseUpstreams(o.AllowUpstream); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseLatency(o.Latency); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseWSPace(o.WSPace); err != nil {
		errs = append(errs, err)
	}
	if _, err := o.Faults.parse(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateListeners checks where the mock serves.
func (o *Options) validateListeners() error {
	var errs []error
	if o.Listen == "" && len(o.Serve) == 0 {
		errs = append(errs, errors.New("--listen or --serve: give an address to serve on"))
	}
	for _, s := range o.Serve {
		if h, a, ok := strings.Cut(s, "="); !ok || h == "" || a == "" {
			errs = append(errs, fmt.Errorf("--serve: want HOST=ADDR such as api.example.com=127.0.0.1:9001, got %q", s))
		}
	}
	return errors.Join(errs...)
}

// validateMatching checks how requests are matched and counted.
func (o *Options) validateMatching() error {
	var errs []error
	for _, h := range o.MatchHeaders {
		if !rrpair.ValidHeaderName(h) {
			errs = append(errs, fmt.Errorf("--match-header: %q is not a header name", h))
		}
	}
	for _, p := range o.Ignore {
		if p == "" || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
			errs = append(errs, fmt.Errorf("--ignore: want a JSON path such as order.id or items.*.ts, or a query parameter name, got %q", p))
		}
	}
	switch o.Order {
	case "", "global", "session":
	default:
		errs = append(errs, fmt.Errorf("--order: want global or session, got %q", o.Order))
	}
	if s := o.Session; s != "" {
		kind, name, _ := strings.Cut(s, ":")
		if kind != "header" && kind != "cookie" || name == "" {
			errs = append(errs, fmt.Errorf("--session: want header:NAME or cookie:NAME, got %q", s))
		}
		if o.Order != "session" {
			errs = append(errs, errors.New("--session: counts per session with --order session only"))
		}
	}
	return errors.Join(errs...)
}

// validateAnswers checks what a miss gets.
func (o *Options) validateAnswers() error {
	var errs []error
	if o.MissStatus != 0 && (o.MissStatus < 200 || o.MissStatus > 599) {
		errs = append(errs, fmt.Errorf("--miss-status: want a status from 200 to 599, got %d", o.MissStatus))
	}
	if (o.RecordMisses != "" || o.RecordMissesTo != nil) && !o.Passthrough {
		errs = append(errs, errors.New("--record-misses: records the misses --passthrough sends on; give --passthrough"))
	}
	if o.Passthrough && (o.Upstream.Cert == "") != (o.Upstream.Key == "") {
		errs = append(errs, errors.New("--client-cert and --client-key: give both, the client certificate and its key"))
	}
	return errors.Join(errs...)
}

// parseLatency reads --latency as a factor of the recorded duration.
func parseLatency(s string) (float64, error) {
	switch s {
	case "", "recorded":
		return 1, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "x"), 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("--latency: want recorded, 0 or a factor of the recorded duration such as 0.5, got %q", s)
	}
	return f, nil
}

// Server is a running mock.
type Server struct {
	o       Options
	ix      *index
	ca      *tlsca.CA
	latency float64
	faults  faults
	order   orderBy

	chain *transform.Chain
	slots chan int // the chain's slots: a request takes one while it rewrites

	pool     *negotiate.Pool // --passthrough; nil without
	misses   *rrpair.Writer  // --record-misses; nil without
	missFile *os.File        // the file it writes, when Start created it

	lns    []served
	policy listen.Policy // where it may listen, whom it answers, which upstreams --passthrough reaches
	h1     *fasthttp.Server
	h1ln   *h2serve.Listener // hands the HTTP/1.1 server what was accepted and told apart
	h1done chan error
	h2     *h2answer.Server
	// h2late counts the HTTP/2 answers given from goroutines of their own
	// (a wait, --passthrough): they read the mapping, which Close keeps
	// until they are done.
	h2late sync.WaitGroup

	wg         sync.WaitGroup // the accept loops
	closeOnce  sync.Once
	closeErr   error
	final      *Report     // the report made at Close
	conns      connset.Set // accepted connections
	connSeq    atomic.Uint64
	closing    atomic.Bool
	cut        chan struct{} // closed when Close's grace is over: answers still waiting go at once
	connSlots  *listen.Slots // bounds the connections served (--max-conns), across the listeners
	stopAccept chan struct{} // closed by Close: accept loops waiting for a slot end

	scratch  sync.Pool
	encoded  encodedBodies // answers recorded decoded under a Content-Encoding, encoded once
	st       stats
	ws       wsStats
	epID     map[string]int // the file's endpoint names
	started  time.Time
	missLog  rateLimit
	sessions sessionCounts
	// hostsNamed are the recorded hosts a miss to an unknown host names.
	hostsNamed []string
}

// served is a listener and what it serves as.
type served struct {
	ln   net.Listener
	host []byte // --serve HOST, normalized; nil for --listen
	flag string
}

// Start checks o, binds every address (first: a busy port is told at
// once, not after the file is indexed), opens and indexes the file, reads
// the CA and the transforms, and serves until Close. Every error comes
// before anything is served, naming its flag.
func Start(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Server{o: o, h1done: make(chan error, 1), cut: make(chan struct{}), stopAccept: make(chan struct{})}
	if s.o.Now == nil {
		s.o.Now = time.Now
	}
	if s.o.MissStatus == 0 {
		s.o.MissStatus = DefaultMissStatus
	}
	if s.o.IdleTimeout == 0 {
		s.o.IdleTimeout = 2 * time.Minute
	}
	if s.o.HeadTimeout == 0 {
		s.o.HeadTimeout = DefaultHeadTimeout
	}
	if s.o.MaxConns == 0 {
		s.o.MaxConns = DefaultMaxConns
	}
	s.connSlots = listen.NewSlots(s.o.MaxConns, "mock", s.o.Log)
	ups, _ := listen.ParseUpstreams(o.AllowUpstream)
	s.policy = listen.Policy{AllowRemote: o.AllowRemote, AllowPublicClients: o.AllowPublicClients, Upstreams: ups}
	s.latency, _ = parseLatency(o.Latency)
	s.faults, _ = o.Faults.parse()
	s.order = newOrder(o.Order, o.Session)
	if err := s.rules(); err != nil {
		return nil, err
	}
	if err := s.bind(); err != nil {
		s.release()
		return nil, err
	}
	if err := s.open(); err != nil {
		s.release()
		return nil, err
	}
	if err := s.checkServe(); err != nil {
		s.release()
		return nil, err
	}
	s.hostsNamed = s.ix.knownHosts()
	s.serve()
	return s, nil
}

// open reads everything the mock answers from: file, CA, transforms.
func (s *Server) open() error {
	if hint := sniff.Hint(s.o.File, sniff.Head(s.o.File)); hint != "" {
		return errors.New(hint) // a capture, a HAR, a log: named with its import, as replay run does
	}
	f, err := openFile(s.o.File, s.o.Filter)
	if err != nil {
		return err
	}
	if s.ix, err = buildIndex(f, s.o.Ignore, s.o.MatchHeaders, !s.o.NoAutoIgnore); err != nil {
		f.Close()
		return err
	}
	if s.ix.kept == 0 {
		f.Close()
		return fmt.Errorf("%s: no pair has an answer that can be sent (%d skipped, first: line %d: %s)", s.o.File, s.ix.skippedTotal, s.ix.skipped[0].Line, s.ix.skipped[0].Reason)
	}
	s.warnSkipped(f)
	s.epID = map[string]int{}
	for i, name := range f.Endpoints() {
		s.epID[name] = i
	}
	s.st.init(len(f.Endpoints()))
	if s.ca, err = s.o.CA.Open(); err != nil {
		s.release()
		return err
	}
	if s.ca == nil && s.ix.https > 0 {
		s.release()
		return fmt.Errorf("%s holds %d pairs recorded over https: give the CA that terminates their TLS, --ca-cert and --ca-key (or --ca-out DIR), the CA the service trusts", s.o.File, s.ix.https)
	}
	if err := s.compileTransforms(); err != nil {
		s.release()
		return err
	}
	if s.o.Passthrough {
		if err := s.openPassthrough(); err != nil {
			s.release()
			return err
		}
	}
	s.scratch.New = func() any { return newScratch(s.ix) }
	return nil
}

// warnSkipped logs the lines the file skipped, and the pairs whose answer
// cannot be sent (the first ones, then how many more).
func (s *Server) warnSkipped(f *rrpair.File) {
	if sk := f.Skipped(); sk.Total() > 0 {
		s.o.Log.Warn().Str("file", s.o.File).Int("lines", sk.Total()).Strs("kinds", sk.Kinds()).Msg("lines skipped: not HTTP pairs to answer with")
	}
	for _, sk := range s.ix.skipped {
		s.o.Log.Warn().Str("file", s.o.File).Int("line", sk.Line).Str("reason", sk.Reason).Msg("pair skipped: its answer cannot be sent")
	}
	if more := s.ix.skippedTotal - len(s.ix.skipped); more > 0 {
		s.o.Log.Warn().Str("file", s.o.File).Int("more", more).Msg("more pairs skipped")
	}
}

// openPassthrough builds the transport to the upstream a request no pair
// answers is sent to, and the recorder of those misses.
func (s *Server) openPassthrough() error {
	if err := s.o.Upstream.Check(); err != nil {
		return err
	}
	co := s.o.Upstream.ConnOptions()
	co.Allow = s.policy.CheckUpstream // never loopback or link-local unless --allow-upstream names it
	t, err := negotiate.New(negotiate.Options{Conn: co, HTTP2: negotiate.On})
	if err != nil {
		return err
	}
	s.pool = t.Pool()
	return s.recordMisses()
}

// rules compiles --keep and --drop, and reads --transforms.
func (s *Server) rules() error {
	if s.o.Filter == nil {
		s.o.Filter = &rrpair.Filter{}
		for _, kd := range []struct {
			flag  string
			rules []string
			to    *[]rrpair.Rule
		}{{"--keep", s.o.Keep, &s.o.Filter.Keep}, {"--drop", s.o.Drop, &s.o.Filter.Drop}} {
			for _, text := range kd.rules {
				r, err := rrpair.ParseRule(text)
				if err != nil {
					return fmt.Errorf("%s: %w", kd.flag, err)
				}
				*kd.to = append(*kd.to, r)
			}
		}
	}
	if s.o.Transforms == nil && s.o.TransformsFile != "" {
		var err error
		if s.o.Transforms, err = transform.ReadFile(s.o.TransformsFile); err != nil {
			return fmt.Errorf("--transforms: %w", err)
		}
	}
	return nil
}

// recordMisses opens where --record-misses writes.
func (s *Server) recordMisses() error {
	w := s.o.RecordMissesTo
	if w == nil && s.o.RecordMisses != "" {
		f, err := os.Create(s.o.RecordMisses)
		if err != nil {
			return fmt.Errorf("--record-misses: %w", err)
		}
		s.missFile, w = f, f
	}
	if w != nil {
		s.misses = rrpair.NewWriter(w)
	}
	return nil
}

// chainSlots bounds the requests whose answers the transforms rewrite at
// once: each holds a slot of the chain (its scratch buffers).
const chainSlots = 256

func (s *Server) compileTransforms() error {
	if s.o.Transforms == nil {
		return nil
	}
	opt := transform.Options{VUs: chainSlots, Answers: true, Endpoints: s.ix.f.Endpoints(), Now: s.o.Now, Seed: s.o.Seed}
	p, err := transform.Compile(s.o.Transforms, false, opt)
	if err != nil {
		return fmt.Errorf("--transforms: %w", err)
	}
	if s.chain, err = p.Chain(opt); err != nil {
		return fmt.Errorf("--transforms: %w", err)
	}
	s.slots = make(chan int, chainSlots)
	for i := range chainSlots {
		s.slots <- i
	}
	return nil
}

// bind listens on every address, --listen first; a port in use is
// refused naming its flag, and nothing is served.
func (s *Server) bind() error {
	if s.o.Listen != "" {
		ln, err := listen.Bind(s.o.Listen, "--listen", s.policy, "mock", s.o.Log)
		if err != nil {
			return err
		}
		s.lns = append(s.lns, served{ln: ln, flag: "--listen"})
	}
	for _, sv := range s.o.Serve {
		host, addr, _ := strings.Cut(sv, "=")
		ln, err := listen.Bind(addr, "--serve", s.policy, "mock", s.o.Log)
		if err != nil {
			return err
		}
		s.lns = append(s.lns, served{ln: ln, host: normHost(nil, []byte(host)), flag: "--serve " + sv})
	}
	return nil
}

// checkServe refuses a --serve HOST the file does not hold.
func (s *Server) checkServe() error {
	for i, sv := range s.o.Serve {
		host, _, _ := strings.Cut(sv, "=")
		if l := s.lns[len(s.lns)-len(s.o.Serve)+i]; !s.ix.hosts[string(l.host)] {
			return fmt.Errorf("--serve %s: %s is not a host of %s (recorded: %s)", sv, host, s.o.File, strings.Join(s.ix.hostList(), ", "))
		}
	}
	return nil
}

// Addrs are the addresses served: --listen's first, then each --serve's.
func (s *Server) Addrs() []string {
	out := make([]string, len(s.lns))
	for i, l := range s.lns {
		out[i] = l.ln.Addr().String()
	}
	return out
}

// Close stops accepting, lets the requests under way be answered (within
// ctx), closes every connection, and flushes --record-misses. It returns
// that writer's error; a second Close returns it again. Report, after
// Close, is what the mock did in all.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { s.closeErr = s.close(ctx) })
	return s.closeErr
}

func (s *Server) close(ctx context.Context) error {
	s.closing.Store(true)
	close(s.stopAccept)
	stop := context.AfterFunc(ctx, func() {
		close(s.cut)
		if s.pool != nil { // calls passed through still under way end now, cancelled
			s.pool.Interrupt()
		}
	})
	defer stop()
	for _, l := range s.lns {
		l.ln.Close()
	}
	go s.h2.Shutdown(ctx) // HTTP/2: GOAWAY, then close when the streams are done
	s.wg.Wait()
	s.h1.ShutdownWithContext(ctx)
	s.conns.Drain(ctx)
	s.h2late.Wait() // a wait ends at once when ctx does (s.cut)
	s.h1ln.Close()
	<-s.h1done
	r := s.report() // the last: the file is unmapped next
	s.final = &r
	return s.release()
}

// release closes what open opened.
func (s *Server) release() error {
	var err error
	if s.misses != nil {
		err = s.misses.Close()
		s.misses = nil
	}
	if s.missFile != nil {
		if cerr := s.missFile.Close(); err == nil {
			err = cerr
		}
		s.missFile = nil
	}
	if s.pool != nil {
		s.pool.Close()
	}
	for _, l := range s.lns {
		l.ln.Close()
	}
	if s.ix != nil {
		s.ix.f.Close()
	}
	return err
}
