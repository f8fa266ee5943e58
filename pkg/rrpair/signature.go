package rrpair

import (
	"bytes"
	"encoding/base64"
)

// A Speedscale snapshot's reaction file holds what Speedscale's own
// responder serves: each line an answer (http.res) whose request is given
// only as a signature, the keys the responder matches a live request on:
//
//	{"l7protocol":"https","direction":"OUT",
//	 "command":"GET","location":"/planetary/apod","network_address":"api.nasa.gov:443",
//	 "http":{"res":{"statusCode":200,...},
//	         "sig":{"host":"api.nasa.gov","method":"GET","url":"/planetary/apod","instance":1}},
//	 "signature":{"http:host":"YXBpLm5hc2EuZ292","http:method":"R0VU",...},
//	 "mutableSignature":{"http:host":"api.nasa.gov","http:method":"GET",
//	     "http:url":"/planetary/apod","http:queryparams:api_key":"DEMO_KEY","instance":"1"}}
//
// A File opened with Options.Signatures turns such a line into a pair
// whose request is the signature's: the method, host, path, query and
// JSON body, read from mutableSignature, else from signature (the same
// keys, values base64), and what those lack from http.sig, then from
// command, network_address and location. Without Options.Signatures the
// line is skipped and counted as a signature line.

// sigSpans are the places of a line that can give its request as a
// signature, as raw JSON (nil when absent).
type sigSpans struct {
	mutable, b64, http    []byte // objects: mutableSignature, signature, http.sig
	command, location, na []byte // strings, unescaped
}

func (s *sigSpans) present() bool {
	return isObject(s.mutable) || isObject(s.b64) || isObject(s.http) || s.command != nil || s.location != nil
}

// sigParam is one http:queryparams:NAME key of a signature.
type sigParam struct{ name, value []byte }

// sigReq is the request a signature gives, as it is read.
type sigReq struct {
	method, host, url, query, body []byte
	hasQuery, hasBody              bool
	params                         []sigParam
	instance                       int
	hasInstance                    bool
	unread                         []byte
}

