package transform

import (
	"bytes"
	"fmt"
)

// maxDepth bounds the nesting a JSON walk follows; deeper values are not
// visited (the walk still checks the document's shape).
const maxDepth = 32

// jsonWalker visits the scalar values of a JSON document with their key
// path, giving each value's byte span in the document, so that a rewrite
// can replace exactly that span and leave every other byte as it was. It
// does not allocate; a VU keeps one and reuses it.
type jsonWalker struct {
	data  []byte
	depth int
	// keys[i] is the key (raw, between the quotes) at depth i, or nil for
	// an array element, whose index is idx[i].
	keys [maxDepth][]byte
	idx  [maxDepth]int
}

// visitor receives each scalar value: data[start:end] is the value as
// written (a string with its quotes). It returns false to stop the walk.
type visitor interface {
	visit(w *jsonWalker, start, end int) bool
}

// walk visits every scalar of data in document order. It reports false
// when data is not one well-formed JSON value (what was visited before the
// fault stands; callers check before they rewrite) or a visitor stopped.
func (w *jsonWalker) walk(data []byte, v visitor) bool {
	w.data, w.depth = data, 0
	i, ok := w.value(skipSpace(data, 0), v)
	return ok && skipSpace(data, i) == len(data)
}

// value walks the value at data[i:] and returns the index after it.
func (w *jsonWalker) value(i int, v visitor) (int, bool) {
	d := w.data
	if i >= len(d) {
		return i, false
	}
	switch c := d[i]; {
	case c == '{':
		return w.object(i+1, v)
	case c == '[':
		return w.array(i+1, v)
	case c == '"':
		end, ok := stringEnd(d, i)
		if !ok {
			return end, false
		}
		return end, v.visit(w, i, end)
	default:
		end := i
		for end < len(d) && isScalarByte(d[end]) {
			end++
		}
		if end == i || !validScalar(d[i:end]) {
			return end, false
		}
		return end, v.visit(w, i, end)
	}
}

func (w *jsonWalker) object(i int, v visitor) (int, bool) {
	d := w.data
	i = skipSpace(d, i)
	if i < len(d) && d[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return i, false
		}
		end, ok := stringEnd(d, i)
		if !ok {
			return end, false
		}
		key := d[i+1 : end-1]
		i = skipSpace(d, end)
		if i >= len(d) || d[i] != ':' {
			return i, false
		}
		if i, ok = w.child(key, 0, skipSpace(d, i+1), v); !ok {
			return i, false
		}
		i = skipSpace(d, i)
		if i < len(d) && d[i] == '}' {
			return i + 1, true
		}
		if i >= len(d) || d[i] != ',' {
			return i, false
		}
		i = skipSpace(d, i+1)
	}
}

func (w *jsonWalker) array(i int, v visitor) (int, bool) {
	d := w.data
	i = skipSpace(d, i)
	if i < len(d) && d[i] == ']' {
		return i + 1, true
	}
	for n := 0; ; n++ {
		var ok bool
		if i, ok = w.child(nil, n, i, v); !ok {
			return i, false
		}
		i = skipSpace(d, i)
		if i < len(d) && d[i] == ']' {
			return i + 1, true
		}
		if i >= len(d) || d[i] != ',' {
			return i, false
		}
		i = skipSpace(d, i+1)
	}
}

// child walks the value at i, one level down under key (or index n).
func (w *jsonWalker) child(key []byte, n, i int, v visitor) (int, bool) {
	if w.depth == maxDepth {
		return i, false
	}
	w.keys[w.depth], w.idx[w.depth] = key, n
	w.depth++
	end, ok := w.value(i, v)
	w.depth--
	return end, ok
}

// stringEnd returns the index after the closing quote of the string that
// starts at d[i] == '"'.
func stringEnd(d []byte, i int) (int, bool) {
	for j := i + 1; j < len(d); j++ {
		switch c := d[j]; {
		case c == '\\':
			j++
			if j >= len(d) {
				return j, false
			}
			switch d[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(d) || !isHex(d[j+1]) || !isHex(d[j+2]) || !isHex(d[j+3]) || !isHex(d[j+4]) {
					return j, false
				}
				j += 4
			default:
				return j, false
			}
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return j, false
		}
	}
	return len(d), false
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t') {
		i++
	}
	return i
}

