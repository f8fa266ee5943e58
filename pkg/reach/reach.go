// Package reach is how the servers that call real hosts for a client
// (replay record --forward, replay mock --passthrough) reach them: the
// TLS and timeout options of those calls (--upstream-ca,
// --upstream-insecure, --client-cert, --client-key, --upstream-timeout)
// and the reading of a proxy's absolute-form request target into the
// host it names. The recorders and the mock share it; it links neither,
// only the connection layer.
package reach

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/transport/conn"
)

// Options are how the forward recorder (and the mock's --passthrough)
// reach the real hosts: their certificates checked against the system's
// CAs, or CA's, unless Insecure; a client certificate for the upstreams
// that want mutual TLS. The flags are the recorder's and the mock's own,
// apart from `replay run`'s TLS flags, which are about the system under
// test.
type Options struct {
	Insecure  bool          // --upstream-insecure: no certificate check
	CA        string        // --upstream-ca: PEM file of the CAs to trust instead of the system's
	Cert, Key string        // --client-cert, --client-key: PEM files
	Timeout   time.Duration // a call's connect, write and answer (0: conn.DefaultTimeout)
}

// Check reads the files u names, so that a bad one is refused
// before anything is served, naming its flag.
func (u *Options) Check() error {
	if (u.Cert == "") != (u.Key == "") {
		return errors.New("--client-cert and --client-key: give both, the client certificate and its key")
	}
	if u.CA != "" {
		pem, err := os.ReadFile(u.CA)
		if err != nil {
			return fmt.Errorf("--upstream-ca: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("--upstream-ca %s: no PEM certificate in it", u.CA)
		}
	}
	if u.Cert != "" {
		if _, err := tls.LoadX509KeyPair(u.Cert, u.Key); err != nil {
			return fmt.Errorf("--client-cert %s --client-key %s: %w", u.Cert, u.Key, err)
		}
	}
	if u.Timeout < 0 {
		return fmt.Errorf("--upstream-timeout: want a positive duration, got %v", u.Timeout)
	}
	return nil
}

// ConnOptions are the connection layer's options for calls to the real
// hosts: each request's own host over its own scheme.
func (u *Options) ConnOptions() conn.Options {
	o := conn.Options{Insecure: u.Insecure, CA: u.CA, Cert: u.Cert, Key: u.Key, Timeout: u.Timeout}
	if o.Timeout == 0 {
		o.Timeout = conn.DefaultTimeout
	}
	return o
}

// Authority is target (host:port) as a URL writes it for scheme: without
// the scheme's default port.
func Authority(target, scheme string) string {
	if h, port, err := net.SplitHostPort(target); err == nil &&
		(scheme == "https" && port == "443" || scheme == "http" && port == "80") {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return target
}

// AbsoluteForm splits an absolute-form request target
// ("http://host:port/p?q") into its scheme, authority and origin-form
// ("/p?q", raw); ok is false for any other form.
func AbsoluteForm(target string) (scheme, authority, origin string, ok bool) {
	scheme, rest, found := strings.Cut(target, "://")
	scheme = strings.ToLower(scheme)
	if !found || scheme != "http" && scheme != "https" {
		return "", "", "", false
	}
	i := strings.IndexAny(rest, "/?")
	if i < 0 {
		i = len(rest)
	}
	authority, origin = rest[:i], rest[i:]
	if authority == "" || strings.ContainsAny(authority, "@ ") {
		return "", "", "", false
	}
	switch {
	case origin == "":
		origin = "/"
	case origin[0] == '?':
		origin = "/" + origin
	}
	if h, port, err := net.SplitHostPort(authority); err == nil {
		authority = Authority(net.JoinHostPort(h, port), scheme)
	}
	return scheme, authority, origin, true
}
