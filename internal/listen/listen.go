// Package listen is the listening side the servers share (replay mock,
// replay record, replay record --forward): where they may listen, whom
// they answer, which upstreams they may reach for a client, and an accept
// loop that outlives the machine's resource errors, and the slots that bound the
// connections served at once (Slots). It imports nothing of
// the project.
//
// A server faces the network for hours. Three rules keep it from harm:
//
//   - It listens on loopback unless told otherwise (--allow-remote): a
//     proxy bound to every address is an open relay into the host's
//     loopback-only services.
//   - Told to listen beyond loopback, it still closes connections from
//     public (globally routable) addresses unless told otherwise
//     (--allow-public-clients), as mitmproxy's block_global does.
//   - A proxy that dials upstreams for its clients (the forward recorder,
//     the mock's --passthrough) never dials loopback, link-local or
//     unspecified addresses unless a prefix of --allow-upstream names them;
//     the check is made on the address dialed, after name resolution, so
//     that a name resolving to loopback cannot slip through.
package listen

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Policy is what a server may do on the network beyond loopback.
type Policy struct {
	// AllowRemote lets the server listen on addresses beyond loopback
	// (--allow-remote).
	AllowRemote bool
	// AllowPublicClients lets a server listening beyond loopback answer
	// clients from public addresses (--allow-public-clients); without it
	// they are closed at once and counted.
	AllowPublicClients bool
	// Upstreams are the prefixes of loopback, link-local or unspecified
	// addresses an upstream may still have (--allow-upstream).
	Upstreams []netip.Prefix
}

// Flag names, for the messages that tell a user which flag to give.
const (
	FlagAllowRemote        = "--allow-remote"
	FlagAllowPublicClients = "--allow-public-clients"
	FlagAllowUpstream      = "--allow-upstream"
)

// ParseUpstreams reads --allow-upstream values: CIDR prefixes
// (127.0.0.0/8, ::1/128) or single addresses (127.0.0.1).
func ParseUpstreams(values []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(values))
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if p, err := netip.ParsePrefix(s); err == nil {
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("%s %q: want a CIDR prefix such as 127.0.0.0/8 or an address such as 127.0.0.1", FlagAllowUpstream, s)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out, nil
}

// CheckUpstream says why ip may not be dialed for a client: an address on
// loopback, link-local or unspecified that no --allow-upstream prefix
// names. nil when it may.
func (p Policy) CheckUpstream(ip netip.Addr) error {
	ip = ip.Unmap()
	if !ip.IsLoopback() && !ip.IsLinkLocalUnicast() && !ip.IsLinkLocalMulticast() && !ip.IsUnspecified() {
		return nil
	}
	for _, pre := range p.Upstreams {
		if pre.Contains(ip) {
			return nil
		}
	}
	return &UpstreamError{Addr: ip}
}

// UpstreamError is an upstream refused by the policy.
type UpstreamError struct{ Addr netip.Addr }

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("upstream %s refused: a loopback, link-local or unspecified address is reached for a client only when %s names it (%s %s)",
		e.Addr, FlagAllowUpstream, FlagAllowUpstream, netip.PrefixFrom(e.Addr, e.Addr.BitLen()))
}

// Control checks the address a dialer is about to connect to (after name
// resolution): use it as net.Dialer.Control.
func (p Policy) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("upstream %s: %w", address, err)
	}
	return p.CheckUpstream(ap.Addr())
}

// Bind listens on addr (TCP) for a server whose listening flag is flag
// (--listen): beyond loopback only with AllowRemote, and the listener it
// returns survives resource errors (Resilient) and, beyond loopback,
// closes public clients unless AllowPublicClients. what names the server
// in logs ("mock", "record").
func Bind(addr, flag string, p Policy, what string, log zerolog.Logger) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	bound, _ := netip.ParseAddrPort(ln.Addr().String())
	remote := !bound.Addr().Unmap().IsLoopback()
	if remote && !p.AllowRemote {
		ln.Close()
		return nil, fmt.Errorf("%s %s listens beyond loopback (%s): a server here answers whoever reaches it, and a proxy reaches this host's loopback-only services for them; give %s to mean it, or listen on 127.0.0.1",
			flag, addr, ln.Addr(), FlagAllowRemote)
	}
	l := Resilient(ln, what, log)
	l.filter = remote && !p.AllowPublicClients
	return l, nil
}

// Listener is a TCP listener whose Accept survives the machine's resource
// errors and, when asked, closes public clients.
type Listener struct {
	net.Listener
	what   string
	log    zerolog.Logger
	filter bool // close clients from public addresses
	sleep  func(time.Duration)
	now    func() time.Time

	errLog everySecond // the temporary accept errors' warnings

	retried atomic.Int64
	refused atomic.Int64
}

// Resilient wraps ln so that its Accept never ends on a temporary error
// (no descriptor, no buffer, a connection aborted before it was
// accepted): it backs off 5 ms doubling to 1 s, as net/http's server
// does, logs at most once a second with the count since, and tries again,
// so that the server serves again once descriptors come back. Accept
// returns only ln's permanent errors (net.ErrClosed at shutdown).
func Resilient(ln net.Listener, what string, log zerolog.Logger) *Listener {
	if l, ok := ln.(*Listener); ok {
		return l
	}
	return &Listener{Listener: ln, what: what, log: log, sleep: time.Sleep, now: time.Now}
}

// Retried is how many accepts failed with a temporary error and were
// tried again.
func (l *Listener) Retried() int64 { return l.retried.Load() }

// Refused is how many clients from public addresses were closed.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !Temporary(err) {
				return nil, err
			}
			l.retried.Add(1)
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			l.note(err, delay)
			l.sleep(delay)
			continue
		}
		delay = 0
		if l.filter && public(c.RemoteAddr()) {
			l.refused.Add(1)
			l.log.Debug().Str("server", l.what).Str("client", c.RemoteAddr().String()).
				Msgf("client from a public address closed (%s answers them)", FlagAllowPublicClients)
			c.Close()
			continue
		}
		return c, nil
	}
}

// note logs a temporary accept error at most once a second, with how
// many there were since the last line.
func (l *Listener) note(err error, delay time.Duration) {
	if n, ok := l.errLog.due(l.now()); ok {
		l.log.Warn().Err(err).Str("server", l.what).Int64("errors", n).Dur("retry_in", delay).
			Msg("accept failed for want of a resource (descriptors, buffers); still listening, trying again")
	}
}

// everySecond lets a warning out at most once a second, with how many
// times it was due since the last one went.
type everySecond struct {
	mu    sync.Mutex
	last  time.Time
	count int64
}

// due counts one more occasion at now, and says whether a line goes now
// and for how many occasions.
func (e *everySecond) due(now time.Time) (int64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.count++
	if !e.last.IsZero() && now.Sub(e.last) < time.Second {
		return 0, false
	}
	n := e.count
	e.last, e.count = now, 0
	return n, true
}

// Temporary reports whether err, returned by Accept, is one a server
// outlives: the process or the system out of descriptors, buffers or
// memory, or a connection aborted before it was accepted.
func Temporary(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// public reports whether a is a globally routable address: not loopback,
// private (RFC 1918, fc00::/7), link-local, shared (100.64.0.0/10) or
// unspecified.
func public(a net.Addr) bool {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return true
	}
	ip := ap.Addr().Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !shared.Contains(ip)
}

// shared is RFC 6598's shared address space (carrier-grade NAT).
var shared = netip.MustParsePrefix("100.64.0.0/10")
