package rrpair

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"time"
	"unicode/utf8"
)

// Record is one pair to write as an RRPair line: what importers and the
// capture proxy produce.
type Record struct {
	TS       time.Time     // when the request was made; zero: no ts
	Duration time.Duration // the recorded response time; 0: none
	Protocol string        // "http" or "https" (l7protocol); "": none
	Session  string        // tags.session; "": none
	// Direction is "IN" (a request to the service) or "OUT" (the
	// service's own call to a dependency: the forward recorder's pairs,
	// a capture's --service calls); "": none written, which means IN.
	Direction string
	Version   string // http.req.version ("1.1", "2"); "": none
	Method    string
	URI       string // path and query, raw
	Host      string
	Headers   []Field // in order; a name may repeat
	Body      []byte
	// The recorded answer; Status 0 writes none.
	Status     int
	ResHeaders []Field
	// ResTrailers are the answer's trailers (http.res.trailers): an
	// HTTP/2 answer's, gRPC's grpc-status among them.
	ResTrailers []Field
	ResBody     []byte
	// ResBodyCut, when not 0, is the whole size in bytes of an answer
	// body cut to ResBody (a recorder's --max-body): written as
	// http.res.bodyCut, so that a cut body never passes for whole.
	ResBodyCut int64
	// WebSocket is the session of an upgrade pair (Status 101), written
	// as the "websocket" key; nil writes none.
	WebSocket *WebSocket
}

// Field is one header line.
type Field struct{ Name, Value string }

// maxTextBody is the largest body written as text; larger ones, and any
// that is not UTF-8, are written as base64.
const maxTextBody = 64 << 10

