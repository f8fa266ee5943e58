package websocket

import (
	crand "crypto/rand"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"unicode/utf8"
)

// randomBytes fills b from the system's random source.
func randomBytes(b []byte) {
	if _, err := crand.Read(b); err != nil {
		panic("websocket: no random source: " + err.Error())
	}
}

// AppendFrame appends one frame to dst: its header (FIN, RSV1 when rsv1,
// the opcode, the length in the fewest bytes, the mask key when mask is not
// nil) and the payload, masked with *mask when given. payload is not
// changed.
func AppendFrame(dst []byte, fin, rsv1 bool, op Opcode, mask *[4]byte, payload []byte) []byte {
	b0 := byte(op) & 0x0f
	if fin {
		b0 |= 0x80
	}
	if rsv1 {
		b0 |= 0x40
	}
	var b1 byte
	if mask != nil {
		b1 = 0x80
	}
	n := len(payload)
	switch {
	case n < 126:
		dst = append(dst, b0, b1|byte(n))
	case n <= 0xffff:
		dst = append(dst, b0, b1|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, b0, b1|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	if mask == nil {
		return append(dst, payload...)
	}
	dst = append(dst, mask[:]...)
	start := len(dst)
	dst = append(dst, payload...)
	Mask(*mask, 0, dst[start:])
	return dst
}

// ClosePayload appends a close frame's payload to dst: the code, big
// endian, then the reason. A code of CloseNoStatus appends nothing (a close
// frame without a code).
func ClosePayload(dst []byte, code uint16, reason string) []byte {
	if code == CloseNoStatus {
		return dst
	}
	dst = binary.BigEndian.AppendUint16(dst, code)
	return append(dst, reason...)
}

// Writer writes one side's frames to a connection: a client's masked with
// a fresh key each frame, a server's not. Its buffer is kept across
// messages. A Writer is not safe for use by several goroutines at once.
type Writer struct {
	w      io.Writer
	sender Sender
	rng    *rand.ChaCha8
	buf    []byte
}

// NewWriter writes frames of the sender to w.
func NewWriter(w io.Writer, sender Sender) *Writer {
	wr := &Writer{w: w, sender: sender}
	if sender == Client {
		// Mask keys must be unpredictable to the network (RFC 6455 10.3):
		// a ChaCha8 stream seeded from the system's random source, drawn
		// without a system call a frame.
		var seed [32]byte
		randomBytes(seed[:])
		wr.rng = rand.NewChaCha8(seed)
	}
	return wr
}

// WriteFrame writes one frame.
func (w *Writer) WriteFrame(fin bool, op Opcode, payload []byte) error {
	var mask *[4]byte
	var key [4]byte
	if w.rng != nil {
		binary.LittleEndian.PutUint32(key[:], uint32(w.rng.Uint64()))
		mask = &key
	}
	w.buf = AppendFrame(w.buf[:0], fin, false, op, mask, payload)
	_, err := w.w.Write(w.buf)
	return err
}

// WriteMessage writes a message in one frame.
func (w *Writer) WriteMessage(op Opcode, payload []byte) error {
	return w.WriteFrame(true, op, payload)
}

// WriteClose writes a close frame with the code and reason (CloseNoStatus:
// a close frame without a payload). A code no close frame may carry (1005,
// 1006, 1015, a reserved one: a recording may hold one, as a HAR writes
// what a browser saw) is sent as a close without a payload, which a peer
// accepts, where the code would have it fail the connection. The reason is
// cut to the 123 bytes a control frame leaves it, at a character's start,
// so that it stays UTF-8.
func (w *Writer) WriteClose(code uint16, reason string) error {
	if !validCloseCode(code) {
		code, reason = CloseNoStatus, ""
	}
	if len(reason) > maxControl-2 {
		n := maxControl - 2
		for n > 0 && !utf8.RuneStart(reason[n]) {
			n--
		}
		reason = reason[:n]
	}
	var p [maxControl]byte
	return w.WriteFrame(true, OpClose, ClosePayload(p[:0], code, reason))
}
