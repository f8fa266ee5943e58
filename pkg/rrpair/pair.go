// Package rrpair owns the RRPair JSON Lines traffic file: its types, the
// memory-mapped file with its line, session and endpoint indexes, the
// cursors VUs walk it with, decoding, validation with line numbers, and the
// file's summary for `replay inspect`.
//
// A line looks like this (Speedscale's RRPair export; unknown fields are
// ignored):
//
//	{"ts":"2026-11-01T10:00:00.5Z","l7protocol":"http","duration":3,
//	 "tags":{"session":"s-7"},
//	 "http":{"req":{"method":"POST","uri":"/events?v=2","host":"api:8080",
//	                "headers":{"Content-Type":["application/json"]},
//	                "body":"{\"type\":\"click\"}"},
//	         "res":{"statusCode":202,"headers":{},"bodyBase64":"e30="}}}
//
// rrpair imports nothing of the project: it is the shared vocabulary.
package rrpair

import (
	"bytes"
	"math"
	"strconv"
	"time"
)

// Header is one header line: a name as recorded (case kept) and one value.
// A name recorded with several values appears as several Headers in a row.
type Header struct {
	Name, Value []byte
}

// Request is an outgoing request: decoded from the file, changed in place by
// rewrites, written to the wire by a VU. Its byte slices point into the
// mapped file or into the owning Cursor's buffers; they are valid until the
// Cursor decodes the next pair. A rewrite that changes a field points it at
// memory of its own.
type Request struct {
	Method []byte
	// URI is the request target as recorded: path and query, raw (never
	// normalized), or "*".
	URI []byte
	// Host is the recorded host[:port]; empty when the line has none.
	Host []byte
	// Scheme is "http" or "https" from l7protocol or an absolute URI, or
	// empty when the line does not say.
	Scheme []byte
	// HostHeader, when a rewrite sets it, is the Host header to send,
	// whatever the destination (--target, --keep-host); never decoded.
	HostHeader []byte
	Headers    []Header
	Body       []byte
}

// Response is the recorded answer. Headers, Trailers and Body are decoded
// only when the Cursor was asked for responses (or the file is validated).
type Response struct {
	Status  int // 0 when not recorded
	Headers []Header
	// Trailers are http.res.trailers, in the shape of headers: where an
	// HTTP/2 answer ended, gRPC's grpc-status and grpc-message.
	Trailers []Header
	Body     []byte
}

// Pair is one decoded line.
type Pair struct {
	Index    int    // position of the pair in the file, from 0
	Line     int    // line number in the file, from 1
	Endpoint uint16 // index into File.Endpoints
	Req      Request
	Res      Response
	// TS is the recorded time, RFC 3339 as written; empty when absent.
	TS []byte
	// Duration is the recorded response time in ms as written; empty when absent.
	Duration []byte
	// Version is http.req.version as written ("1.1", "2", "HTTP/2.0"...).
	Version []byte
	// Session is tags.session; empty when the pair has no session.
	Session []byte
	// EndpointTag is tags.endpoint, which overrides the derived endpoint name.
	EndpointTag []byte
	// Tags is the tags object as written (raw JSON, "{...}"), for rules on
	// any tag (tag.NAME=); nil when the line has none. Decoding only points
	// at it: a rule parses it when the file is indexed.
	Tags []byte
	// Protocol is l7protocol as written ("http", "postgres"...); empty
	// when absent.
	Protocol []byte
	// Direction is direction as written: "IN" (or empty), a request to the
	// system under test; "OUT", the system's own call to a dependency.
	Direction []byte
	// FromSignature says Req was built from a Speedscale signature (a
	// response-only line of a snapshot's reaction file, read with
	// Options.Signatures): method, host, path, query and JSON body only.
	FromSignature bool
	// Instance is a signature line's instance: which answer to its
	// signature it is, from 0 (0 when the signature does not say).
	Instance int
	// WebSocketRaw is the "websocket" key's value as written (raw JSON):
	// the session recorded on an upgrade pair, read by WebSocket; nil when
	// the line has none.
	WebSocketRaw []byte
	// UnreadKey is the first key of a signature line's signature that was
	// not read into Req (a store_sig value, a header): the line's answer
	// depends on something Req does not hold. Nil when every key was read.
	UnreadKey []byte
}

// IsOut reports whether the pair is an OUT pair: a call the recorded
// service made to one of its dependencies, not a request to it.
func (p *Pair) IsOut() bool { return EqualFold(p.Direction, "out") }