// AppendLine appends r as one RRPair JSON line, newline included. Headers
// (and trailers) become {"Name": ["v1", "v2"]}: the values of a name (same spelling)
// together where it first appears, which is how a replay sends them.
func AppendLine(dst []byte, r *Record) []byte {
	dst = append(dst, '{')
	if !r.TS.IsZero() {
		dst = append(dst, `"ts":`...)
		dst = AppendJSONString(dst, r.TS.UTC().Format(time.RFC3339Nano))
		dst = append(dst, ',')
	}
	if r.Duration > 0 {
		dst = append(dst, `"duration":`...)
		dst = strconv.AppendFloat(dst, float64(r.Duration)/float64(time.Millisecond), 'f', -1, 64)
		dst = append(dst, ',')
	}
	if r.Protocol != "" {
		dst = append(dst, `"l7protocol":`...)
		dst = AppendJSONString(dst, r.Protocol)
		dst = append(dst, ',')
	}
	if r.Session != "" {
		dst = append(dst, `"tags":{"session":`...)
		dst = AppendJSONString(dst, r.Session)
		dst = append(dst, "},"...)
	}
	if r.Direction != "" {
		dst = append(dst, `"direction":`...)
		dst = AppendJSONString(dst, r.Direction)
		dst = append(dst, ',')
	}
	if r.WebSocket != nil {
		dst = append(dst, `"websocket":`...)
		dst = AppendWebSocket(dst, r.WebSocket)
		dst = append(dst, ',')
	}
	dst = append(dst, `"http":{"req":{"method":`...)
	dst = AppendJSONString(dst, r.Method)
	if utf8.ValidString(r.URI) {
		dst = append(dst, `,"uri":`...)
		dst = AppendJSONString(dst, r.URI)
	} else { // raw bytes a JSON string cannot hold: base64, read back byte for byte
		dst = append(dst, `,"uriBase64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, []byte(r.URI))
		dst = append(dst, '"')
	}
	if r.Host != "" {
		dst = append(dst, `,"host":`...)
		dst = AppendJSONString(dst, r.Host)
	}
	if r.Version != "" {
		dst = append(dst, `,"version":`...)
		dst = AppendJSONString(dst, r.Version)
	}
	dst = appendFields(dst, `,"headers":{`, r.Headers)
	dst = appendBody(dst, r.Body)
	dst = append(dst, '}')
	if r.Status != 0 {
		dst = append(dst, `,"res":{"statusCode":`...)
		dst = strconv.AppendInt(dst, int64(r.Status), 10)
		dst = appendFields(dst, `,"headers":{`, r.ResHeaders)
		dst = appendFields(dst, `,"trailers":{`, r.ResTrailers)
		dst = appendBody(dst, r.ResBody)
		if r.ResBodyCut > 0 {
			dst = append(dst, `,"bodyCut":`...)
			dst = strconv.AppendInt(dst, r.ResBodyCut, 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, "}}\n"...)
}

// AppendChecked appends r as AppendLine does, and checks the line as Open
// would (a missing host aside): a line Open would refuse is not appended,
// dst comes back as it was, with the reason. Converters and the capture
// proxy write through it, so that what they write always opens.
func AppendChecked(dst []byte, r *Record) ([]byte, error) {
	var c Checker
	return c.AppendChecked(dst, r)
}

// Checker is AppendChecked and CheckLine with their memory kept from line
// to line, for a converter that writes many lines (a packet capture's
// million pairs). The zero Checker is ready; use it from one goroutine.
type Checker struct {
	d decoder
	p Pair
}

// AppendChecked is the package's AppendChecked, reusing c's memory.
func (c *Checker) AppendChecked(dst []byte, r *Record) ([]byte, error) {
	n := len(dst)
	dst = AppendLine(dst, r)
	if err := c.CheckLine(dst[n:]); err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// CheckLine is the package's CheckLine, reusing c's memory.
func (c *Checker) CheckLine(line []byte) error {
	c.d.validate = true
	_, err := c.d.decode(bytes.TrimSuffix(line, []byte("\n")), &c.p)
	return err
}

// appendFields appends the fields hs as the object that key (with its
// comma and brace) opens; nothing when there are none.
func appendFields(dst []byte, key string, hs []Field) []byte {
	if len(hs) == 0 {
		return dst
	}
	dst = append(dst, key...)
	for i, h := range hs {
		seen := false
		for _, p := range hs[:i] {
			if p.Name == h.Name {
				seen = true
				break
			}
		}
		if seen {
			continue
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, h.Name)
		dst = append(dst, ":["...)
		first := true
		for _, v := range hs[i:] {
			if v.Name != h.Name {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			if utf8.ValidString(v.Value) {
				dst = AppendJSONString(dst, v.Value)
			} else { // {"base64": "..."}: raw bytes, read back byte for byte
				dst = append(dst, `{"base64":"`...)
				dst = base64.StdEncoding.AppendEncode(dst, []byte(v.Value))
				dst = append(dst, `"}`...)
			}
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func appendBody(dst, body []byte) []byte {
	switch {
	case len(body) == 0:
		return dst
	case len(body) <= maxTextBody && utf8.Valid(body):
		dst = append(dst, `,"body":`...)
		return AppendJSONString(dst, string(body))
	}
	dst = append(dst, `,"bodyBase64":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, body)
	return append(dst, '"')
}

// AppendJSONString appends s as a JSON string: UTF-8 kept, quotes,
// backslashes and control characters escaped (\n, \r, \t, else \u00XX).
// Unlike strconv.Quote, whose \x01 and \a are not JSON, it writes only
// JSON escapes. A byte that is not UTF-8 is written as U+FFFD, so that
// what it writes is always valid UTF-8 (a strict decoder reads it): the
// fields whose bytes matter (a URI, a header value, a body) are written
// in base64 instead when they are not UTF-8.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0 // s[start:i] needs no escape: appended as a run
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\ufffd"...)
				start = i + 1
			} else {
				i += size - 1
			}
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// CheckLine validates one line as Open does (a missing host aside), for
// converters that skip, and report, what Open would refuse. A line Open
// would skip (another protocol, a response-only record) passes.
func CheckLine(line []byte) error {
	var c Checker
	return c.CheckLine(line)
}

// ConnectionHeader reports whether a header (name in any case) belongs to
// the connection rather than to the request: Connection, Keep-Alive,
// Proxy-Connection, Transfer-Encoding. A replay never sends them (each VU
// owns its connection; the transport's head writer drops them), so
// converters need not record them. It is the one list of them.
func ConnectionHeader(name string) bool {
	return IsConnectionHeader([]byte(name))
}

// IsConnectionHeader is ConnectionHeader for a name as bytes, without
// allocating: for the head writer's loop.
func IsConnectionHeader(name []byte) bool {
	switch len(name) {
	case len("connection"): // and "keep-alive"
		return EqualFold(name, "connection") || EqualFold(name, "keep-alive")
	case len("proxy-connection"):
		return EqualFold(name, "proxy-connection")
	case len("transfer-encoding"):
		return EqualFold(name, "transfer-encoding")
	}
	return false
}

// EqualFold reports whether the ASCII name b equals lower, a lower-case
// name, in any case, without allocating: for header names on the hot path.
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
