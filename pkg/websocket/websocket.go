// Package websocket is a small RFC 6455 framer: frame headers and payloads
// read with bounded sizes, masking, fragmented messages reassembled,
// control frames (ping, pong, close with its code and reason) returned as
// they come between the fragments of a message, the protocol errors RFC
// 6455 names, the opening handshake's key and accept, and permessage-deflate
// (RFC 7692): the negotiated extension parsed and compressed messages
// inflated, with the compression context kept across messages when the
// peer keeps it.
//
// Why a framer of our own rather than gorilla/websocket or coder/websocket:
// the recorders relay a session's frames byte for byte as they came, and
// parse a copy of them to record the messages; a library owns the
// connection and writes frames of its own (its fragmentation, its masks,
// its compression), so what the server or the client received would not be
// what the other side sent. The replay's hot path reads and writes messages
// in buffers a connection reuses, with no allocation per message, which a
// library's message API does not give. gorilla/websocket serves in the
// tests only, as an independent peer (a real client and a real server), to
// prove this framer speaks with one.
//
// The package imports nothing of the project but the file format.
package websocket

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
)

// Opcode is a frame's opcode (RFC 6455 section 5.2).
type Opcode byte

// The opcodes RFC 6455 defines; the others are reserved, a protocol error.
const (
	OpContinuation Opcode = 0x0
	OpText         Opcode = 0x1
	OpBinary       Opcode = 0x2
	OpClose        Opcode = 0x8
	OpPing         Opcode = 0x9
	OpPong         Opcode = 0xA
)

// IsControl says whether the opcode is a control frame's (close, ping,
// pong, and the reserved 0xB-0xF).
func (o Opcode) IsControl() bool { return o&0x8 != 0 }

// valid says whether RFC 6455 defines the opcode.
func (o Opcode) valid() bool {
	switch o {
	case OpContinuation, OpText, OpBinary, OpClose, OpPing, OpPong:
		return true
	}
	return false
}

// String is the opcode's name as the traffic file writes it ("text",
// "binary", "close", "ping", "pong", "continuation"), or its number.
func (o Opcode) String() string {
	switch o {
	case OpContinuation:
		return "continuation"
	case OpText:
		return "text"
	case OpBinary:
		return "binary"
	case OpClose:
		return "close"
	case OpPing:
		return "ping"
	case OpPong:
		return "pong"
	}
	return "opcode " + strconv.Itoa(int(o))
}

// Sender says which side of the connection wrote the frames a Reader reads
// or a Writer writes: a client masks every frame, a server none (RFC 6455
// section 5.1), and permessage-deflate's takeover parameters are per side.
type Sender uint8

const (
	// Client frames are masked.
	Client Sender = iota
	// Server frames are not.
	Server
)

// String is "client" or "server", the traffic file's words for a side.
func (s Sender) String() string { return s.Side().String() }

// Close codes of RFC 6455 section 7.4.1 the framer uses.
const (
	CloseNormal          uint16 = 1000
	CloseGoingAway       uint16 = 1001
	CloseProtocolError   uint16 = 1002
	CloseUnsupported     uint16 = 1003
	CloseNoStatus        uint16 = 1005 // never on the wire: a close frame without a code
	CloseAbnormal        uint16 = 1006 // never on the wire: the connection ended without a close frame
	CloseInvalidPayload  uint16 = 1007
	ClosePolicyViolation uint16 = 1008
	CloseTooBig          uint16 = 1009
	CloseInternalError   uint16 = 1011
)

// validCloseCode says whether a close frame may carry the code (RFC 6455
// section 7.4: 1004, 1005, 1006 and 1015 are reserved, below 1000 unused,
// 1016-2999 for future RFCs, 3000-4999 for libraries and applications).
func validCloseCode(c uint16) bool {
	switch {
	case c >= 1000 && c <= 1003, c >= 1007 && c <= 1014:
		return true
	case c >= 3000 && c <= 4999:
		return true
	}
	return false
}

