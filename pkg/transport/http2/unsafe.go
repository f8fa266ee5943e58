package http2

import "unsafe"

// unsafeString is b as a string without a copy: b must not change while
// the string is used.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// unsafeBytes is s as bytes without a copy, never to be written.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