// rawSpan reads the value at s and returns it as written.
func rawSpan(s *scanner) ([]byte, error) {
	s.peek()
	start := s.i
	if err := s.skip(0); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

// sigTop reads a top-level key that belongs to a signature. A value of
// another shape (not an object, not a string) is not a signature's: it
// is skipped, as any unknown field is.
func (d *decoder) sigTop(s *scanner, key []byte) (err error) {
	c := s.peek()
	if string(key) == "mutableSignature" || string(key) == "signature" {
		if c != '{' {
			return s.skip(0)
		}
	} else if c != '"' {
		return s.skip(0)
	}
	switch string(key) {
	case "mutableSignature":
		d.sig.mutable, err = rawSpan(s)
	case "signature":
		d.sig.b64, err = rawSpan(s)
	case "command":
		d.sig.command, err = d.optString(s, "command")
	case "location":
		d.sig.location, err = d.optString(s, "location")
	case "network_address":
		d.sig.na, err = d.optString(s, "network_address")
	}
	return err
}

// fromSignature fills p.Req from the line's signature.
func (d *decoder) fromSignature(p *Pair) error {
	r := &d.sreq
	*r = sigReq{params: r.params[:0]}
	var err error
	switch {
	case isObject(d.sig.mutable):
		err = d.readSig(d.sig.mutable, "mutableSignature", false)
	case isObject(d.sig.b64):
		err = d.readSig(d.sig.b64, "signature", true)
	}
	if err != nil {
		return err
	}
	if isObject(d.sig.http) {
		if err := d.readHTTPSig(d.sig.http); err != nil {
			return err
		}
	}
	if r.method == nil {
		r.method = d.sig.command
	}
	if r.host == nil {
		r.host = d.sig.na
	}
	if r.url == nil {
		r.url = d.sig.location
	}
	if err := d.checkSigReq(r); err != nil {
		return err
	}
	p.Req.Method, p.Req.Host, p.Req.URI = r.method, r.host, d.sigURI(r)
	if r.hasBody {
		p.Req.Body = r.body
	}
	p.FromSignature, p.Instance, p.UnreadKey = true, r.instance, r.unread
	if len(p.Direction) == 0 {
		// An answer a responder serves is a dependency's: OUT, when the
		// line does not say (the mock keeps OUT pairs by default).
		p.Direction = dirOut
	}
	return nil
}

// checkSigReq checks the request a signature gives: a method that is a
// token, a path starting with '/', and a valid host when there is one. The
// errors name the signature field the line used.
func (d *decoder) checkSigReq(r *sigReq) error {
	src := "mutableSignature"
	if !isObject(d.sig.mutable) && isObject(d.sig.b64) {
		src = "signature"
	}
	if len(r.method) == 0 {
		return fieldErr(src+".http:method", "missing (and no http.sig.method or command)")
	}
	if !ValidToken(r.method) {
		return fieldErr(src+".http:method", "%q is not a valid method", r.method)
	}
	if len(r.url) == 0 || r.url[0] != '/' {
		return fieldErr(src+".http:url", "want a path starting with / (or http.sig.url, location), got %q", r.url)
	}
	if len(r.host) > 0 && !validHost(r.host) {
		return fieldErr(src+".http:host", "%q is not a host[:port]", r.host)
	}
	return nil
}

var dirOut = []byte("OUT")

func isObject(b []byte) bool { return len(b) > 0 && b[0] == '{' }

// sigURI is the request target: the path, then the raw http:queryparams,
// then each http:queryparams:NAME escaped, in the order written (the mock
// ignores the order of query parameters).
func (d *decoder) sigURI(r *sigReq) []byte {
	if len(r.query) == 0 && len(r.params) == 0 {
		return r.url
	}
	start := len(d.arena)
	d.arena = append(d.arena, r.url...)
	sep := byte('?')
	if bytes.IndexByte(r.url, '?') >= 0 {
		sep = '&'
	}
	if len(r.query) > 0 {
		d.arena = append(append(d.arena, sep), r.query...)
		sep = '&'
	}
	for _, q := range r.params {
		d.arena = append(d.arena, sep)
		d.arena = appendQueryEscaped(d.arena, q.name)
		d.arena = append(d.arena, '=')
		d.arena = appendQueryEscaped(d.arena, q.value)
		sep = '&'
	}
	return d.arena[start:len(d.arena):len(d.arena)]
}

// appendQueryEscaped appends v escaped for a query: letters, digits and
// -._~ as they are, every other byte as %XX.
func appendQueryEscaped(dst, v []byte) []byte {
	const hex = "0123456789ABCDEF"
	for _, c := range v {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}

const queryParamsKey = "http:queryparams"

// readSig reads a signature object (mutableSignature; with b64, signature,
// whose values are base64) into d.sreq.
func (d *decoder) readSig(raw []byte, field string, b64 bool) error {
	s := scanner{b: raw}
	s.i++
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil {
			return fieldErr(field, "%v", err)
		}
		if !ok {
			return nil
		}
		key, err = d.unescaped(key)
		if err != nil {
			return fieldErr(field, "bad escape in a key")
		}
		v, err := d.sigValue(&s, field, key, b64)
		if err != nil {
			return err
		}
		if err := d.sigField(field, key, v); err != nil {
			return err
		}
	}
}

// sigField keeps the value v of a signature's key where the request is
// built from it; the first unknown key is kept to be named.
func (d *decoder) sigField(field string, key, v []byte) error {
	r := &d.sreq
	switch {
	case string(key) == "http:host":
		r.host = v
	case string(key) == "http:method":
		r.method = v
	case string(key) == "http:url":
		r.url = v
	case string(key) == queryParamsKey:
		r.query, r.hasQuery = v, true
	case len(key) > len(queryParamsKey) && string(key[:len(queryParamsKey)+1]) == queryParamsKey+":":
		r.params = append(r.params, sigParam{name: key[len(queryParamsKey)+1:], value: v})
	case string(key) == "http:requestBodyJSON":
		r.body, r.hasBody = v, true
	case string(key) == "instance":
		var ok bool
		if r.instance, ok = atoi(v); !ok {
			return fieldErr(field+".instance", "want a whole number, got %q", v)
		}
		r.hasInstance = true
	default:
		if r.unread == nil {
			r.unread = key
		}
	}
	return nil
}

// sigValue reads the value of a signature key (field.key, for errors): a
// string (base64 decoded with b64) or a number.
func (d *decoder) sigValue(s *scanner, field string, key []byte, b64 bool) ([]byte, error) {
	name := func() string { return field + "." + string(key) }
	switch c := s.peek(); {
	case c == '"':
		v, err := d.string(s)
		if err != nil {
			return nil, fieldErr(name(), "%v", err)
		}
		if v == nil {
			v = []byte{}
		}
		if !b64 {
			return v, nil
		}
		n := base64.StdEncoding.DecodedLen(len(v))
		start := len(d.arena)
		d.arena = append(d.arena, make([]byte, n)...)
		n, err = base64.StdEncoding.Decode(d.arena[start:], v)
		if err != nil {
			d.arena = d.arena[:start]
			return nil, fieldErr(name(), "bad base64: %v", err)
		}
		d.arena = d.arena[:start+n]
		return d.arena[start : start+n : start+n], nil
	case c == '-' || c >= '0' && c <= '9':
		v, err := s.number()
		if err != nil {
			return nil, fieldErr(name(), "%v", err)
		}
		return v, nil
	default:
		return nil, wantErr(name(), "a string", c)
	}
}

// readHTTPSig reads http.sig ({"host","method","url","instance"}) into
// what d.sreq still lacks.
func (d *decoder) readHTTPSig(raw []byte) error {
	r := &d.sreq
	s := scanner{b: raw}
	s.i++
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil {
			return fieldErr("http.sig", "%v", err)
		}
		if !ok {
			return nil
		}
		var dst *[]byte
		switch string(key) {
		case "host":
			dst = &r.host
		case "method":
			dst = &r.method
		case "url":
			dst = &r.url
		case "instance":
			if err := d.httpSigInstance(&s, key); err != nil {
				return err
			}
			continue
		}
		if err := d.httpSigString(&s, key, dst); err != nil {
			return err
		}
	}
}

