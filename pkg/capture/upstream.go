package capture

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/replay-dev/replay/pkg/transport/conn"
)

// Upstream is how the forward recorder (and the mock's --passthrough)
// reach the real hosts: their certificates checked against the system's
// CAs, or CA's, unless Insecure; a client certificate for the upstreams
// that want mutual TLS. The flags are the recorder's and the mock's own,
// apart from `replay run`'s TLS flags, which are about the system under
// test.
type Upstream struct {
	Insecure  bool          // --upstream-insecure: no certificate check
	CA        string        // --upstream-ca: PEM file of the CAs to trust instead of the system's
	Cert, Key string        // --client-cert, --client-key: PEM files
	Timeout   time.Duration // a call's connect, write and answer (0: conn.DefaultTimeout)
}

// Check reads the files Upstream names, so that a bad one is refused
// before anything is served, naming its flag.
func (u *Upstream) Check() error {
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
func (u *Upstream) ConnOptions() conn.Options {
	o := conn.Options{Insecure: u.Insecure, CA: u.CA, Cert: u.Cert, Key: u.Key, Timeout: u.Timeout}
	if o.Timeout == 0 {
		o.Timeout = conn.DefaultTimeout
	}
	return o
}