// ErrProtocol matches (errors.Is) every *ProtocolError.
var ErrProtocol = errors.New("websocket: protocol error")

// ErrTooLarge matches (errors.Is) every *TooLargeError.
var ErrTooLarge = errors.New("websocket: message too large")

// ProtocolError is a frame RFC 6455 forbids: reserved bits without the
// extension that gives them a meaning, a reserved opcode, a control frame
// over 125 bytes or fragmented, a continuation with no message begun, a
// frame masked or not against its sender's rule, a bad close payload, text
// that is not UTF-8. The connection cannot go on after one: the Reader
// returns it again on every later call.
type ProtocolError struct {
	// Code is the close code to answer with: 1002, or 1007 for bad UTF-8
	// or a compressed payload that does not inflate.
	Code   uint16
	Reason string
}

func (e *ProtocolError) Error() string { return "websocket: protocol error: " + e.Reason }

// Is makes errors.Is(err, ErrProtocol) true.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

func protocolErr(format string, args ...any) *ProtocolError {
	return &ProtocolError{Code: CloseProtocolError, Reason: fmt.Sprintf(format, args...)}
}

// TooLargeError is a message (its frames together, or its payload once
// inflated) over the Reader's bound. The Reader reads no more of it into
// memory: the next ReadMessage skips the rest of the message and goes on
// with the next one, so a caller that only counts the oversize message can
// keep reading.
type TooLargeError struct {
	Opcode Opcode
	// Size is how large the message was known to be when it went over:
	// at least Limit+1.
	Size, Limit int64
	// Inflated says the bound was passed by the inflated payload.
	Inflated bool
}

func (e *TooLargeError) Error() string {
	what := "message"
	if e.Inflated {
		what = "inflated message"
	}
	return fmt.Sprintf("websocket: %s %s of at least %d bytes is over the bound of %d bytes", e.Opcode, what, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// acceptGUID is RFC 6455's fixed GUID of the opening handshake.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// AcceptKey is the Sec-WebSocket-Accept a server answers to the client's
// Sec-WebSocket-Key: base64(SHA-1(key + GUID)) (RFC 6455 section 4.2.2).
func AcceptKey(key string) string {
	h := sha1.New()
	h.Write([]byte(key))
	h.Write([]byte(acceptGUID))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// CheckAccept says whether a server's Sec-WebSocket-Accept answers the
// client's key.
func CheckAccept(key, accept string) bool { return accept == AcceptKey(key) }

// NewKey is a fresh Sec-WebSocket-Key: 16 random bytes in base64.
func NewKey() string {
	var b [16]byte
	randomBytes(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// Mask XORs b with the masking key, starting at position pos of the
// payload (the key's byte pos%4), and returns the position after b, so a
// payload masked in pieces continues where the last piece ended. Masking
// and unmasking are the same operation.
func Mask(key [4]byte, pos int, b []byte) int {
	// Eight bytes at a time once aligned on the key.
	i := 0
	for ; i < len(b) && (pos+i)&3 != 0; i++ {
		b[i] ^= key[(pos+i)&3]
	}
	if len(b)-i >= 8 {
		k := uint64(key[0]) | uint64(key[1])<<8 | uint64(key[2])<<16 | uint64(key[3])<<24
		k |= k << 32
		for ; len(b)-i >= 8; i += 8 {
			v := uint64(b[i]) | uint64(b[i+1])<<8 | uint64(b[i+2])<<16 | uint64(b[i+3])<<24 |
				uint64(b[i+4])<<32 | uint64(b[i+5])<<40 | uint64(b[i+6])<<48 | uint64(b[i+7])<<56
			v ^= k
			b[i], b[i+1], b[i+2], b[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			b[i+4], b[i+5], b[i+6], b[i+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
		}
	}
	for ; i < len(b); i++ {
		b[i] ^= key[(pos+i)&3]
	}
	return pos + len(b)
}
