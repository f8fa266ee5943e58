package http1

import (
	"strconv"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// appendHead appends the request line and headers of r to dst, following
// docs/design.md's "Headers on the wire":
//
//   - headers go in recorded order, names in recorded case, one line per value;
//   - Host carries host, written where the recorded Host key stands, else first;
//   - Content-Length is the length of the body actually sent, replacing a
//     recorded one in place, or added last when the body is not empty;
//   - the connection headers (rrpair.IsConnectionHeader: Transfer-Encoding,
//     Connection, Keep-Alive, Proxy-Connection) are dropped (connection
//     handling belongs to the VU), as are HTTP/2 pseudo-headers (":authority");
//   - several cookie fields (any case of the name) go out as one line, their
//     values joined with "; ", where the first stands and in its name's case:
//     HTTP/2 and 3 split the Cookie header into fields, which must be joined
//     before they go to HTTP/1.1 (RFC 9113 §8.2.3, RFC 9114 §4.2.1), and an
//     HTTP/1.1 client sends one Cookie line (RFC 6265 §5.4). This holds for
//     every pair, whatever its recorded version: several cookie fields come
//     from HTTP/2 recordings, of files that do not always say their version,
//     and AppendWire, which sees only the request, writes what Do does;
//   - nothing else is added, except "Connection: close" when the VU opens a
//     connection per request (connClose).
func appendHead(dst []byte, r *rrpair.Request, host []byte, connClose bool) []byte {
	dst = append(dst, r.Method...)
	dst = append(dst, ' ')
	dst = append(dst, r.URI...)
	dst = append(dst, " HTTP/1.1\r\n"...)

	hostAt := hostIndex(r)
	if hostAt < 0 {
		dst = appendHeader(dst, "Host", host)
	}
	lengthWritten, cookieWritten := false, false
	for i := range r.Headers {
		h := &r.Headers[i]
		name := h.Name
		if len(name) == 0 || name[0] == ':' {
			continue
		}
		switch {
		case isHeader(name, "host", 'h'):
			if i == hostAt {
				dst = appendHeaderBytes(dst, name, host)
			}
		case isHeader(name, "content-length", 'c'):
			if !lengthWritten {
				dst = appendLength(dst, name, len(r.Body))
				lengthWritten = true
			}
		case isHeader(name, "cookie", 'c'):
			if !cookieWritten {
				dst = appendCookies(dst, name, r.Headers[i:])
				cookieWritten = true
			}
		case rrpair.IsConnectionHeader(name): // connection handling is the VU's
		default:
			dst = appendHeaderBytes(dst, name, h.Value)
		}
	}
	if !lengthWritten && len(r.Body) > 0 {
		dst = appendLength(dst, contentLength, len(r.Body))
	}
	if connClose {
		dst = append(dst, "Connection: close\r\n"...)
	}
	return append(dst, "\r\n"...)
}

// hostIndex is the index of r's first Host header, -1 without one.
func hostIndex(r *rrpair.Request) int {
	for i := range r.Headers {
		if rrpair.EqualFold(r.Headers[i].Name, "host") {
			return i
		}
	}
	return -1
}

var contentLength = []byte("Content-Length")

func appendHeader(dst []byte, name string, value []byte) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

func appendHeaderBytes(dst, name, value []byte) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

// appendCookies writes one Cookie line named name: the values of the
// cookie fields of hs joined with "; " (empty ones left out), in the
// scratch buffer dst, without allocating once it has grown.
func appendCookies(dst, name []byte, hs []rrpair.Header) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	start := len(dst)
	for i := range hs {
		v := hs[i].Value
		if len(v) == 0 || !isHeader(hs[i].Name, "cookie", 'c') {
			continue
		}
		if len(dst) > start {
			dst = append(dst, "; "...)
		}
		dst = append(dst, v...)
	}
	return append(dst, "\r\n"...)
}

func appendLength(dst, name []byte, n int) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n"...)
}

// isHeader is equalFold with a cheap first-byte test, for the hot loop.
func isHeader(name []byte, lower string, first byte) bool {
	return len(name) == len(lower) && name[0]|0x20 == first && rrpair.EqualFold(name, lower)
}