// httpSigInstance reads http.sig.instance, a number written as a number or
// a string; a value of another type is skipped, and only the first one
// counts.
func (d *decoder) httpSigInstance(s *scanner, key []byte) error {
	r := &d.sreq
	if c := s.peek(); c != '"' && c != '-' && (c < '0' || c > '9') {
		if err := s.skip(0); err != nil {
			return fieldErr("http.sig", "%v", err)
		}
		return nil
	}
	v, err := d.sigValue(s, "http.sig", key, false)
	if err != nil {
		return err
	}
	if !r.hasInstance {
		var ok bool
		if r.instance, ok = atoi(v); !ok {
			return fieldErr("http.sig.instance", "want a whole number, got %q", v)
		}
		r.hasInstance = true
	}
	return nil
}

// httpSigString reads the string value of http.sig's key into *dst, unless
// dst already holds one; the value of an unknown key (dst nil) or one that
// is not a string is skipped.
func (d *decoder) httpSigString(s *scanner, key []byte, dst *[]byte) error {
	if dst == nil || s.peek() != '"' {
		if err := s.skip(0); err != nil {
			return fieldErr("http.sig", "%v", err)
		}
		return nil
	}
	v, err := d.string(s)
	if err != nil {
		return fieldErr("http.sig."+string(key), "%v", err)
	}
	if *dst == nil && len(v) > 0 {
		*dst = v
	}
	return nil
}

// unescaped returns a JSON key unescaped (into the arena when it has an
// escape).
func (d *decoder) unescaped(raw []byte) ([]byte, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, nil
	}
	start := len(d.arena)
	var err error
	d.arena, err = AppendUnescaped(d.arena, raw)
	return d.arena[start:len(d.arena):len(d.arena)], err
}

// atoi reads a whole number of at most 9 digits.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
