package rrpair

import (
	"bytes"
	"encoding/base64"
	"fmt"
)

// FieldError is what is wrong with one line: the field (as a dotted path,
// "http.req.method") and why, or a JSON syntax error at a byte offset.
type FieldError struct {
	Field string // empty for a syntax error
	Msg   string
	Off   int // byte offset in the line of a syntax error, else -1
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Off: -1}
}

func wantErr(field, want string, got byte) *FieldError {
	return &FieldError{Field: field, Msg: "want " + want + ", got " + kind(got), Off: -1}
}

// decoder turns one line into a Pair. It owns the buffers that unescaped
// strings and decoded bodies live in; they are reused from pair to pair, so
// a warmed-up decoder does not allocate.
type decoder struct {
	// validate turns on the checks that only opening a file needs: header
	// tokens, ts syntax, response fields. Decoding for a run trusts a file
	// that passed them.
	validate bool
	// responses decodes recorded response headers, trailers and bodies.
	responses bool
	// signatures turns a response-only line whose request is given as a
	// signature into a pair (signature.go); without it the line is skipped.
	signatures bool
	sig        sigSpans // the line's signature, found by top and http
	sreq       sigReq

	arena   []byte // unescaped strings; append-only between resets
	body    []byte // decoded request body
	resBody []byte // decoded response body

	// bodyAt and bodyEnd are where a validated line's request text body
	// lies (its quotes included) when it has escapes, for the body cache
	// (bodycache.go); both 0 when it has none.
	bodyAt, bodyEnd int
	// cached is the request body of the line being decoded, unescaped
	// once at Open (File.bodies); nil when it is not cached. Set by the
	// Cursor before each decode.
	cached *cachedBody

	// hasReq and hasRes say whether the line has an http.req, an
	// http.res object.
	hasReq, hasRes bool
}

// decode fills p from line. A valid line that is not an HTTP request
// (another l7protocol, a response-only record) returns its kind, with p
// partly filled and no error; the caller skips it. On error p is partly
// filled.
func (d *decoder) decode(line []byte, p *Pair) (skipKind, error) {
	p.reset()
	d.arena = d.arena[:0]
	d.hasReq, d.hasRes = false, false
	d.bodyAt, d.bodyEnd = 0, 0
	d.sig = sigSpans{}
	s := scanner{b: line, trusted: !d.validate}
	err := d.top(&s, p)
	if err == nil {
		err = s.end()
	}
	if err != nil {
		if se, ok := err.(*syntaxError); ok {
			return replayable, &FieldError{Msg: "invalid JSON: " + se.msg, Off: se.off}
		}
		if d.validate && d.otherProtocol(line, p) {
			return skipProtocol, nil
		}
		return replayable, err
	}
	kind := d.classify(p)
	if kind == skipSignature && d.signatures {
		if err := d.fromSignature(p); err != nil {
			return replayable, err
		}
		kind = replayable
	}
	if kind != replayable {
		return kind, nil
	}
	return replayable, d.check(p)
}

func (d *decoder) top(s *scanner, p *Pair) error {
	if c := s.peek(); c != '{' {
		at := s.i
		if err := s.skip(0); err != nil {
			return err
		}
		return &FieldError{Msg: "want a JSON object, got " + kind(c), Off: at}
	}
	s.i++
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil || !ok {
			return err
		}
		switch string(key) {
		case "http":
			err = d.http(s, p)
		case "ts":
			p.TS, err = d.optString(s, "ts")
		case "duration":
			p.Duration, err = d.optNumber(s, "duration")
		case "l7protocol":
			if p.Protocol, err = d.optString(s, "l7protocol"); err == nil {
				p.Req.Scheme = schemeOf(p.Protocol)
			}
		case "direction":
			p.Direction, err = d.optString(s, "direction")
		case "tags":
			err = d.tags(s, p)
		case "mutableSignature", "signature", "command", "location", "network_address":
			err = d.sigTop(s, key)
		default:
			err = otherTop(s, p, key)
		}
		if err != nil {
			return err
		}
	}
}

var (
	schemeHTTP  = []byte("http")
	schemeHTTPS = []byte("https")
	rootPath    = []byte("/")
)

