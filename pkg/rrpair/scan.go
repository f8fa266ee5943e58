package rrpair

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

// scanner walks one JSON value in place. It never copies: strings come back
// as slices of the input (raw, still escaped), so a field without escapes
// can be used straight from the mapped file. It is a purpose-built reader for
// RRPair lines, not a general JSON library: it validates full JSON syntax but
// only materializes what the decoder asks for.
type scanner struct {
	b []byte
	i int
	// trusted skips the checks of string contents (escapes, control
	// characters) for a line that was validated before: strings are then
	// found with SIMD byte searches.
	trusted bool
}

// maxDepth bounds nesting in skipped values, so hostile input cannot
// exhaust the stack.
const maxDepth = 128

// syntaxError is a JSON syntax error at a byte offset of the line.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

func (s *scanner) fail(msg string) error { return &syntaxError{off: s.i, msg: msg} }

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// kind names the JSON type starting with c, for "got X" in type errors.
func kind(c byte) string {
	switch c {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case 0:
		return "nothing"
	}
	return "a number"
}

// nextKey reads the next key of an object and the colon after it. first is
// true for the first call after the opening brace. ok is false when the object
// ended (its '}' consumed).
func (s *scanner) nextKey(first bool) (key []byte, ok bool, err error) {
	c := s.peek()
	if c == '}' {
		s.i++
		return nil, false, nil
	}
	if !first {
		if c != ',' {
			return nil, false, s.fail("expected ',' or '}' in object")
		}
		s.i++
		c = s.peek()
	}
	if c != '"' {
		return nil, false, s.fail("expected a string key in object")
	}
	key, _, err = s.str()
	if err != nil {
		return nil, false, err
	}
	if s.peek() != ':' {
		return nil, false, s.fail("expected ':' after object key")
	}
	s.i++
	return key, true, nil
}

// nextElem reports whether another array element follows, consuming the
// comma before it or the closing ']'.
func (s *scanner) nextElem(first bool) (bool, error) {
	c := s.peek()
	if c == ']' {
		s.i++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, s.fail("expected ',' or ']' in array")
		}
		s.i++
		s.ws()
	}
	return true, nil
}

// str reads a string at the current position (after spaces) and returns its
// raw content between the quotes. escaped reports that it contains
// backslash escapes, so unescape must run before the bytes are used.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	if s.peek() != '"' {
		return nil, false, s.fail("expected a string")
	}
	s.i++
	start := s.i
	b := s.b
	if s.trusted {
		return s.trustedStr()
	}
	for i := start; i < len(b); i++ {
		c := b[i]
		if !strSpecial[c] {
			continue
		}
		switch {
		case c == '"':
			s.i = i + 1
			return b[start:i], escaped, nil
		case c == '\\':
			escaped = true
			i++
			if i >= len(b) {
				s.i = i
				return nil, false, s.fail("unterminated string")
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex4(b[i+1:i+5]) {
					s.i = i
					return nil, false, s.fail(`bad \u escape in string`)
				}
				i += 4
			default:
				s.i = i
				return nil, false, s.fail("bad escape in string")
			}
		case c < 0x20:
			s.i = i
			return nil, false, s.fail("control character in string")
		}
	}
	s.i = len(b)
	return nil, false, s.fail("unterminated string")
}

// trustedStr finds the end of a string already known to be well formed,
// s.i just after its opening quote, with SIMD searches: one per escaped
// quote inside it, and one for a backslash.
func (s *scanner) trustedStr() (raw []byte, escaped bool, err error) {
	b, start := s.b, s.i
	for i := start; ; {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			s.i = len(b)
			return nil, false, s.fail("unterminated string")
		}
		q += i
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for j := q - 1; j >= start && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			s.i = q + 1
			raw = b[start:q]
			return raw, bytes.IndexByte(raw, '\\') >= 0, nil
		}
		i = q + 1
	}
}

