package http1

import (
	"strconv"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// appendHead appends the request line and headers of r to dst, following
// DESIGN.md's "Headers on the wire":
//
//   - headers go in recorded order, names in recorded case, one line per value;
//   - Host carries host, written where the recorded Host key stands, else first;
//   - Content-Length is the length of the body actually sent, replacing a
//     recorded one in place, or added last when the body is not empty;
//   - the connection headers (rrpair.IsConnectionHeader: Transfer-Encoding,
//     Connection, Keep-Alive, Proxy-Connection) are dropped (connection
//     handling belongs to the VU), as are HTTP/2 pseudo-headers (":authority");
//   - nothing else is added, except "Connection: close" when the VU opens a
//     connection per request (connClose).
func appendHead(dst []byte, r *rrpair.Request, host []byte, connClose bool) []byte {
	dst = append(dst, r.Method...)
	dst = append(dst, ' ')
	dst = append(dst, r.URI...)
	dst = append(dst, " HTTP/1.1\r\n"...)

	hostAt := -1
	for i := range r.Headers {
		if rrpair.EqualFold(r.Headers[i].Name, "host") {
			hostAt = i
			break
		}
	}
	if hostAt < 0 {
		dst = appendHeader(dst, "Host", host)
	}
	lengthWritten := false
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
