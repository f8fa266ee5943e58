package transform

import "bytes"

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// containsFold reports whether list holds name, ignoring ASCII case (header
// names).
func containsFold(list [][]byte, name []byte) bool {
	for _, s := range list {
		if bytes.EqualFold(s, name) {
			return true
		}
	}
	return false
}

// containsExact reports whether list holds name exactly (query names).
func containsExact(list [][]byte, name []byte) bool {
	for _, s := range list {
		if bytes.Equal(s, name) {
			return true
		}
	}
	return false
}

// forEachParam calls f for each parameter of a raw query string, in order:
// its name, its raw value (nil when the parameter has no '='), and whether
// an '&' follows it.
func forEachParam(query []byte, f func(name, value []byte, sep bool)) {
	for {
		part := query
		amp := bytes.IndexByte(query, '&')
		if amp >= 0 {
			part, query = query[:amp], query[amp+1:]
		} else {
			query = nil
		}
		name, value := part, []byte(nil)
		if eq := bytes.IndexByte(part, '='); eq >= 0 {
			name, value = part[:eq], part[eq+1:len(part):len(part)]
		}
		f(name, value, amp >= 0)
		if amp < 0 {
			return
		}
	}
}

// UnescapeQuery appends v, a raw query name or value, with %XX escapes
// and '+' decoded to dst, for recognising a value (the transforms, the
// mock's signatures); v itself is returned, and escaped is false, when it
// has no escapes.
func UnescapeQuery(dst, v []byte) (out []byte, escaped bool) {
	if bytes.IndexByte(v, '%') < 0 && bytes.IndexByte(v, '+') < 0 {
		return v, false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '%' && i+2 < len(v) && isHex(v[i+1]) && isHex(v[i+2]):
			dst = append(dst, unhex(v[i+1])<<4|unhex(v[i+2]))
			i += 2
		case c == '+':
			dst = append(dst, ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst, true
}

// escapeQuery appends v, a new value for the raw query value orig, to
// dst: escaped (':', '+' and ' ') when orig was, else as it is.
func escapeQuery(dst, v, orig []byte) []byte {
	if bytes.IndexByte(orig, '%') < 0 {
		return append(dst, v...)
	}
	for _, c := range v {
		switch c {
		case ':':
			dst = append(dst, "%3A"...)
		case '+':
			dst = append(dst, "%2B"...)
		case ' ':
			dst = append(dst, "%20"...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// rewriteCookies appends the Cookie header value v to *buf with the values
// repl replaces, and returns that; ok is false, and *buf as it was, when
// repl replaced none. Spacing and separators stay as they were.
func rewriteCookies(buf *[]byte, v []byte, repl func(name, value []byte) ([]byte, bool)) ([]byte, bool) {
	start := len(*buf)
	changed := false
	for rest := v; len(rest) > 0; {
		part := rest
		if i := bytes.IndexByte(rest, ';'); i >= 0 {
			part, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		kv := bytes.TrimSuffix(part, []byte(";"))
		if eq := bytes.IndexByte(kv, '='); eq >= 0 {
			value := kv[eq+1:]
			trimmed := bytes.TrimSpace(value)
			if nv, ok := repl(bytes.TrimSpace(kv[:eq]), trimmed); ok {
				lead := len(value) - len(bytes.TrimLeft(value, " "))
				*buf = append(*buf, kv[:eq+1+lead]...)
				*buf = append(*buf, nv...)
				*buf = append(*buf, part[eq+1+lead+len(trimmed):]...)
				changed = true
				continue
			}
		}
		*buf = append(*buf, part...)
	}
	if !changed {
		*buf = (*buf)[:start]
		return nil, false
	}
	return (*buf)[start:], true
}

// rewriteQuery appends uri to *out with the query values repl replaces, and
// returns it; ok is false when repl replaced none. repl gets a parameter's
// name and raw value, and appends the new raw value to *out when it
// replaces it.
func rewriteQuery(out *[]byte, uri []byte, repl func(name, value []byte) bool) ([]byte, bool) {
	q := bytes.IndexByte(uri, '?')
	if q < 0 {
		return nil, false
	}
	*out = append((*out)[:0], uri[:q+1]...)
	changed := false
	forEachParam(uri[q+1:], func(name, value []byte, sep bool) {
		*out = append(*out, name...)
		if value != nil {
			*out = append(*out, '=')
			if repl(name, value) {
				changed = true
			} else {
				*out = append(*out, value...)
			}
		}
		if sep {
			*out = append(*out, '&')
		}
	})
	return *out, changed
}