// schemeOf maps l7protocol to a scheme; other protocols leave it unknown.
func schemeOf(proto []byte) []byte {
	switch {
	case bytes.EqualFold(proto, schemeHTTPS):
		return schemeHTTPS
	case bytes.EqualFold(proto, schemeHTTP):
		return schemeHTTP
	}
	return nil
}

func (d *decoder) http(s *scanner, p *Pair) error {
	if c := s.peek(); c != '{' {
		return wantErr("http", "an object", c)
	}
	s.i++
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil || !ok {
			return err
		}
		switch {
		case string(key) == "req" && s.peek() == 'n': // null: no request
			err = s.literal()
		case string(key) == "req":
			d.hasReq = true
			err = d.req(s, p)
		case string(key) == "res" && s.peek() == 'n':
			err = s.literal()
		case string(key) == "res":
			d.hasRes = true
			err = d.res(s, p)
		case string(key) == "sig":
			d.sig.http, err = rawSpan(s)
		default:
			err = s.skip(0)
		}
		if err != nil {
			return err
		}
	}
}

func (d *decoder) req(s *scanner, p *Pair) error {
	if c := s.peek(); c != '{' {
		return wantErr("http.req", "an object", c)
	}
	s.i++
	var f reqFields
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if err := d.reqField(s, p, &f, key); err != nil {
			return err
		}
	}
	var err error
	if p.Req.Body, err = f.body.decode(&d.body, reqBody); err != nil {
		return err
	}
	if f.uri == nil {
		f.uri = f.url
	}
	p.Req.URI = f.uri
	return nil
}

// reqFields holds the fields of http.req read before the request is
// complete: its URI (uri or uriBase64, else url) and its body.
type reqFields struct {
	uri, url []byte
	body     bodyFields
}

// reqField reads the value of one key of http.req; an unknown key's value is
// skipped.
func (d *decoder) reqField(s *scanner, p *Pair, f *reqFields, key []byte) (err error) {
	switch string(key) {
	case "method":
		p.Req.Method, err = d.optString(s, "http.req.method")
	case "uri":
		f.uri, err = d.optString(s, "http.req.uri")
	case "uriBase64":
		f.uri, err = d.base64String(s, "http.req.uriBase64")
	case "url":
		f.url, err = d.optString(s, "http.req.url")
	case "host":
		p.Req.Host, err = d.optString(s, "http.req.host")
	case "version":
		p.Version, err = d.optString(s, "http.req.version")
	case "headers":
		p.Req.Headers, err = d.headers(s, "http.req.headers", p.Req.Headers)
	case "bodyBase64", "body":
		err = d.readBody(s, &f.body, key, reqBody)
	default:
		err = s.skip(0)
	}
	return err
}

func (d *decoder) res(s *scanner, p *Pair) error {
	if c := s.peek(); c != '{' {
		return wantErr("http.res", "an object", c)
	}
	s.i++
	full := d.validate || d.responses
	var body bodyFields
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch {
		case string(key) == "statusCode":
			p.Res.Status, err = d.status(s)
		case full && string(key) == "headers":
			p.Res.Headers, err = d.headers(s, "http.res.headers", p.Res.Headers)
		case full && string(key) == "trailers":
			p.Res.Trailers, err = d.headers(s, "http.res.trailers", p.Res.Trailers)
		case full && (string(key) == "bodyBase64" || string(key) == "body"):
			err = d.readBody(s, &body, key, resBody)
		default:
			err = s.skip(0)
		}
		if err != nil {
			return err
		}
	}
	var err error
	p.Res.Body, err = body.decode(&d.resBody, resBody)
	return err
}

// bodyNames are the field names of a body, for errors; req marks the
// request's.
type bodyNames struct {
	base64, text string
	req          bool
}

var (
	reqBody = bodyNames{"http.req.bodyBase64", "http.req.body", true}
	resBody = bodyNames{"http.res.bodyBase64", "http.res.body", false}
)

// bodyFields collects the two spellings of a body: bodyBase64 wins over
// body when a line has both.
type bodyFields struct {
	base64, text       []byte
	hasBase64, hasText bool
}

