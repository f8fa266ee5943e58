package websocket

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"slices"
	"unicode/utf8"
)

// DefaultMaxMessage is the bound on one message's size when ReaderOptions
// gives none: 16 MiB, as a run's bound on an answer's body.
const DefaultMaxMessage = 16 << 20

// maxControl is the largest payload of a control frame (RFC 6455 5.5).
const maxControl = 125

// ReaderOptions says whose frames a Reader reads and how far it reads them.
type ReaderOptions struct {
	// Sender is the side that wrote the frames: a client's must be masked,
	// a server's must not.
	Sender Sender
	// MaxMessage bounds a data message: its frames' payloads together, and
	// its payload once inflated. 0 is DefaultMaxMessage.
	MaxMessage int64
	// Deflate is permessage-deflate as the handshake negotiated it; when
	// not enabled, a frame with RSV1 set is a protocol error.
	Deflate Deflate
	// NoUTF8Check skips the UTF-8 check of text messages and close
	// reasons (a relay that records what went by, whatever it was).
	NoUTF8Check bool
}

// Message is one message read: a data message (text or binary) with its
// fragments joined and inflated, or a control frame (ping, pong, close),
// returned as it comes, between the fragments of a data message if that is
// where the sender put it.
type Message struct {
	Opcode Opcode
	// Payload is unmasked and inflated; it lives in the Reader's buffers,
	// valid until the next ReadMessage.
	Payload []byte
	// Compressed says the message came compressed (RSV1).
	Compressed bool
	// Frames is how many frames carried the message.
	Frames int
	// Code and Reason are a close frame's; Code is CloseNoStatus when the
	// frame had no payload. Reason points into Payload.
	Code   uint16
	Reason []byte
}

// Reader reads one direction of a WebSocket connection, message by
// message. Its buffers are kept across messages: a connection that reads
// messages of similar sizes allocates nothing per message.
type Reader struct {
	br   *bufio.Reader
	opts ReaderOptions
	max  int64
	// err is sticky: a protocol or read error ends the direction.
	err error

	// The data message under way.
	inMessage  bool
	op         Opcode
	compressed bool
	frames     int
	msg        []byte
	// dropping: the message under way went over the bound; its frames are
	// read past, not kept. remain: payload bytes of the current frame
	// still to skip.
	dropping bool
	remain   int64

	ctl [maxControl]byte
	inf *inflater
}

// NewReader reads frames from r. When r is a *bufio.Reader it is used as
// it is, so that bytes already buffered after the handshake's answer are
// read as the first frames.
func NewReader(r io.Reader, opts ReaderOptions) *Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 4096)
	}
	rd := &Reader{br: br, opts: opts, max: opts.MaxMessage}
	if rd.max <= 0 {
		rd.max = DefaultMaxMessage
	}
	if opts.Deflate.Enabled {
		rd.inf = &inflater{takeover: !opts.Deflate.NoContextTakeover(opts.Sender)}
	}
	return rd
}

// header is a frame's header as read.
type header struct {
	fin    bool
	rsv    byte // the three reserved bits, 0x70 of the first byte
	op     Opcode
	masked bool
	key    [4]byte
	length int64
}