// strSpecial marks the bytes that end the fast path of str: the quote, the
// backslash and control characters.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// number reads a JSON number and returns its raw text.
func (s *scanner) number() ([]byte, error) {
	s.ws()
	b, start, i := s.b, s.i, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		s.i = i
		return nil, s.fail("invalid value")
	}
	if i = fracExp(b, i); i < 0 {
		return nil, s.fail("invalid number")
	}
	s.i = i
	return b[start:i], nil
}

// fracExp skips a number's optional fraction and exponent from b[i:] and
// returns the index past them, or -1 when one has no digits.
func fracExp(b []byte, i int) int {
	if i < len(b) && b[i] == '.' {
		if i = digits(b, i+1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		return digits(b, i)
	}
	return i
}

// digits skips one or more digits from b[i], returning where they end, or
// -1 when there is none.
func digits(b []byte, i int) int {
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// literal consumes true, false or null.
func (s *scanner) literal() error {
	s.ws()
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return nil
		}
	}
	return s.fail("invalid value")
}

// skip consumes one value of any type.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return s.fail("nesting too deep")
	}
	switch s.peek() {
	case '"':
		_, _, err := s.str()
		return err
	case '{':
		s.i++
		for first := true; ; first = false {
			_, ok, err := s.nextKey(first)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case '[':
		s.i++
		for first := true; ; first = false {
			more, err := s.nextElem(first)
			if err != nil || !more {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case 't', 'f', 'n':
		return s.literal()
	case 0:
		return s.fail("unexpected end of line")
	}
	_, err := s.number()
	return err
}

// end checks that nothing but spaces follows the value.
func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return s.fail("unexpected data after the object")
	}
	return nil
}

var errBadEscape = errors.New("bad escape")

// AppendUnescaped appends the decoded form of raw, the bytes between the
// quotes of a JSON string, to dst; other bytes are kept as they are (a
// byte that is not UTF-8 stays that byte). A lone surrogate becomes
// U+FFFD. An escape that is not JSON's is an error.
func AppendUnescaped(dst, raw []byte) ([]byte, error) {
	for i := 0; i < len(raw); i++ {
		// Copy the run up to the next backslash in one go.
		next := bytes.IndexByte(raw[i:], '\\')
		if next < 0 {
			return append(dst, raw[i:]...), nil
		}
		dst = append(dst, raw[i:i+next]...)
		i += next + 1
		if i >= len(raw) {
			return dst, errBadEscape
		}
		switch raw[i] {
		case '"', '\\', '/':
			dst = append(dst, raw[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			var ok bool
			if dst, i, ok = appendUnicodeEscape(dst, raw, i); !ok {
				return dst, errBadEscape
			}
		default:
			return dst, errBadEscape
		}
	}
	return dst, nil
}

// appendUnicodeEscape appends the rune of the \uXXXX escape whose 'u' is at
// raw[i], joining a surrogate pair written as two escapes; a lone surrogate
// becomes U+FFFD. It returns the index of the escape's last byte; ok is
// false when four hex digits do not follow.
func appendUnicodeEscape(dst, raw []byte, i int) (_ []byte, _ int, ok bool) {
	if i+4 >= len(raw) || !isHex4(raw[i+1:i+5]) {
		return dst, i, false
	}
	r := rune(hex4(raw[i+1 : i+5]))
	i += 4
	if r >= 0xD800 && r < 0xDC00 { // high surrogate: a low one should follow
		if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' && isHex4(raw[i+3:i+7]) {
			lo := rune(hex4(raw[i+3 : i+7]))
			if lo >= 0xDC00 && lo < 0xE000 {
				r = (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000
				i += 6
			} else {
				r = utf8.RuneError
			}
		} else {
			r = utf8.RuneError
		}
	} else if r >= 0xDC00 && r < 0xE000 {
		r = utf8.RuneError
	}
	return utf8.AppendRune(dst, r), i, true
}

func hex4(b []byte) int {
	return hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3])
}
