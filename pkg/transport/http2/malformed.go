package http2

import (
	"github.com/replay-dev/replay/pkg/result"
	"golang.org/x/net/http2"
)

// This file is what the client refuses of the SUT: answers RFC 9113 calls
// malformed (§8.1.1, §8.2, §8.3.2), which a client must not accept, and
// the SUT's connection errors (§5.4.1). Each refusal fails the request as
// result.ErrProtocol (or, for the client's own limits, ErrOther) and is
// handled as the RFC classes it: a malformed answer resets its stream
// (RST_STREAM), the connection staying in use; a connection error sends
// GOAWAY and closes it.

// protoError is a refusal: what was wrong, the error code the client
// sends, whether it ends the connection (GOAWAY) or only the stream
// (RST_STREAM), and the kind the request fails as.
type protoError struct {
	what string
	code http2.ErrCode
	conn bool
	kind result.ErrorKind
}

func (e *protoError) Error() string {
	if e.conn {
		return "HTTP/2 connection error " + e.code.String() + ": " + e.what
	}
	return "malformed HTTP/2 answer (stream reset with " + e.code.String() + "): " + e.what
}

// malformed is a stream error PROTOCOL_ERROR: an answer RFC 9113 calls
// malformed.
func malformed(what string) *protoError {
	return &protoError{what: what, code: http2.ErrCodeProtocol, kind: result.ErrProtocol}
}

// connError is a connection error of the SUT's.
func connError(code http2.ErrCode, what string) *protoError {
	return &protoError{what: what, code: code, conn: true, kind: result.ErrProtocol}
}

// The refusals, made once: a refused answer allocates nothing.
var (
	errUpperName            = malformed("a field name with an upper-case letter (RFC 9113 §8.2.1)")
	errBadName              = malformed("a field name with a character a name cannot hold (space, control, non-ASCII, a colon past the first byte; RFC 9113 §8.2.1)")
	errBadValue             = malformed("a field value with CR, LF or NUL, or starting or ending with whitespace (RFC 9113 §8.2.1)")
	errConnField            = malformed("a connection-specific field (connection, keep-alive, proxy-connection, transfer-encoding, upgrade, or te other than \"trailers\"; RFC 9113 §8.2.2)")
	errPseudoAfter          = malformed("a pseudo-header after a regular field (RFC 9113 §8.3)")
	errPseudoUnknown        = malformed("a pseudo-header other than :status in an answer (RFC 9113 §8.3)")
	errPseudoTrailers       = malformed("a pseudo-header in the trailers (RFC 9113 §8.1)")
	errTwoStatus            = malformed("two :status fields (RFC 9113 §8.3)")
	errBadStatus            = malformed(":status is not three digits (RFC 9113 §8.3.2)")
	errNoStatus             = malformed("an answer without :status (RFC 9113 §8.3.2)")
	errStatus101            = malformed(":status 101, which HTTP/2 does not have (RFC 9113 §8.6)")
	errInterimEnd           = malformed("an interim (1xx) answer with END_STREAM (RFC 9113 §8.1)")
	errTrailersOpen         = malformed("trailers, or a second header block, without END_STREAM (RFC 9113 §8.1)")
	errBadLength            = malformed("content-length is not one number (RFC 9113 §8.1.1)")
	errTwoLengths           = malformed("two content-length fields (RFC 9113 §8.1.1)")
	errLengthLonger         = malformed("more DATA than its content-length (RFC 9113 §8.1.1)")
	errLengthShorter        = malformed("less DATA than its content-length (RFC 9113 §8.1.1)")
	errBodyless             = malformed("DATA in an answer that has no content (to a HEAD, 204, 304; RFC 9113 §8.1.1)")
	errDataFirst            = malformed("DATA before the answer's HEADERS (RFC 9113 §8.1)")
	errStreamWindow         = &protoError{what: "DATA past the stream's flow-control window (RFC 9113 §6.9)", code: http2.ErrCodeFlowControl, kind: result.ErrProtocol}
	errStreamWindowOverflow = &protoError{what: "a WINDOW_UPDATE past 2^31-1 on the stream (RFC 9113 §6.9.1)", code: http2.ErrCodeFlowControl, kind: result.ErrProtocol}
	errConnWindow           = connError(http2.ErrCodeFlowControl, "DATA past the connection's flow-control window (RFC 9113 §6.9)")
	errFrameSize            = connError(http2.ErrCodeFrameSize, "a frame over the client's SETTINGS_MAX_FRAME_SIZE of 16384 bytes (RFC 9113 §4.2)")
	errLateTableSize        = connError(http2.ErrCodeCompression, "a dynamic table size update after the first field of a header block (RFC 9113 §4.3, RFC 7541 §4.2)")
	errCompression          = connError(http2.ErrCodeCompression, "a header block HPACK cannot decode (RFC 9113 §4.3)")
	errPush                 = connError(http2.ErrCodeProtocol, "a PUSH_PROMISE, which the client's SETTINGS_ENABLE_PUSH 0 forbids (RFC 9113 §8.4)")
	errIdleStream           = connError(http2.ErrCodeProtocol, "a frame on a stream the client never opened (RFC 9113 §5.1)")
	errWindowOverflow       = connError(http2.ErrCodeFlowControl, "a WINDOW_UPDATE past 2^31-1 (RFC 9113 §6.9.1)")
	// The client's own limits: the SUT may be within the RFC, but the
	// request fails (as "other") rather than wait or grow for ever.
	errInterimStorm = &protoError{what: "more than 100 interim (1xx) answers before the final one", code: http2.ErrCodeCancel, kind: result.ErrOther}
	errContinuation = connError(http2.ErrCodeEnhanceYourCalm, "a header block in more CONTINUATION frames than its size needs")
)

