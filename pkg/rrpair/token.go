package rrpair

// The one set of checks for what may go on the wire in a request line or a
// header: the file's decoder, the flags and the transforms all use these,
// so a value from outside the recording (a flag, a config file, a live
// answer) passes exactly the checks a recorded one does (docs/design.md,
// Invariants 11).

// ValidToken reports whether b is an RFC 9110 token: a method or a header
// name ("Content-Type", "X-Trace-Id"; not "X Trace", not "Name:").
func ValidToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c >= 0x80 || !tokenChars[c] {
			return false
		}
	}
	return true
}

// ValidHeaderName is ValidToken for a string, as flags and config files
// give names.
func ValidHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || !tokenChars[c] {
			return false
		}
	}
	return true
}

// ValidFieldValue reports whether b may be sent as a header value: it holds
// no CR, LF or NUL, which would end the line or the head early (header
// injection).
func ValidFieldValue(b []byte) bool {
	for _, c := range b {
		if c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}

var tokenChars = func() (t [128]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
