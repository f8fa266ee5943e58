// Package vu owns the virtual users: scheduling iterations over a traffic
// file, each VU's dedicated connection, writing requests on the wire and
// reading answers, and stopping. It calls interfaces it defines — a
// Rewriter for outgoing requests, Observers for live responses and a Sink
// for results — and imports neither the transforms nor the report.
package vu

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Walk is how the VUs walk the file (DESIGN.md, "file walk").
type Walk int

const (
	// Once runs every iteration once in total, spread over the VUs.
	Once Walk = iota
	// Loop has each VU walk all iterations in file order from a staggered
	// start, round and round, until the duration or the iteration limit.
	Loop
)

func (w Walk) String() string {
	if w == Loop {
		return "loop"
	}
	return "once"
}

// ParseWalk reads "once" or "loop".
func ParseWalk(s string) (Walk, error) {
	switch s {
	case "once":
		return Once, nil
	case "loop":
		return Loop, nil
	}
	return Once, fmt.Errorf("want once or loop, got %q", s)
}

// Model is the load model (DESIGN.md, "Iterations, sessions and load
// models").
type Model int

const (
	// Closed runs iterations back to back on VUs (--vus, or VU --stages).
	Closed Model = iota
	// Rate starts iterations at a rate on a clock (--rate, rate --stages).
	Rate
	// Recorded sends each request at its recorded time / speed (--pace recorded).
	Recorded
)

func (m Model) String() string {
	switch m {
	case Rate:
		return "rate"
	case Recorded:
		return "recorded"
	}
	return "closed"
}

// Config is what a run needs. Zero values are not usable: call Validate,
// which fills the defaults.
type Config struct {
	Model      Model
	VUs        int           // VUs at the start (open models: the pool they start with)
	MaxVUs     int           // open models: the pool may grow to this many VUs
	Walk       Walk          // Once or Loop
	Duration   time.Duration // stop issuing after this long (0: no limit)
	Iterations int64         // stop after this many iterations in all (0: no limit)
	Rate       float64       // Rate: iterations per second at the start
	// Stages ramp the rate (Rate) or the number of VUs (Closed).
	Stages []Stage
	// Speed divides recorded times: Recorded pacing, and Think.
	Speed float64
	// Think keeps a session's recorded gaps between requests (Closed).
	Think bool
	// LateAfter: a request begun more than this after it was due is late.
	LateAfter time.Duration

	// Target, "scheme://host[:port]", replaces the recorded scheme and host.
	// Empty: each pair goes to its recorded host, over l7protocol's scheme.
	Target string
	// HostMap sends each recorded host (as in http.req.host) to its own
	// "scheme://host[:port]"; a host it lacks goes to Target.
	HostMap map[string]string
	// KeepHost sends the recorded Host header instead of the target's host.
	KeepHost bool
	// NoConnectionReuse opens a new connection for every request.
	NoConnectionReuse bool
	// Timeout bounds each request: connect, write and the whole answer.
	Timeout time.Duration
	// Grace is how long in-flight requests may finish after the stop.
	Grace time.Duration
	// Insecure skips TLS certificate verification.
	Insecure bool
	// CA is a PEM file of the certificate authorities to trust (instead of
	// the system's).
	CA string
	// Cert and Key are PEM files of a client certificate and its key.
	Cert, Key string
	// ServerName is the TLS server name (SNI, and the name verified),
	// instead of the host dialed.
	ServerName string
	// Proxy, "http://[user:password@]host:port", carries every connection
	// through an HTTP CONNECT tunnel.
	Proxy string
	// Timings measures the phases of each request (result.Result.ConnectNs...).
	Timings bool
	// FollowRedirects follows up to this many redirects of a request; each
	// hop is a request of its own, marked Redirect. 0: a replay sends what
	// was recorded and counts a 3xx as an answer.
	FollowRedirects int
	// MaxConnDuration closes a VU's connection once it is this old (at its
	// next request) and opens a new one, so that load spreads over the pods
	// behind a Kubernetes Service; each counts as a reconnect. 0: never.
	MaxConnDuration time.Duration
	// MaxBody bounds the response body a VU keeps (bytes); a longer
	// answer fails as "other". 0 means 64 MiB.
	MaxBody int

	// Clock paces and stamps the run (WallClock when nil).
	Clock Clock
	// Log receives the run's own messages (not one per request).
	Log zerolog.Logger

	target  *target
	hostMap map[string]*target
	proxy   *proxy
	tls     *tls.Config
}

