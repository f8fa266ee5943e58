package conn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"

	"github.com/replay-dev/replay/pkg/result"
)

// KindOf names why a read, a write or a TLS handshake failed with err: the
// generator's own limits (local), a timeout, a reset, an end of the
// connection (eof), a TLS failure, or other. A protocol adds its own
// errors' kinds on top.
func KindOf(err error) result.ErrorKind {
	var netErr net.Error
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var verify *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	switch {
	case isLocal(err):
		return result.ErrLocal
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return result.ErrTimeout
	case isAny(err, resetErrnos):
		return result.ErrReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return result.ErrEOF
	case errors.As(err, &recErr), errors.As(err, &alert), errors.As(err, &verify), errors.As(err, &unknownCA):
		return result.ErrTLS
	}
	return result.ErrOther
}

// dialKind names why a dial failed: the generator's own limits (no file
// descriptor, no local port) are ErrLocal, anything else ErrConnect (the
// SUT was never reached).
func dialKind(err error) result.ErrorKind {
	if isLocal(err) {
		return result.ErrLocal
	}
	return result.ErrConnect
}

// isLocal reports an error of this machine's limits rather than the
// SUT's: out of file descriptors (per process or system-wide), of local
// ports, or of socket buffers (localErrnos, per platform).
func isLocal(err error) bool { return isAny(err, localErrnos) }

// isAny reports err as one of errnos.
func isAny(err error, errnos []error) bool {
	for _, e := range errnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