// readBody reads the value of key, "bodyBase64" or "body", into b.
func (d *decoder) readBody(s *scanner, b *bodyFields, key []byte, names bodyNames) (err error) {
	present := s.peek() != 'n'
	if string(key) == "bodyBase64" {
		b.hasBase64 = present
		b.base64, err = d.optString(s, names.base64)
		return err
	}
	b.hasText = present
	if names.req && d.cached != nil && s.i == int(d.cached.at) {
		// Unescaped once at Open: skip the string.
		s.i, b.text = int(d.cached.end), d.cached.body
		return nil
	}
	at := s.i
	var escaped bool
	b.text, escaped, err = d.optBody(s, names.text)
	if names.req && escaped {
		d.bodyAt, d.bodyEnd = at, s.i
	}
	return err
}

// decode returns the body: base64 decoded into buf, or the text.
func (b *bodyFields) decode(buf *[]byte, names bodyNames) ([]byte, error) {
	switch {
	case b.hasBase64:
		var err error
		*buf, err = decodeBase64(*buf, b.base64, names.base64)
		return *buf, err
	case b.hasText:
		return b.text, nil
	}
	return nil, nil
}

func (d *decoder) status(s *scanner) (int, error) {
	c := s.peek()
	if c == 'n' {
		return 0, s.literal()
	}
	if c != '-' && (c < '0' || c > '9') {
		return 0, wantErr("http.res.statusCode", "a number", c)
	}
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range num {
		if c < '0' || c > '9' || n > 999 {
			return 0, fieldErr("http.res.statusCode", "want an integer from 100 to 999, got %s", num)
		}
		n = n*10 + int(c-'0')
	}
	if n != 0 && (n < 100 || n > 999) {
		return 0, fieldErr("http.res.statusCode", "want an integer from 100 to 999, got %s", num)
	}
	return n, nil
}

func (d *decoder) tags(s *scanner, p *Pair) error {
	c := s.peek()
	if c == 'n' {
		return s.literal()
	}
	if c != '{' {
		return wantErr("tags", "an object", c)
	}
	start := s.i
	s.i++
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil {
			return err
		}
		if !ok {
			p.Tags = s.b[start:s.i]
			return nil
		}
		switch string(key) {
		case "session":
			p.Session, err = d.optString(s, "tags.session")
		case "endpoint":
			p.EndpointTag, err = d.optString(s, "tags.endpoint")
		default:
			err = s.skip(0)
		}
		if err != nil {
			return err
		}
	}
}

// headers decodes {"Name": ["v1", "v2"], ...} into hs, one Header per value,
// in key order.
func (d *decoder) headers(s *scanner, field string, hs []Header) ([]Header, error) {
	c := s.peek()
	if c == 'n' {
		return hs, s.literal()
	}
	if c != '{' {
		return hs, wantErr(field, "an object of string arrays", c)
	}
	s.i++
	for first := true; ; first = false {
		rawName, ok, err := s.nextKey(first)
		if err != nil || !ok {
			return hs, err
		}
		name, err := d.headerName(field, rawName)
		if err != nil {
			return hs, err
		}
		if hs, err = d.headerValues(s, field, name, hs); err != nil {
			return hs, err
		}
	}
}

// headerName is a header's name as written in the object's key, unescaped
// into the arena when it holds an escape, and checked as a token when
// validating (HTTP/2 pseudo-headers pass).
func (d *decoder) headerName(field string, rawName []byte) ([]byte, error) {
	name := rawName
	if bytes.IndexByte(rawName, '\\') >= 0 {
		start := len(d.arena)
		d.arena, _ = AppendUnescaped(d.arena, rawName)
		name = d.arena[start:len(d.arena):len(d.arena)]
	}
	if d.validate && !ValidToken(name) && !isPseudo(name) {
		return name, fieldErr(field, "header name %q is not a valid token", name)
	}
	return name, nil
}

// headerValues reads one header's array of values, appending a Header to hs
// for each.
func (d *decoder) headerValues(s *scanner, field string, name []byte, hs []Header) ([]Header, error) {
	if c := s.peek(); c != '[' {
		return hs, &FieldError{Field: field + "." + string(name), Msg: "want an array of strings, got " + kind(c), Off: -1}
	}
	s.i++
	for efirst := true; ; efirst = false {
		more, err := s.nextElem(efirst)
		if err != nil {
			return hs, err
		}
		if !more {
			return hs, nil
		}
		v, err := d.headerValue(s, field, name)
		if err != nil {
			return hs, err
		}
		hs = append(hs, Header{Name: name, Value: v})
	}
}