func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

func validScalar(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	}
	return jsonNumber(b)
}

// jsonNumber reports whether b is a JSON number.
func jsonNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	i = skipDigits(b, i)
	if i == start || b[start] == '0' && i-start > 1 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		fs := i + 1
		if i = skipDigits(b, fs); i == fs {
			return false
		}
	}
	if i = jsonExponent(b, i); i < 0 {
		return false
	}
	return i == len(b)
}

// skipDigits is the index past the decimal digits at b[i:].
func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// jsonExponent is the index past a number's optional exponent at b[i:]
// (e or E, a sign, digits), or -1 when it has no digits.
func jsonExponent(b []byte, i int) int {
	if i >= len(b) || (b[i] != 'e' && b[i] != 'E') {
		return i
	}
	i++
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	es := i
	if i = skipDigits(b, es); i == es {
		return -1
	}
	return i
}

// jsonPath is a dotted path into a JSON document: "order.id", "items.*.ts"
// ("*" is any key or array element; a number also matches that array
// index).
type jsonPath []pathSegment

// pathSegment is one segment of a jsonPath, parsed once.
type pathSegment struct {
	key []byte // matches an object key
	idx int    // the array index it matches; -1: none (not a number)
	any bool   // "*"
}

// parseJSONPaths parses a transform's json: list; its error shows a path
// such as example.
func parseJSONPaths(paths []string, example string) ([]jsonPath, error) {
	var out []jsonPath
	for _, p := range paths {
		jp, ok := parseJSONPath(p)
		if !ok {
			return nil, fmt.Errorf("json: %q is not a path such as %s", p, example)
		}
		out = append(out, jp)
	}
	return out, nil
}

func parseJSONPath(s string) (jsonPath, bool) {
	if s == "" {
		return nil, false
	}
	var p jsonPath
	for _, seg := range bytes.Split([]byte(s), []byte(".")) {
		if len(seg) == 0 {
			return nil, false
		}
		idx, ok := atoi(seg)
		if !ok {
			idx = -1
		}
		p = append(p, pathSegment{key: seg, idx: idx, any: len(seg) == 1 && seg[0] == '*'})
	}
	return p, true
}

// at reports whether the walker stands at p.
func (p jsonPath) at(w *jsonWalker) bool {
	if w.depth != len(p) {
		return false
	}
	for i := range p {
		seg := &p[i]
		if seg.any {
			continue
		}
		if k := w.keys[i]; k != nil {
			if !bytes.Equal(k, seg.key) {
				return false
			}
		} else if seg.idx != w.idx[i] {
			return false
		}
	}
	return true
}

// atAny reports whether the walker stands at one of paths.
func atAny(paths []jsonPath, w *jsonWalker) bool {
	for _, p := range paths {
		if p.at(w) {
			return true
		}
	}
	return false
}

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

// isJSON reports whether a body is worth walking as JSON: it starts (after
// space) with an object or an array.
func isJSON(body []byte) bool {
	i := skipSpace(body, 0)
	return i < len(body) && (body[i] == '{' || body[i] == '[')
}

// span is a replacement of data[start:end] by repl.
type span struct {
	start, end int
	repl       []byte
}

// splice appends data to dst with the spans (in order, not overlapping)
// replaced.
func splice(dst, data []byte, spans []span) []byte {
	at := 0
	for _, s := range spans {
		dst = append(dst, data[at:s.start]...)
		dst = append(dst, s.repl...)
		at = s.end
	}
	return append(dst, data[at:]...)
}

// pathFinder collects the spans of the values at any of its paths.
type pathFinder struct {
	paths []jsonPath
	found [][2]int
}

func (f *pathFinder) visit(w *jsonWalker, start, end int) bool {
	if atAny(f.paths, w) {
		f.found = append(f.found, [2]int{start, end})
	}
	return true
}

// find returns the spans of the values at f's paths in data (nil when data
// is not JSON). The result is valid until the next find.
func (f *pathFinder) find(w *jsonWalker, data []byte) [][2]int {
	f.found = f.found[:0]
	if !isJSON(data) || !w.walk(data, f) {
		return nil
	}
	return f.found
}