// readHeader reads and checks a frame's header.
func (r *Reader) readHeader() (header, error) {
	b, err := r.br.Peek(2)
	if err != nil {
		return header{}, eofOr(err, len(b))
	}
	h := header{fin: b[0]&0x80 != 0, rsv: b[0] & 0x70, op: Opcode(b[0] & 0x0f), masked: b[1]&0x80 != 0}
	n := 2
	switch b[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if h.masked {
		n += 4
	}
	b, err = r.br.Peek(n)
	if err != nil {
		return header{}, eofOr(err, 1)
	}
	switch l := b[1] & 0x7f; l {
	case 126:
		h.length = int64(binary.BigEndian.Uint16(b[2:4]))
	case 127:
		u := binary.BigEndian.Uint64(b[2:10])
		if u>>63 != 0 {
			return header{}, protocolErr("frame length has its most significant bit set")
		}
		h.length = int64(u)
	default:
		h.length = int64(l)
	}
	if h.masked {
		copy(h.key[:], b[n-4:n])
	}
	r.br.Discard(n)
	return h, r.check(h)
}

// eofOr is io.EOF at a frame's boundary (the peer closed between frames)
// and io.ErrUnexpectedEOF inside one.
func eofOr(err error, have int) error {
	if err == io.EOF && have > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// check holds a frame's header to RFC 6455's rules (section 5).
func (r *Reader) check(h header) error {
	if !h.op.valid() {
		return protocolErr("reserved opcode 0x%x", byte(h.op))
	}
	if h.masked != (r.opts.Sender == Client) {
		if h.masked {
			return protocolErr("a server's frame is masked")
		}
		return protocolErr("a client's frame is not masked")
	}
	if err := r.checkReserved(h); err != nil {
		return err
	}
	if h.op.IsControl() {
		return checkControl(h)
	}
	if h.op == OpContinuation && !r.inMessage {
		return protocolErr("continuation frame with no message begun")
	}
	if h.op != OpContinuation && r.inMessage {
		return protocolErr("%s frame while a fragmented message is under way", h.op)
	}
	return nil
}

// checkReserved holds a frame's reserved bits to the extensions
// negotiated: RSV1 is permessage-deflate's, on a data message's first
// frame only; RSV2 and RSV3 no extension here defines.
func (r *Reader) checkReserved(h header) error {
	if h.rsv&0x30 != 0 {
		return protocolErr("reserved bits RSV2/RSV3 set without an extension that defines them")
	}
	if h.rsv&0x40 == 0 {
		return nil
	}
	switch {
	case r.inf == nil:
		return protocolErr("reserved bit RSV1 set without permessage-deflate negotiated")
	case h.op.IsControl():
		return protocolErr("RSV1 set on a %s frame", h.op)
	case h.op == OpContinuation:
		return protocolErr("RSV1 set on a continuation frame")
	}
	return nil
}

// checkControl holds a control frame to its limits: whole (FIN) and 125
// bytes at most.
func checkControl(h header) error {
	if !h.fin {
		return protocolErr("%s frame fragmented", h.op)
	}
	if h.length > maxControl {
		return protocolErr("%s frame of %d bytes, over the 125 a control frame may carry", h.op, h.length)
	}
	return nil
}

// ReadMessage returns the next message. A data message over the bound is a
// *TooLargeError, after which reading may go on (the rest of that message
// is skipped); a protocol error (*ProtocolError) or a read error ends the
// direction and comes back from every later call. io.EOF is the peer
// closing the connection between frames.
func (r *Reader) ReadMessage() (Message, error) {
	if r.err != nil {
		return Message{}, r.err
	}
	m, err := r.next()
	if err != nil {
		if _, tooLarge := err.(*TooLargeError); !tooLarge && err != ErrContextLost {
			r.err = err
		}
	}
	return m, err
}

func (r *Reader) next() (Message, error) {
	if err := r.skip(); err != nil {
		return Message{}, err
	}
	for {
		h, err := r.readHeader()
		if err != nil {
			return Message{}, err
		}
		if h.op.IsControl() {
			return r.control(h)
		}
		if h.op != OpContinuation {
			r.inMessage, r.op, r.compressed, r.frames = true, h.op, h.rsv&0x40 != 0, 0
			r.msg, r.dropping = r.msg[:0], false
		}
		r.frames++
		if r.dropping {
			if err := r.skipFrame(h); err != nil {
				return Message{}, err
			}
			continue
		}
		if h.length > r.max-int64(len(r.msg)) { // not len+length: a length near 2^63 would wrap past the bound
			return Message{}, r.tooLarge(h)
		}
		start := len(r.msg)
		if err := r.readPayload(h.length); err != nil {
			return Message{}, err
		}
		if h.masked {
			Mask(h.key, 0, r.msg[start:])
		}
		if !h.fin {
			continue
		}
		r.inMessage = false
		return r.finish()
	}
}

// growStep is how far the message buffer grows ahead of the bytes that
// came: a frame's declared length is not allocated before its bytes
// arrive, so a peer that declares a large frame and sends nothing holds
// little memory.
const growStep = 64 << 10

// readPayload appends n payload bytes to the message, growing its buffer
// as they come.
func (r *Reader) readPayload(n int64) error {
	for n > 0 {
		step := int(min(n, growStep))
		start := len(r.msg)
		r.msg = slices.Grow(r.msg, step)[:start+step]
		if _, err := io.ReadFull(r.br, r.msg[start:]); err != nil {
			r.msg = r.msg[:start]
			return eofOr(err, 1)
		}
		n -= int64(step)
	}
	return nil
}

// tooLarge drops the message whose frame h would take it over the bound:
// the rest of the frame, and of the message, is skipped as it comes.
func (r *Reader) tooLarge(h header) error {
	size := int64(len(r.msg)) + h.length
	if size < 0 { // wrapped: the frame declared a length near 2^63
		size = math.MaxInt64
	}
	r.remain = h.length
	r.inMessage, r.dropping = !h.fin, !h.fin
	if r.compressed && r.inf != nil && r.inf.takeover {
		r.inf.lost = true
	}
	return &TooLargeError{Opcode: r.op, Size: size, Limit: r.max}
}

// finish returns the data message just completed, inflated and checked.
func (r *Reader) finish() (Message, error) {
	m := Message{Opcode: r.op, Payload: r.msg, Compressed: r.compressed, Frames: r.frames}
	if r.compressed {
		out, err := r.inf.inflate(r.op, r.msg, r.max)
		if err != nil {
			return Message{}, err
		}
		m.Payload = out
	}
	if m.Opcode == OpText && !r.opts.NoUTF8Check && !utf8.Valid(m.Payload) {
		return Message{}, &ProtocolError{Code: CloseInvalidPayload, Reason: "text message is not valid UTF-8"}
	}
	return m, nil
}

// control reads a control frame's payload into its own buffer (a data
// message under way keeps its bytes) and checks a close frame's.
func (r *Reader) control(h header) (Message, error) {
	p := r.ctl[:h.length]
	if _, err := io.ReadFull(r.br, p); err != nil {
		return Message{}, eofOr(err, 1)
	}
	if h.masked {
		Mask(h.key, 0, p)
	}
	m := Message{Opcode: h.op, Payload: p, Frames: 1}
	if h.op != OpClose {
		return m, nil
	}
	switch {
	case len(p) == 0:
		m.Code = CloseNoStatus
	case len(p) == 1:
		return Message{}, protocolErr("close frame with a payload of 1 byte; expected none or a 2-byte code")
	default:
		m.Code = binary.BigEndian.Uint16(p)
		m.Reason = p[2:]
		if !validCloseCode(m.Code) {
			return Message{}, protocolErr("close code %d is not one a close frame may carry", m.Code)
		}
		if !r.opts.NoUTF8Check && !utf8.Valid(m.Reason) {
			return Message{}, &ProtocolError{Code: CloseInvalidPayload, Reason: "close reason is not valid UTF-8"}
		}
	}
	return m, nil
}

// skipFrame reads past a frame of a message over the bound; its last
// frame ends the message.
func (r *Reader) skipFrame(h header) error {
	r.remain = h.length
	if h.fin {
		r.inMessage, r.dropping = false, false
	}
	return r.skip()
}

// skip reads past what is left of a frame whose payload is not kept.
func (r *Reader) skip() error {
	for r.remain > 0 {
		n, err := r.br.Discard(int(min(r.remain, 1<<20)))
		r.remain -= int64(n)
		if err != nil {
			return eofOr(err, 1)
		}
	}
	return nil
}

// FrameSize reads the header at the start of b, for a caller that gets a
// side's bytes in pieces (a packet capture) and hands the Reader whole
// messages: the frame's size (header and payload), whether it ends its
// message (FIN) and its opcode. ok is false while b is too short to hold
// the header. A length RFC 6455 forbids (its top bit set) reads as the
// largest size, which no bound lets through.
func FrameSize(b []byte) (size int64, fin bool, op Opcode, ok bool) {
	if len(b) < 2 {
		return 0, false, 0, false
	}
	n := int64(2)
	var length int64
	switch l := b[1] & 0x7f; l {
	case 126:
		n += 2
		if int64(len(b)) < n {
			return 0, false, 0, false
		}
		length = int64(binary.BigEndian.Uint16(b[2:4]))
	case 127:
		n += 8
		if int64(len(b)) < n {
			return 0, false, 0, false
		}
		u := binary.BigEndian.Uint64(b[2:10])
		if u>>63 != 0 || u > math.MaxInt64-14 {
			return math.MaxInt64, b[0]&0x80 != 0, Opcode(b[0] & 0x0f), true
		}
		length = int64(u)
	default:
		length = int64(l)
	}
	if b[1]&0x80 != 0 {
		n += 4
	}
	return n + length, b[0]&0x80 != 0, Opcode(b[0] & 0x0f), true
}
