package conn

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options configure the connection layer: where requests go and how
// connections are made and kept.
type Options struct {
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
	// 0 means DefaultTimeout.
	Timeout time.Duration
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
	// MaxConnDuration closes a VU's connection once it is this old (at its
	// next request) and opens a new one, so that load spreads over the pods
	// behind a Kubernetes Service; each counts as a reconnect. 0: never.
	MaxConnDuration time.Duration
	// Control, when set, is called with each address about to be dialed
	// (after name resolution) and refuses it with an error: the servers'
	// upstream policy (listen.Policy.Control), checked on the address
	// dialed so that a name cannot resolve past it. A net.Dialer.Control;
	// its RawConn may be nil.
	Control func(network, address string, c syscall.RawConn) error
}

// DefaultTimeout is the Timeout New fills in.
const DefaultTimeout = 30 * time.Second

// Validate checks o without reading any file or changing o. Its errors
// name the flag a user would fix.
func (o *Options) Validate() error {
	var errs []error
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("--timeout: want a positive duration, got %v", o.Timeout))
	}
	if o.Target != "" {
		if _, err := parseTarget(o.Target); err != nil {
			errs = append(errs, fmt.Errorf("--target: %w", err))
		}
	}
	for host, u := range o.HostMap {
		if _, err := parseTarget(u); err != nil {
			errs = append(errs, fmt.Errorf("--host-map %s=%s: %w", host, u, err))
		}
	}
	if o.KeepHost && o.Target == "" && len(o.HostMap) == 0 {
		errs = append(errs, errors.New("--keep-host: only meaningful with --target or --host-map (without them the recorded host is used)"))
	}
	if o.Proxy != "" {
		if _, err := parseProxy(o.Proxy); err != nil {
			errs = append(errs, fmt.Errorf("--proxy: %w", err))
		}
	}
	if o.MaxConnDuration < 0 {
		errs = append(errs, fmt.Errorf("--max-conn-duration: want a duration ≥ 0, got %v", o.MaxConnDuration))
	}
	if (o.Cert == "") != (o.Key == "") {
		errs = append(errs, errors.New("--cert and --key: give both, the client certificate and its key"))
	}
	return errors.Join(errs...)
}

// tlsConfig builds the TLS settings of the TLS flags, reading their files.
func (o *Options) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: o.Insecure, MinVersion: tls.VersionTLS12, ServerName: o.ServerName} //nolint:gosec // --insecure is the user's choice
	if o.CA != "" {
		pem, err := os.ReadFile(o.CA)
		if err != nil {
			return nil, fmt.Errorf("--ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca %s: no PEM certificate in it", o.CA)
		}
	}
	if o.Cert != "" {
		pair, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, fmt.Errorf("--cert %s --key %s: %w", o.Cert, o.Key, err)
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

// CheckTarget says why s is not a --target New would accept
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
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("want a port in 1..65535, got %q in %q", p, s)
		}
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