// headerValue reads one element of a header's values: a string, or
// {"base64": "..."} for a value that is not UTF-8. When validating, a value
// must hold no CR, LF or NUL.
func (d *decoder) headerValue(s *scanner, field string, name []byte) ([]byte, error) {
	if c := s.peek(); c == '{' { // {"base64": "..."}: a value that is not UTF-8
		v, err := d.base64Value(s, field+"."+string(name))
		if err != nil {
			return nil, err
		}
		if d.validate && !ValidFieldValue(v) {
			return nil, fieldErr(field+"."+string(name), "value contains CR, LF or NUL")
		}
		return v, nil
	} else if c != '"' {
		return nil, &FieldError{Field: field + "." + string(name), Msg: "want an array of strings or {\"base64\": ...}, got an element that is " + kind(c), Off: -1}
	}
	v, escaped, err := d.stringEsc(s)
	if err != nil {
		return nil, err
	}
	// Only an escape can put a control character in a string.
	if d.validate && escaped && !ValidFieldValue(v) {
		return nil, fieldErr(field+"."+string(name), "value contains CR, LF or NUL")
	}
	return v, nil
}

// base64String reads a base64 string (field names it in errors) and
// decodes it into the arena.
func (d *decoder) base64String(s *scanner, field string) ([]byte, error) {
	if c := s.peek(); c != '"' {
		return nil, wantErr(field, "a base64 string", c)
	}
	raw, _, err := s.str()
	if err != nil {
		return nil, err
	}
	start := len(d.arena)
	n := base64.StdEncoding.DecodedLen(len(raw))
	d.arena = append(d.arena, make([]byte, n)...)
	m, err := base64.StdEncoding.Decode(d.arena[start:start+n], raw)
	d.arena = d.arena[:start+m]
	if err != nil {
		return nil, fieldErr(field, "bad base64: %v", err)
	}
	return d.arena[start : start+m : start+m], nil
}

// base64Value reads a header value written as {"base64": "..."} (the
// form of a value that is not UTF-8), decoded into the arena.
func (d *decoder) base64Value(s *scanner, field string) ([]byte, error) {
	s.i++
	var v []byte
	found := false
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if string(key) == "base64" {
			if v, err = d.base64String(s, field+".base64"); err != nil {
				return nil, err
			}
			found = true
		} else if err := s.skip(0); err != nil {
			return nil, err
		}
	}
	if !found {
		return nil, fieldErr(field, `want a string or {"base64": "..."}, got an object without base64`)
	}
	return v, nil
}

// string reads a string, unescaping it into the arena when needed.
func (d *decoder) string(s *scanner) ([]byte, error) {
	v, _, err := d.stringEsc(s)
	return v, err
}

// stringEsc is string, also reporting whether the string had escapes.
func (d *decoder) stringEsc(s *scanner) (v []byte, escaped bool, err error) {
	raw, escaped, err := s.str()
	if err != nil || !escaped {
		return raw, escaped, err
	}
	start := len(d.arena)
	d.arena, err = AppendUnescaped(d.arena, raw)
	if err != nil {
		return nil, true, s.fail("bad escape in string")
	}
	// Cap the slice so an append by a rewrite cannot write over the
	// strings that follow it in the arena.
	return d.arena[start:len(d.arena):len(d.arena)], true, nil
}

// optBody reads a text body or null. Validating a file only needs to know
// that the body is a well-formed string, so it is not unescaped then: the
// Pair of a validating decoder holds the raw body, and escaped says
// whether it has escapes (false when not validating).
func (d *decoder) optBody(s *scanner, field string) (_ []byte, escaped bool, _ error) {
	if !d.validate || s.peek() != '"' {
		v, err := d.optString(s, field)
		return v, false, err
	}
	raw, escaped, err := s.str()
	if raw == nil && err == nil {
		raw = []byte{}
	}
	return raw, escaped, err
}

// optString reads a string or null (nil).
func (d *decoder) optString(s *scanner, field string) ([]byte, error) {
	switch c := s.peek(); c {
	case '"':
		v, err := d.string(s)
		if v == nil && err == nil {
			v = []byte{} // present but empty, distinct from absent
		}
		return v, err
	case 'n':
		return nil, s.literal()
	default:
		return nil, wantErr(field, "a string", c)
	}
}