// Defaults used by Validate.
const (
	DefaultTimeout = 30 * time.Second
	DefaultGrace   = 10 * time.Second
	DefaultMaxBody = 64 << 20
	// DefaultMaxVUs caps the pool of an open model unless --max-vus says.
	DefaultMaxVUs    = 1000
	DefaultLateAfter = 10 * time.Millisecond
)

// MostVUs is the most VUs a run with c (validated) can have: VU numbers, as
// a Rewriter or Observer sees them, go from 0 to MostVUs()-1. A closed run
// starts that many: --vus, or the highest stage target.
func (c *Config) MostVUs() int {
	if c.Model != Closed {
		return max(c.VUs, c.MaxVUs)
	}
	n := c.VUs
	for _, st := range c.Stages {
		n = max(n, int(st.Target+0.5))
	}
	return n
}

// Validate checks the configuration and fills defaults. Its errors name the
// flag a user would fix.
func (c *Config) Validate() error {
	var errs []error
	if c.VUs < 1 {
		errs = append(errs, fmt.Errorf("--vus: want at least 1, got %d", c.VUs))
	}
	if c.Duration < 0 {
		errs = append(errs, fmt.Errorf("--duration: want a positive duration, got %v", c.Duration))
	}
	switch c.Model {
	case Rate:
		if c.Rate < 0 || (c.Rate == 0 && len(c.Stages) == 0) {
			errs = append(errs, fmt.Errorf("--rate: want a positive rate such as 1000/s (or --stages), got %v/s", c.Rate))
		}
	case Recorded:
		if len(c.Stages) > 0 {
			errs = append(errs, errors.New("--stages: recorded pacing follows the recording; stages ramp a --rate or --vus"))
		}
	}
	if c.Model != Closed && c.MaxVUs != 0 && c.MaxVUs < c.VUs {
		errs = append(errs, fmt.Errorf("--max-vus: want at least --vus (%d), got %d", c.VUs, c.MaxVUs))
	}
	if c.Model == Closed && c.MaxVUs != 0 {
		errs = append(errs, errors.New("--max-vus: only an arrival rate or recorded pacing grows the pool; the closed model runs --vus (or its --stages)"))
	}
	if c.Speed < 0 {
		errs = append(errs, fmt.Errorf("--speed: want a positive factor such as 2, got %v", c.Speed))
	}
	if c.Think && c.Model != Closed {
		errs = append(errs, errors.New("--think: recorded think time is for the closed model; recorded pacing keeps the gaps already"))
	}
	if c.LateAfter < 0 {
		errs = append(errs, fmt.Errorf("--late-after: want a duration ≥ 0, got %v", c.LateAfter))
	}
	if c.Iterations < 0 {
		errs = append(errs, fmt.Errorf("--iterations: want at least 1, got %d", c.Iterations))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("--timeout: want a positive duration, got %v", c.Timeout))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("--grace: want a positive duration or 0, got %v", c.Grace))
	}
	if c.Target != "" {
		t, err := parseTarget(c.Target)
		if err != nil {
			errs = append(errs, fmt.Errorf("--target: %w", err))
		}
		c.target = t
	}
	if len(c.HostMap) > 0 {
		c.hostMap = make(map[string]*target, len(c.HostMap))
		for host, url := range c.HostMap {
			t, err := parseTarget(url)
			if err != nil {
				errs = append(errs, fmt.Errorf("--host-map %s=%s: %w", host, url, err))
			}
			c.hostMap[host] = t
		}
	}
	if c.KeepHost && c.Target == "" && len(c.HostMap) == 0 {
		errs = append(errs, errors.New("--keep-host: only meaningful with --target or --host-map (without them the recorded host is used)"))
	}
	if c.Proxy != "" {
		p, err := parseProxy(c.Proxy)
		if err != nil {
			errs = append(errs, fmt.Errorf("--proxy: %w", err))
		}
		c.proxy = p
	}
	if c.FollowRedirects < 0 {
		errs = append(errs, fmt.Errorf("--follow-redirects: want a number ≥ 0, got %d", c.FollowRedirects))
	}
	if c.MaxConnDuration < 0 {
		errs = append(errs, fmt.Errorf("--max-conn-duration: want a duration ≥ 0, got %v", c.MaxConnDuration))
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		errs = append(errs, err)
	}
	c.tls = tlsCfg
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.Clock == nil {
		c.Clock = WallClock{}
	}
	if c.Speed == 0 {
		c.Speed = 1
	}
	if c.LateAfter == 0 {
		c.LateAfter = DefaultLateAfter
	}
	if c.Model != Closed && c.MaxVUs == 0 {
		c.MaxVUs = max(c.VUs, DefaultMaxVUs)
	}
	if c.Model == Closed && len(c.Stages) > 0 && c.Duration == 0 {
		c.Duration = StagesDuration(c.Stages)
	}
	return nil
}

