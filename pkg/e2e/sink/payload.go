package sink

import "bytes"

// payloadID is the ID in a payload: the payload itself, or the "id" of a
// JSON event.
func payloadID(b []byte) []byte {
	if len(b) > 0 && b[0] == '{' {
		return jsonID(b)
	}
	return b
}

// jsonID finds the top-level "id" string of a JSON object, without
// decoding the rest: the first `"id"` key at depth 1.
func jsonID(b []byte) []byte {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(b, i)
			if end >= len(b) {
				return nil
			}
			key := b[i+1 : end]
			i = end
			j := skipSpace(b, end+1)
			if depth != 1 || string(key) != "id" || j >= len(b) || b[j] != ':' {
				continue // a value, or another key
			}
			return idValue(b, j+1)
		}
	}
	return nil
}

// stringEnd is the index of the quote closing the string whose opening
// quote is at b[i], len(b) or past it when it is not closed.
func stringEnd(b []byte, i int) int {
	end := i + 1
	for end < len(b) && b[end] != '"' {
		if b[end] == '\\' {
			end++
		}
		end++
	}
	return end
}

// idValue is the string value at b[j:] (after spaces), unescaped no
// further; nil when it is not a string.
func idValue(b []byte, j int) []byte {
	j = skipSpace(b, j)
	if j >= len(b) || b[j] != '"' {
		return nil
	}
	k := bytes.IndexByte(b[j+1:], '"')
	if k < 0 {
		return nil
	}
	return b[j+1 : j+1+k]
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