func (d *decoder) optNumber(s *scanner, field string) ([]byte, error) {
	switch c := s.peek(); {
	case c == 'n':
		return nil, s.literal()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	default:
		return nil, wantErr(field, "a number", c)
	}
}

func decodeBase64(dst, src []byte, field string) ([]byte, error) {
	n := base64.StdEncoding.DecodedLen(len(src))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	n, err := base64.StdEncoding.Decode(dst, src)
	if err != nil {
		if ce, ok := err.(base64.CorruptInputError); ok {
			return dst[:0], fieldErr(field, "bad base64 at byte %d", int64(ce))
		}
		return dst[:0], fieldErr(field, "bad base64: %v", err)
	}
	return dst[:n], nil
}

// check applies the rules that span fields, after the line was read.
func (d *decoder) check(p *Pair) error {
	if len(p.Req.Method) == 0 {
		return fieldErr("http.req.method", "missing")
	}
	if len(p.Req.URI) == 0 {
		return fieldErr("http.req.uri", "missing (and no http.req.url)")
	}
	if err := splitAbsolute(&p.Req); err != nil {
		return err
	}
	if !d.validate {
		return nil
	}
	if !ValidToken(p.Req.Method) {
		return fieldErr("http.req.method", "%q is not a valid method", p.Req.Method)
	}
	if err := checkURI(p.Req.URI, p.Req.Method); err != nil {
		return err
	}
	if len(p.Req.Host) > 0 && !validHost(p.Req.Host) {
		return fieldErr("http.req.host", "%q is not a host[:port]", p.Req.Host)
	}
	if len(p.TS) > 0 {
		if _, ok := ParseRFC3339(p.TS); !ok {
			return fieldErr("ts", "want RFC 3339 time such as 2026-11-01T10:00:00.123456789Z, got %q", p.TS)
		}
	}
	if len(p.Direction) > 0 && !EqualFold(p.Direction, "in") && !EqualFold(p.Direction, "out") {
		return fieldErr("direction", "want IN or OUT, got %q", p.Direction)
	}
	return checkWebSocket(p)
}

// splitAbsolute turns an absolute-form URI ("https://host:8443/a?b") into
// scheme, host (when the line has none) and origin-form URI.
func splitAbsolute(r *Request) error {
	u := r.URI
	var scheme []byte
	switch {
	case hasPrefixFold(u, "http://"):
		scheme, u = u[:4], u[7:]
	case hasPrefixFold(u, "https://"):
		scheme, u = u[:5], u[8:]
	default:
		return nil
	}
	host, path := u, rootPath
	if i := bytes.IndexAny(u, "/?"); i >= 0 {
		host, path = u[:i], u[i:]
		if path[0] == '?' {
			// "http://h?q" has an empty path; the request target is "/?q",
			// which must not be written into the mapped file: use a static
			// prefix only when the path is empty and there is no query.
			return fieldErr("http.req.uri", "absolute URI %q has a query but no path", r.URI)
		}
	}
	if len(host) == 0 {
		return fieldErr("http.req.uri", "absolute URI %q has no host", r.URI)
	}
	if len(r.Host) == 0 {
		r.Host = host
	}
	if len(r.Scheme) == 0 {
		r.Scheme = schemeOf(scheme)
	}
	r.URI = path
	return nil
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}

func checkURI(uri, method []byte) error {
	if string(uri) == "*" {
		if string(method) != "OPTIONS" {
			return fieldErr("http.req.uri", `"*" is only valid with OPTIONS`)
		}
		return nil
	}
	if uri[0] != '/' {
		return fieldErr("http.req.uri", "want a path starting with / (or an absolute http(s) URL), got %q", uri)
	}
	for i, c := range uri {
		if c <= ' ' || c == 0x7f {
			return fieldErr("http.req.uri", "byte %d of %q is a space or control character", i, uri)
		}
	}
	return nil
}

func validHost(h []byte) bool {
	for _, c := range h {
		if c <= ' ' || c == '/' || c == '?' || c == '#' || c == '@' || c == 0x7f {
			return false
		}
	}
	return true
}

// isPseudo reports an HTTP/2 pseudo-header (":authority"): accepted in a
// file, never sent by a replay.
func isPseudo(b []byte) bool { return len(b) > 1 && b[0] == ':' && ValidToken(b[1:]) }
