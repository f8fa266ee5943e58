// Package http2 is HTTP/2, with gRPC, on a conn.Line, beside
// transport/http1 (which it does not import): each VU's client speaks on
// the connections of its Line that negotiated "h2" (by ALPN, or cleartext
// by prior knowledge), one stream at a time (a VU is a user). It writes
// the recorded request as a header list (wire.go) with
// golang.org/x/net/http2's framer and HPACK, keeps to the SUT's windows,
// reads the answer with its trailers, settles a connection that sat idle
// (what the SUT sent meanwhile: SETTINGS, PING, GOAWAY), salvages the
// frames sent before a close, refuses what RFC 9113 makes a malformed
// answer (resetting its stream) or a connection error (GOAWAY) as
// malformed.go says, and classifies stream resets, GOAWAY and
// flow-control stalls; a stream the SUT declared unprocessed (GOAWAY
// below it, REFUSED_STREAM) is said so, for the one retry the protocol
// choice (transport/negotiate) makes. gRPC pairs (rrpair.IsGRPC) go out
// byte for byte and their answer's grpc-status is read.
package http2

import (
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Proto is HTTP/2's name in ALPN ("h2"), and what a cleartext connection
// that speaks it by prior knowledge (h2c) has as its protocol
// (conn.Protocols.Cleartext).
const Proto = "h2"

// AppendRequest appends req to dst as a dry run shows a request that goes
// as HTTP/2 to host, over TLS or not: its header list, one "name: value"
// line each, a blank line, then the body.
func AppendRequest(dst []byte, req *rrpair.Request, https bool, host []byte) []byte {
	var fl fieldList
	fl.build(req, https, host)
	dst = append(fl.appendTo(dst), '\n')
	return append(dst, req.Body...)
}