// Time parses TS. It returns the zero time when TS is empty.
func (p *Pair) Time() (time.Time, error) {
	if len(p.TS) == 0 {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, string(p.TS))
}

// RecordedDuration parses Duration (milliseconds).
func (p *Pair) RecordedDuration() (time.Duration, error) {
	if len(p.Duration) == 0 {
		return 0, nil
	}
	ms, err := strconv.ParseFloat(string(p.Duration), 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// IsHTTP2 reports whether the pair was recorded as HTTP/2 (or 3), in any
// of the version spellings recorders write; sent as HTTP/1.1, such a pair
// is counted as downgraded.
func (p *Pair) IsHTTP2() bool { return isHTTP2(p.Version) }

// IsGRPC reports whether the pair is a gRPC call: its request
// Content-Type (any case) starts with "application/grpc" (DESIGN's one
// rule, used everywhere).
func (p *Pair) IsGRPC() bool { return IsGRPC(p.Req.Headers) }

var grpcType = []byte("application/grpc")

// IsGRPC reports whether request headers h make a gRPC call: a
// Content-Type (any case) that starts with "application/grpc".
func IsGRPC(h []Header) bool {
	for i := range h {
		if EqualFold(h[i].Name, "content-type") {
			v := h[i].Value
			return len(v) >= len(grpcType) && bytes.EqualFold(v[:len(grpcType)], grpcType)
		}
	}
	return false
}

// isHTTP2 reads the version spellings recorders write for HTTP/2 and 3:
// "2", "3", "HTTP/2", "HTTP/2.0", "http/2.0", "HTTP/3" (any case), and
// ALPN's "h2", "h2c", "h3", "h3-29".
func isHTTP2(v []byte) bool {
	switch {
	case len(v) >= 5 && EqualFold(v[:5], "http/"):
		v = v[5:]
	case len(v) >= 2 && (v[0] == 'h' || v[0] == 'H'):
		v = v[1:]
	}
	return len(v) > 0 && (v[0] == '2' || v[0] == '3')
}

// reset empties p, keeping the capacity of its header slices.
func (p *Pair) reset() {
	reqH, resH, resT := p.Req.Headers[:0], p.Res.Headers[:0], p.Res.Trailers[:0]
	*p = Pair{}
	p.Req.Headers, p.Res.Headers, p.Res.Trailers = reqH, resH, resT
}

// UnixNano parses TS (RFC 3339, any offset, 0 to 9 fraction digits) into
// Unix nanoseconds without allocating, for pacing on the hot path. ok is
// false when TS is empty or not of that form.
func (p *Pair) UnixNano() (ns int64, ok bool) {
	return parseRFC3339(p.TS)
}

func parseRFC3339(b []byte) (int64, bool) {
	st, ok := ParseRFC3339(b)
	return st.UnixNano, ok
}

// Stamp is an RFC 3339 time as it was written: the instant, and how it was
// written, so that a shifted time can be written the same way.
type Stamp struct {
	UnixNano int64
	Offset   int  // seconds east of UTC, as written
	Frac     int  // digits of the fraction, as written (0: none)
	Zulu     byte // 'Z' or 'z' when the offset was written so, else 0
	Sep      byte // between date and time: 'T', 't' or ' '
}

// ParseRFC3339 parses an RFC 3339 time (any offset, any number of fraction
// digits, nanoseconds kept) without allocating. It walks the fixed layout
// part by part: date and time, fraction, zone; each part's checks are in
// the helper below named for it.
func ParseRFC3339(b []byte) (Stamp, bool) {
	// 2006-01-02T15:04:05[.frac](Z|±07:00)
	var st Stamp
	if !rfc3339Layout(b) {
		return st, false
	}
	st.Sep = b[10]
	c, ok := rfc3339Civil(b)
	if !ok {
		return st, false
	}
	i, nanos, ok := rfc3339Frac(b, &st)
	if !ok || !rfc3339Zone(b, i, &st) {
		return st, false
	}
	secs := daysFromCivil(c.year, c.month, c.day)*86400 + int64(c.hour*3600+c.minute*60+c.sec-st.Offset)
	const maxSecs, minSecs = math.MaxInt64 / int64(1e9), math.MinInt64 / int64(1e9)
	if secs < minSecs || secs > maxSecs || secs == maxSecs && nanos > math.MaxInt64%int64(1e9) {
		return st, false // not an instant of int64 nanoseconds: before 1678 or after 2262
	}
	st.UnixNano = secs*1e9 + nanos
	return st, true
}

// rfc3339Layout reports whether b is long enough and has the date and time
// separators where RFC 3339 puts them.
func rfc3339Layout(b []byte) bool {
	return len(b) >= 20 && b[4] == '-' && b[7] == '-' && (b[10] == 'T' || b[10] == 't' || b[10] == ' ') && b[13] == ':' && b[16] == ':'
}

// civil is a date and a time of day as written, before the offset.
type civil struct {
	year, month, day, hour, minute, sec int
}

// rfc3339Civil reads the date and time fields of a laid-out stamp; ok is
// false when one is not digits or out of its range.
func rfc3339Civil(b []byte) (civil, bool) {
	year, ok1 := atoi(b[0:4])
	month, ok2 := atoi(b[5:7])
	day, ok3 := atoi(b[8:10])
	hour, ok4 := atoi(b[11:13])
	minute, ok5 := atoi(b[14:16])
	sec, ok6 := atoi(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 60 {
		return civil{}, false
	}
	return civil{year, month, day, hour, minute, sec}, true
}

// rfc3339Frac reads the optional fraction after the seconds, recording its
// digit count in st; it returns the index past it and the nanoseconds (digits
// past the ninth dropped). ok is false on a dot without digits.
func rfc3339Frac(b []byte, st *Stamp) (i int, nanos int64, ok bool) {
	i = 19
	if i >= len(b) || b[i] != '.' {
		return i, 0, true
	}
	i++
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if i-start < 9 {
			nanos = nanos*10 + int64(b[i]-'0')
		}
		i++
	}
	if i == start {
		return i, 0, false
	}
	st.Frac = i - start
	nanos *= pow10[9-min(st.Frac, 9)]
	return i, nanos, true
}

// rfc3339Zone reads the zone at b[i:], which must end the stamp: a 'Z' (or
// 'z'), kept in st.Zulu, or ±hh:mm, kept in st.Offset.
func rfc3339Zone(b []byte, i int, st *Stamp) bool {
	switch {
	case i == len(b)-1 && (b[i] == 'Z' || b[i] == 'z'):
		st.Zulu = b[i]
	case i == len(b)-6 && (b[i] == '+' || b[i] == '-') && b[i+3] == ':':
		oh, ok1 := atoi(b[i+1 : i+3])
		om, ok2 := atoi(b[i+4 : i+6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return false
		}
		st.Offset = oh*3600 + om*60
		if b[i] == '-' {
			st.Offset = -st.Offset
		}
	default:
		return false
	}
	return true
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// daysIn is the number of days of a month.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to a proleptic
// Gregorian date (Howard Hinnant's days_from_civil): what time.Date gives,
// at a third of its cost, for every ts of a file at open.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 { // only January and February of year 0
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}

// AppendRFC3339 appends the instant ns written as st was written (same
// offset, fraction digits, separator and zone letter), without allocating.
func (st Stamp) AppendRFC3339(dst []byte, ns int64) []byte {
	t := time.Unix(0, ns).UTC().Add(time.Duration(st.Offset) * time.Second)
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	dst = appendInt(dst, year, 4)
	dst = append(dst, '-')
	dst = appendInt(dst, int(month), 2)
	dst = append(dst, '-')
	dst = appendInt(dst, day, 2)
	dst = append(dst, st.Sep)
	dst = appendInt(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendInt(dst, minute, 2)
	dst = append(dst, ':')
	dst = appendInt(dst, sec, 2)
	if st.Frac > 0 {
		dst = append(dst, '.')
		frac := t.Nanosecond()
		for i, scale := 0, 100000000; i < st.Frac; i++ {
			dst = append(dst, byte('0'+frac/scale%10))
			if scale > 1 {
				scale /= 10
			} else {
				frac = 0 // digits past nanoseconds are zeros
			}
		}
	}
	if st.Zulu != 0 {
		return append(dst, st.Zulu)
	}
	off, sign := st.Offset, byte('+')
	if off < 0 {
		off, sign = -off, '-'
	}
	dst = append(dst, sign)
	dst = appendInt(dst, off/3600, 2)
	dst = append(dst, ':')
	return appendInt(dst, off%3600/60, 2)
}

// appendInt appends n (not negative) with at least width digits.
func appendInt(dst []byte, n, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for n > 0 || width > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		width--
	}
	return append(dst, buf[i:]...)
}
