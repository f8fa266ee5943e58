package mock

import (
	"bytes"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Rotating values: what a service makes anew for every call (request
// ids, idempotency keys, timestamps, signed tokens, nonces), so that a
// replayed call never repeats the recorded one byte for byte. A place
// where the recording holds one is ignored by the second matching pass.

// rotating reports whether v looks like a value made anew for each call:
// a UUID, a ULID, an RFC 3339 time, an epoch time in seconds or
// milliseconds (2001 to 2033), a JWT, or a nonce (16 or more letters and
// digits, both present, from a token alphabet).
func rotating(v []byte) bool {
	switch {
	case len(v) == 36 && isUUID(v):
		return true
	case len(v) == 26 && isULID(v):
		return true
	case len(v) >= 20 && (v[4] == '-'):
		_, ok := rrpair.ParseRFC3339(v)
		return ok
	case (len(v) == 10 || len(v) == 13) && v[0] == '1' && allDigits(v):
		return true
	case isJWT(v):
		return true
	}
	return isNonce(v)
}

func isUUID(v []byte) bool {
	for i, c := range v {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

// isULID: 26 characters of Crockford's base32, the first 0 to 7.
func isULID(v []byte) bool {
	if v[0] < '0' || v[0] > '7' {
		return false
	}
	digits := false
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case isCrockfordLetter(c):
		default:
			return false
		}
	}
	return digits
}

// isCrockfordLetter reports whether c is a letter of Crockford's base 32,
// in either case: any but I, L, O and U.
func isCrockfordLetter(c byte) bool {
	switch {
	case c >= 'A' && c <= 'Z':
		return c != 'I' && c != 'L' && c != 'O' && c != 'U'
	case c >= 'a' && c <= 'z':
		return c != 'i' && c != 'l' && c != 'o' && c != 'u'
	}
	return false
}

// isJWT: three base64url segments, the header a JSON object ("eyJ").
func isJWT(v []byte) bool {
	if len(v) < 20 || !bytes.HasPrefix(v, []byte("eyJ")) || bytes.Count(v, []byte(".")) != 2 {
		return false
	}
	for _, c := range v {
		if !isB64URL(c) && c != '.' {
			return false
		}
	}
	return true
}

// isNonce: 16 or more characters of a token alphabet (letters, digits,
// - _ + / =), letters and digits both present, no word-like run of 12
// lower-case letters.
func isNonce(v []byte) bool {
	if len(v) < 16 || len(v) > 512 {
		return false
	}
	letters, digits, ok := nonceClasses(v)
	return ok && letters && digits
}

// nonceClasses tells whether v has letters and digits; ok is false on a
// byte outside the token alphabet or on a word-like run of 12 lower-case
// letters.
func nonceClasses(v []byte) (letters, digits, ok bool) {
	run := 0
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digits, run = true, 0
		case c >= 'a' && c <= 'z':
			letters = true
			if run++; run >= 12 {
				return false, false, false
			}
		case c >= 'A' && c <= 'Z':
			letters, run = true, 0
		case c == '-' || c == '_' || c == '+' || c == '/' || c == '=':
			run = 0
		default:
			return false, false, false
		}
	}
	return letters, digits, true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isB64URL(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_' || c == '='
}

func allDigits(v []byte) bool {
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(v) > 0
}
