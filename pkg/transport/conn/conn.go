// Package conn is the connection layer every protocol of the transport
// uses: where a request goes (--target, --host-map, --keep-host), the TLS
// configuration read from the files of the TLS flags, the dialer (its own
// on Linux: resolution kept per VU, early first bytes on a fresh plain
// connection), the proxy CONNECT tunnel, the TLS handshake offering ALPN
// protocols, reconnect counting, the idle probe of a kept connection,
// connection age (--max-conn-duration), and the hard stop (Interrupt). It
// also classifies connection errors (net, syscall, TLS) into result kinds.
//
// A Dialer is built once from Options and shared read-only by every VU;
// each VU has a Line, which holds at most one connection at a time and
// never shares it. A protocol (transport/http1, transport/http2) asks its
// Line for a connection to where a request goes, then reads and writes on
// it; the Line keeps owning it. Nothing here is specific to a version of
// HTTP: the recording proxies and the mock server reach upstreams through
// it too.
package conn

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Dialer is what every Line of a run shares, read-only: the options with
// their defaults, the targets and the proxy parsed, the TLS configuration
// read from its files. A prepared run keeps it between runs.
type Dialer struct {
	o       Options // defaults filled
	target  *target
	hostMap map[string]*target
	proxy   *proxy
	tls     *tls.Config
}

// New validates o (Validate), reads its TLS files, fills its defaults and
// returns the Dialer.
func New(o Options) (*Dialer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	d := &Dialer{o: o}
	if d.o.Timeout == 0 {
		d.o.Timeout = DefaultTimeout
	}
	// Validate has parsed these already: the errors cannot happen.
	if o.Target != "" {
		d.target, _ = parseTarget(o.Target)
	}
	if len(o.HostMap) > 0 {
		d.hostMap = make(map[string]*target, len(o.HostMap))
		for host, u := range o.HostMap {
			d.hostMap[host], _ = parseTarget(u)
		}
	}
	if o.Proxy != "" {
		d.proxy, _ = parseProxy(o.Proxy)
	}
	var err error
	if d.tls, err = o.tlsConfig(); err != nil {
		return nil, err
	}
	return d, nil
}

// Options are the options d was built with, defaults filled.
func (d *Dialer) Options() Options { return d.o }

// Check says why some request of f has nowhere to go (a recorded host
// that --host-map lacks, without a --target to fall back on), naming the
// flag; nil when every one has a destination.
func (d *Dialer) Check(f *rrpair.File) error {
	if len(d.hostMap) == 0 || d.target != nil {
		return nil
	}
	var missing []string
	for _, h := range f.Hosts() {
		if _, ok := d.hostMap[h]; !ok {
			missing = append(missing, fmt.Sprintf("%q", h))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--host-map: no mapping for recorded host %s in %s, and no --target to fall back on", strings.Join(missing, ", "), f.Name())
	}
	return nil
}

// Route says where req goes without a Line (for a dry run).
func (d *Dialer) Route(req *rrpair.Request) Route {
	return d.route(req, &recorded{})
}

// Route is where a request goes.
type Route struct {
	// HTTPS says over TLS; Addr is the dial address (host:port).
	HTTPS bool
	Addr  string
	// Host is the request's Host header value (":authority" in HTTP/2): a
	// transform's, else the target's or the recorded one.
	Host []byte
	name string // the host name, for TLS SNI
}

// recorded is the last recorded host a Line resolved to a dial address
// (no --target), kept so that a VU replaying one host resolves it once.
type recorded struct {
	host  []byte
	https bool
	addr  string
	name  string
}

// route says where req goes; last keeps the last recorded host resolved.
func (d *Dialer) route(req *rrpair.Request, last *recorded) (r Route) {
	tg := d.target
	if mapped, ok := d.hostMap[string(req.Host)]; ok {
		tg = mapped
	}
	if tg != nil {
		r.HTTPS, r.Addr, r.name = tg.https, tg.addr, tg.name
	} else {
		r.HTTPS = bytes.Equal(req.Scheme, []byte("https"))
		if last.addr == "" || r.HTTPS != last.https || !bytes.Equal(req.Host, last.host) {
			last.host = append(last.host[:0], req.Host...)
			last.https = r.HTTPS
			last.addr, last.name = dialAddr(string(req.Host), r.HTTPS)
		}
		r.Addr, r.name = last.addr, last.name
	}
	switch {
	case len(req.HostHeader) > 0:
		r.Host = req.HostHeader
	case tg == nil:
		r.Host = recordedHost(req, req.Host)
	case d.o.KeepHost:
		r.Host = recordedHost(req, tg.host)
	default:
		r.Host = tg.host
	}
	return r
}

// recordedHost is the recorded Host header value, else fallback.
func recordedHost(req *rrpair.Request, fallback []byte) []byte {
	for i := range req.Headers {
		if rrpair.EqualFold(req.Headers[i].Name, "host") {
			return req.Headers[i].Value
		}
	}
	if len(req.Host) > 0 {
		return req.Host
	}
	return fallback
}
