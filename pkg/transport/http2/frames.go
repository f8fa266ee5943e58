package http2

import (
	"encoding/binary"
	"io"

	"golang.org/x/net/http2"
)

// quickFrame reads the frames every answer brings that x/net's framer
// would allocate for, a HEADERS frame that holds a whole header block and
// a WINDOW_UPDATE, straight from the read buffer, and acts on them as
// step does; done says it did (err is then what acting on it gave). Any
// other frame, and any of these the framer would refuse or that needs
// what it checks (padding, priority, a header block in CONTINUATION
// frames, a zero increment, a frame past the size the client allows), is
// left to the framer. A read that fails fails as the framer's would have
// (its io.ReadFull of the header, then of the payload).
func (c *Client) quickFrame() (done bool, err error) {
	if !c.cs.settled || c.blockOpen {
		return false, nil
	}
	h, perr := c.br.Peek(9)
	if perr != nil {
		return true, c.readError(readFullError(len(h), perr))
	}
	n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	typ, flags := http2.FrameType(h[3]), http2.Flags(h[4])
	id := binary.BigEndian.Uint32(h[5:9]) & (1<<31 - 1)
	switch {
	case n > ourMaxFrame:
		return false, nil
	case typ == http2.FrameHeaders:
		if id == 0 || !flags.Has(http2.FlagHeadersEndHeaders) || flags&(http2.FlagHeadersPadded|http2.FlagHeadersPriority) != 0 {
			return false, nil
		}
	case typ == http2.FrameWindowUpdate:
		if n != 4 {
			return false, nil
		}
	default:
		return false, nil
	}
	frame, perr := c.br.Peek(9 + n)
	if perr != nil {
		c.br.Discard(9) // the framer had read the header
		return true, c.readError(readFullError(len(frame)-9, perr))
	}
	payload := frame[9:]
	if typ == http2.FrameWindowUpdate {
		inc := binary.BigEndian.Uint32(payload) & (1<<31 - 1)
		if inc == 0 {
			return false, nil // the framer's error for it
		}
		c.br.Discard(9 + n)
		return true, c.onWindowUpdate(id, inc)
	}
	// The payload stays in the read buffer while it is decoded: acting on
	// a header block reads nothing more.
	err = c.onHeaders(id, flags.Has(http2.FlagHeadersEndStream), true, payload)
	c.br.Discard(9 + n)
	return true, err
}

// readFullError is the error io.ReadFull gives when a read fails with err
// after got bytes of what it wants: io.ErrUnexpectedEOF for an end after
// some bytes, err otherwise.
func readFullError(got int, err error) error {
	if err == io.EOF && got > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}
