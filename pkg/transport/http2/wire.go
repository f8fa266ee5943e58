package http2

import (
	"bytes"
	"strconv"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// field is one field of a request's header list.
type field struct {
	name, value []byte
}

// fieldList is the header list of a request as it goes out, built in
// buffers reused from request to request.
type fieldList struct {
	fields []field
	lower  []byte // lower-cased names that were not lower case already
	length [20]byte
	at     []int // for each field, its name's offset in lower, or -1
}

var (
	pMethod    = []byte(":method")
	pScheme    = []byte(":scheme")
	pAuthority = []byte(":authority")
	pPath      = []byte(":path")
	schemeHTTP = []byte("http")
	schemeTLS  = []byte("https")
	slash      = []byte("/")
	cLength    = []byte("content-length")
	trailers   = []byte("trailers")
)

// build makes the header list of r going to host over TLS or not, as
// RFC 9113 §8.2-8.3 wants it and docs/design.md's "Headers on the wire" keeps
// it:
//
//   - the pseudo-headers first: :method, :scheme, :authority (the Host
//     header's value, which is not sent itself) and :path (the request
//     target as recorded, "/" when empty);
//   - then the recorded headers in recorded order, names lower-cased;
//   - recorded pseudo-headers are replaced by those above; the
//     connection-specific headers (Connection, Keep-Alive,
//     Proxy-Connection, Transfer-Encoding, Upgrade) are dropped, and TE
//     unless it says "trailers";
//   - content-length is the length of the body sent, in place of a
//     recorded one, or last when the body is not empty;
//   - nothing else is added.
func (l *fieldList) build(r *rrpair.Request, https bool, host []byte) {
	l.fields, l.lower, l.at = l.fields[:0], l.lower[:0], l.at[:0]
	scheme := schemeHTTP
	if https {
		scheme = schemeTLS
	}
	path := r.URI
	if len(path) == 0 {
		path = slash
	}
	l.add(pMethod, r.Method)
	l.add(pScheme, scheme)
	l.add(pAuthority, host)
	l.add(pPath, path)
	lengthWritten := false
	for i := range r.Headers {
		h := &r.Headers[i]
		name := h.Name
		if len(name) == 0 || name[0] == ':' {
			continue
		}
		switch {
		case rrpair.EqualFold(name, "host"), rrpair.IsConnectionHeader(name), rrpair.EqualFold(name, "upgrade"):
		case rrpair.EqualFold(name, "te"):
			if rrpair.EqualFold(bytes.TrimSpace(h.Value), "trailers") {
				l.add(name, trailers)
			}
		case rrpair.EqualFold(name, "content-length"):
			if !lengthWritten {
				l.add(cLength, strconv.AppendInt(l.length[:0], int64(len(r.Body)), 10))
				lengthWritten = true
			}
		default:
			l.add(name, h.Value)
		}
	}
	if !lengthWritten && len(r.Body) > 0 {
		l.add(cLength, strconv.AppendInt(l.length[:0], int64(len(r.Body)), 10))
	}
	// lower may have moved as it grew: point the lower-cased names at it
	// now that it is complete.
	for i, at := range l.at {
		if at >= 0 {
			n := len(l.fields[i].name)
			l.fields[i].name = l.lower[at : at+n : at+n]
		}
	}
}

// add appends a field, its name lower-cased (into l.lower when it was not).
func (l *fieldList) add(name, value []byte) {
	at := -1
	for _, b := range name {
		if 'A' <= b && b <= 'Z' {
			at = len(l.lower)
			for _, b := range name {
				if 'A' <= b && b <= 'Z' {
					b += 'a' - 'A'
				}
				l.lower = append(l.lower, b)
			}
			break
		}
	}
	l.fields = append(l.fields, field{name: name, value: value})
	l.at = append(l.at, at)
}

// appendTo appends the list to dst, one "name: value" line each.
func (l *fieldList) appendTo(dst []byte) []byte {
	for _, f := range l.fields {
		dst = append(dst, f.name...)
		dst = append(dst, ": "...)
		dst = append(dst, f.value...)
		dst = append(dst, '\n')
	}
	return dst
}