// tlsConfig builds the TLS settings of the TLS flags, reading their files.
func (c *Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: c.Insecure, MinVersion: tls.VersionTLS12, ServerName: c.ServerName} //nolint:gosec // --insecure is the user's choice
	if c.CA != "" {
		pem, err := os.ReadFile(c.CA)
		if err != nil {
			return nil, fmt.Errorf("--ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca %s: no PEM certificate in it", c.CA)
		}
	}
	if (c.Cert == "") != (c.Key == "") {
		return nil, errors.New("--cert and --key: give both, the client certificate and its key")
	}
	if c.Cert != "" {
		pair, err := tls.LoadX509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("--cert %s --key %s: %w", c.Cert, c.Key, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// target is a parsed --target.
type target struct {
	https bool
	host  []byte // Host header value: host[:port] as written
	addr  string // dial address, with the scheme's default port
	name  string // host name without port, for TLS SNI
}

// CheckTarget says why s is not a --target Validate would accept
// (scheme://host[:port], http or https), or returns nil: for commands
// that take a target without replaying.
func CheckTarget(s string) error {
	_, err := parseTarget(s)
	return err
}

func parseTarget(s string) (*target, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("want scheme://host[:port], such as http://127.0.0.1:8080, got %q", s)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("want an http or https URL, got scheme %q in %q", u.Scheme, s)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("want only scheme://host[:port], got %q (paths are rewritten by transforms, not the target)", s)
	}
	t := &target{https: u.Scheme == "https", host: []byte(u.Host)}
	t.addr, t.name = dialAddr(u.Host, t.https)
	return t, nil
}

// dialAddr adds the scheme's default port to host when it has none, and
// returns the host name alone (for SNI).
func dialAddr(host string, https bool) (addr, name string) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return host, h
	}
	port := "80"
	if https {
		port = "443"
	}
	name = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return net.JoinHostPort(name, port), name
}

// proxy is a parsed --proxy.
type proxy struct {
	addr string
	auth string // a Proxy-Authorization header line, or ""
}

func parseProxy(s string) (*proxy, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Scheme != "http" {
		return nil, fmt.Errorf("want http://[user:password@]host:port, got %q", s)
	}
	p := &proxy{}
	p.addr, _ = dialAddr(u.Host, false)
	if u.User != nil {
		pass, _ := u.User.Password()
		p.auth = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass)) + "\r\n"
	}
	return p, nil
}
