package h2answer

import "strconv"

// The answers' header blocks are encoded without the dynamic table and
// without Huffman coding: every field a literal not indexed, its name and
// value copied as they are. It costs a few bytes on the wire and no
// state shared between streams, so a block can be encoded early (the
// trailers of an answer that waits for flow control) and in any order.

// statusIndex is the HPACK static table's index of ":status: CODE".
func statusIndex(code int) byte {
	switch code {
	case 200:
		return 8
	case 204:
		return 9
	case 206:
		return 10
	case 304:
		return 11
	case 400:
		return 12
	case 404:
		return 13
	case 500:
		return 14
	}
	return 0
}

// appendInt appends v in HPACK's integer form with an n-bit prefix whose
// high bits are first's.
func appendInt(b []byte, first byte, n uint, v uint64) []byte {
	max := uint64(1)<<n - 1
	if v < max {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(max))
	v -= max
	for v >= 128 {
		b = append(b, byte(v&0x7f)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendStatus appends the ":status" field of code.
func appendStatus(b []byte, code int) []byte {
	if i := statusIndex(code); i != 0 {
		return append(b, 0x80|i) // indexed
	}
	var num [20]byte
	v := strconv.AppendInt(num[:0], int64(code), 10)
	b = append(b, 0x08) // literal not indexed, the name ":status" (static 8)
	b = appendInt(b, 0, 7, uint64(len(v)))
	return append(b, v...)
}

// appendField appends name: value, the name in lower case as HTTP/2
// wants it.
func appendField(b []byte, name, value []byte) []byte {
	b = append(b, 0x00) // literal not indexed, new name
	b = appendInt(b, 0, 7, uint64(len(name)))
	for _, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	b = appendInt(b, 0, 7, uint64(len(value)))
	return append(b, value...)
}
