package websocket

import (
	"fmt"
	"strings"
)

// The opening handshake (RFC 6455 section 4), for whoever speaks it: a
// replay's client checks the server's answer, a mock answers a client.
// Fields are read through a getter (a field's value by name, any case; ""
// when absent), so that any header representation serves.

// HandshakeError is an opening handshake that did not open a WebSocket:
// the status of an answer other than 101 (an upgrade refused), or what is
// wrong with a 101's fields or a request's.
type HandshakeError struct {
	Status int // the answer's status; 0 for a request
	Reason string
}

func (e *HandshakeError) Error() string {
	if e.Status != 0 && e.Status != 101 {
		return fmt.Sprintf("websocket: upgrade refused: %d%s", e.Status, prefixed(e.Reason))
	}
	return "websocket: handshake: " + e.Reason
}

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// hasToken says whether a comma-separated field value lists token (any
// case).
func hasToken(value, token string) bool {
	for p := range strings.SplitSeq(value, ",") {
		if strings.EqualFold(strings.TrimSpace(p), token) {
			return true
		}
	}
	return false
}

// CheckAnswer checks a server's answer to an upgrade asked with key: a
// 101 whose Upgrade field names websocket, whose Connection field lists
// upgrade, and whose Sec-WebSocket-Accept answers key. Its error is a
// *HandshakeError.
func CheckAnswer(status int, get func(name string) string, key string) error {
	switch {
	case status != 101:
		return &HandshakeError{Status: status}
	case !hasToken(get("Upgrade"), "websocket"):
		return &HandshakeError{Status: status, Reason: fmt.Sprintf("Upgrade %q; want websocket", get("Upgrade"))}
	case !hasToken(get("Connection"), "upgrade"):
		return &HandshakeError{Status: status, Reason: fmt.Sprintf("Connection %q; want upgrade", get("Connection"))}
	case !CheckAccept(key, get("Sec-WebSocket-Accept")):
		return &HandshakeError{Status: status, Reason: fmt.Sprintf("Sec-WebSocket-Accept %q does not answer the key %q", get("Sec-WebSocket-Accept"), key)}
	}
	return nil
}

// CheckRequest checks a client's upgrade request (its method GET aside):
// an Upgrade field naming websocket, a Connection field listing upgrade,
// Sec-WebSocket-Version 13 and a Sec-WebSocket-Key of 16 bytes in base64,
// which it returns. Its error is a *HandshakeError.
func CheckRequest(get func(name string) string) (key string, err error) {
	key = strings.TrimSpace(get("Sec-WebSocket-Key"))
	switch {
	case !hasToken(get("Upgrade"), "websocket"):
		return "", &HandshakeError{Reason: fmt.Sprintf("Upgrade %q; want websocket", get("Upgrade"))}
	case !hasToken(get("Connection"), "upgrade"):
		return "", &HandshakeError{Reason: fmt.Sprintf("Connection %q; want upgrade", get("Connection"))}
	case strings.TrimSpace(get("Sec-WebSocket-Version")) != "13":
		return "", &HandshakeError{Reason: fmt.Sprintf("Sec-WebSocket-Version %q; want 13", get("Sec-WebSocket-Version"))}
	case len(key) != 24 || !strings.HasSuffix(key, "=="):
		return "", &HandshakeError{Reason: fmt.Sprintf("Sec-WebSocket-Key %q; want 16 bytes in base64", key)}
	}
	return key, nil
}

// AppendAnswer appends a server's 101 answer to a client's key to dst:
// its status line, Upgrade, Connection and Sec-WebSocket-Accept, then the
// extra field lines given ("Sec-WebSocket-Protocol: chat"), then the
// empty line.
func AppendAnswer(dst []byte, key string, extra ...string) []byte {
	dst = append(dst, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	dst = append(dst, AcceptKey(key)...)
	dst = append(dst, "\r\n"...)
	for _, line := range extra {
		dst = append(dst, line...)
		dst = append(dst, "\r\n"...)
	}
	return append(dst, "\r\n"...)
}