// maxInterim is how many interim (1xx) answers may come before the final
// one, HTTP/1.1's limit too (fasthttp's and docs/strict.md's).
const maxInterim = 100

// checkName reports what is wrong with a regular field's name: RFC 9113
// §8.2.1 forbids 0x00-0x20, A-Z and 0x7f-0xff in a name, and §8.3 a colon
// but as a pseudo-header's first byte.
func checkName(name string) *protoError {
	if name == "" {
		return errBadName
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'A' <= b && b <= 'Z':
			return errUpperName
		case b <= ' ' || b >= 0x7f || b == ':':
			return errBadName
		}
	}
	return nil
}

// checkValue reports a value §8.2.1 forbids: NUL, CR or LF anywhere,
// whitespace at either end.
func checkValue(v string) *protoError {
	if n := len(v); n > 0 && (isWS(v[0]) || isWS(v[n-1])) {
		return errBadValue
	}
	for i := 0; i < len(v); i++ {
		if b := v[i]; b == 0 || b == '\r' || b == '\n' {
			return errBadValue
		}
	}
	return nil
}

func isWS(b byte) bool { return b == ' ' || b == '\t' }

// connectionSpecific reports a field §8.2.2 makes an answer malformed by:
// the connection-specific fields, and te with anything but "trailers".
func connectionSpecific(name, value string) bool {
	switch name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return true
	case "te":
		return value != "trailers"
	}
	return false
}

// parseLength reads a content-length value: 1*DIGIT, at most 18 of them.
func parseLength(v string) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(v[i]-'0')
	}
	return n, true
}

// lateSizeUpdate reports a dynamic table size update after the first
// field representation of an HPACK block (RFC 7541 §4.2: it must come at
// the beginning of the block), which x/net's decoder lets through while
// its dynamic table is empty. It walks the representations' boundaries
// without decoding them; a block it cannot walk is left to the decoder.
func lateSizeUpdate(b []byte) bool {
	for first := true; len(b) > 0; {
		kind, _, rest, ok := nextRep(b)
		switch {
		case !ok:
			return false
		case kind == repSizeUpdate && !first:
			return true
		}
		first = first && kind == repSizeUpdate // several may open the block
		b = rest
	}
	return false
}

// repKind is the kind of a field representation in an HPACK block (RFC
// 7541 §6).
type repKind uint8

const (
	repIndexed     repKind = iota // an indexed field
	repSizeUpdate                 // a dynamic table size update
	repIncremental                // a literal with incremental indexing
	repLiteral                    // a literal without indexing, or never indexed
)

// nextRep walks the representation that begins b without decoding it:
// its kind, its index (of the field, or of a literal's name, 0 for a new
// name; the size of an update) and the rest of b; ok is false when b ends
// inside it.
func nextRep(b []byte) (kind repKind, idx uint64, rest []byte, ok bool) {
	var n uint8
	switch c := b[0]; {
	case c&0x80 != 0:
		kind, n = repIndexed, 7
	case c&0xe0 == 0x20:
		kind, n = repSizeUpdate, 5
	case c&0xc0 == 0x40:
		kind, n = repIncremental, 6
	default:
		kind, n = repLiteral, 4
	}
	if idx, rest, ok = hpackInt(n, b); !ok || kind == repIndexed || kind == repSizeUpdate {
		return kind, idx, rest, ok
	}
	if idx == 0 {
		if rest, ok = hpackString(rest); !ok {
			return kind, idx, nil, false
		}
	}
	rest, ok = hpackString(rest)
	return kind, idx, rest, ok
}

// hpackString skips a string literal (RFC 7541 §5.2).
func hpackString(b []byte) ([]byte, bool) {
	n, b, ok := hpackInt(7, b)
	if !ok || uint64(len(b)) < n {
		return nil, false
	}
	return b[n:], true
}

// hpackInt reads an integer with an n-bit prefix (RFC 7541 §5.1).
func hpackInt(n uint8, b []byte) (uint64, []byte, bool) {
	if len(b) == 0 {
		return 0, nil, false
	}
	mask := uint64(1)<<n - 1
	v := uint64(b[0]) & mask
	b = b[1:]
	if v < mask {
		return v, b, true
	}
	var m uint
	for i, c := range b {
		if m > 56 {
			return 0, nil, false
		}
		v += uint64(c&0x7f) << m
		m += 7
		if c&0x80 == 0 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}
