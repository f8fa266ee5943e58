package rrpair

// MaxEndpoints is the size of a file's endpoint table: the most frequent
// names keep their own row, the rest share OtherEndpoint.
const MaxEndpoints = 100

// OtherEndpoint names the endpoints beyond the first MaxEndpoints.
const OtherEndpoint = "other"

// AppendEndpointName appends the endpoint name of a request to dst: the
// method, a space, and the path (query dropped) with ID-like segments
// replaced by {id}:
//
//	GET /users/42/orders/o-991?x=1  ->  GET /users/{id}/orders/{id}
//
// ID-like: all digits; a UUID; hex of 8 or more characters with a digit; a
// short prefix, '-' or '_', and a suffix that starts with a digit or holds
// two ("o-123", "usr_8f3a2"); a token of 20 or more letters and digits with
// both (ULIDs, base62 keys).
func AppendEndpointName(dst, method, uri []byte) []byte {
	dst = append(dst, method...)
	dst = append(dst, ' ')
	path := uri
	for i, c := range uri {
		if c == '?' || c == '#' {
			path = uri[:i]
			break
		}
	}
	if len(path) == 0 {
		return append(dst, '/')
	}
	start := 0
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		seg := path[start:i]
		if isIDSegment(seg) {
			dst = append(dst, "{id}"...)
		} else {
			dst = append(dst, seg...)
		}
		if i < len(path) {
			dst = append(dst, '/')
		}
		start = i + 1
	}
	return dst
}

func isIDSegment(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	digits, letters, hex, other := segmentClasses(s)
	switch {
	case digits == len(s):
		return true
	case isUUID(s):
		return true
	case hex == len(s) && len(s) >= 8 && digits > 0:
		return true
	case other == 0 && len(s) >= 20 && digits > 0 && letters > 0:
		return true
	}
	return isPrefixedID(s)
}

// segmentClasses counts a segment's bytes by class: digits, ASCII letters,
// hex digits (digits and a-f in either case), and the rest.
func segmentClasses(s []byte) (digits, letters, hex, other int) {
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
			hex++
		case c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F':
			letters++
			hex++
		case c >= 'g' && c <= 'z' || c >= 'G' && c <= 'Z':
			letters++
		default:
			other++
		}
	}
	return digits, letters, hex, other
}

func isUUID(s []byte) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

// isPrefixedID matches "o-123", "usr_8f3a2", "s-0007a".
func isPrefixedID(s []byte) bool {
	sep := prefixSep(s)
	if sep < 1 || sep > 8 || sep == len(s)-1 {
		return false
	}
	suffix := s[sep+1:]
	digits := 0
	for _, c := range suffix {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		default:
			return false
		}
	}
	return digits >= 2 || (suffix[0] >= '0' && suffix[0] <= '9')
}

// prefixSep is the index of the first '-' or '_' of s when only ASCII
// letters come before it, else -1.
func prefixSep(s []byte) int {
	for i, c := range s {
		if c == '-' || c == '_' {
			return i
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return -1
		}
	}
	return -1
}
