package http1

import (
	"bufio"
	"errors"
	"io"
)

// readDiscarding reads the answer as fasthttp's ReadLimitBody does (past
// interim answers, by the same framing, trailers included) but drops its
// body as it arrives, through the read buffer: nothing of it is kept and
// nothing is allocated. head says the request was a HEAD. fasthttp reads
// the head (c.resp.SkipBody is set); the body's framing is read here,
// since fasthttp keeps every body it reads.
func (c *Client) readDiscarding(head bool) error {
	if err := c.resp.ReadLimitBody(c.br, 0); err != nil {
		return err
	}
	if head || noBody(c.resp.Header.StatusCode()) {
		return nil
	}
	return c.discardBody()
}

// discardBody drops the body of the answer whose head c.resp holds, as
// its framing says.
func (c *Client) discardBody() error {
	h := &c.resp.Header
	switch n := h.ContentLength(); {
	case n >= 0:
		if _, err := c.br.Discard(n); err != nil {
			return unexpectedEOF(err)
		}
	case n == -1:
		if err := discardChunked(c.br); err != nil {
			return err
		}
		if err := h.ReadTrailer(c.br); err != nil {
			return unexpectedEOF(err)
		}
	default: // until the connection closes
		n, err := discardAll(c.br)
		if err != nil {
			return err
		}
		h.SetContentLength(n) // as fasthttp does once it has read such a body
	}
	return nil
}

// noBody reports a status whose answer has no body (RFC 9112 §6.3), as
// fasthttp decides it.
func noBody(status int) bool {
	return status >= 100 && status < 200 || status == 204 || status == 304
}

// unexpectedEOF is err, but io.ErrUnexpectedEOF for an io.EOF in the
// middle of a body.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// discardAll drops what br reads until EOF and returns how much.
func discardAll(br *bufio.Reader) (int, error) {
	total := 0
	for {
		n, err := br.Discard(br.Size())
		total += n
		switch {
		case err == io.EOF:
			return total, nil
		case err != nil:
			return total, err
		}
	}
}

// Errors of a chunked body that is not one.
var (
	errChunkSize = errors.New("chunked body: bad chunk size line")
	errChunkEnd  = errors.New("chunked body: no CRLF after a chunk")
)

// maxChunkDigits bounds a chunk size's hex digits, as fasthttp does.
const maxChunkDigits = 15

// discardChunked drops the chunks of a chunked body up to the last
// (zero-size) one, whose trailers are left to read. It accepts what
// fasthttp's parser accepts: a size in hex, optional whitespace, chunk
// extensions after ';' (not after whitespace), no bare LF.
func discardChunked(br *bufio.Reader) error {
	for {
		size, err := chunkSize(br)
		if err != nil {
			return err
		}
		if size == 0 {
			return nil
		}
		if _, err := br.Discard(size); err != nil {
			return unexpectedEOF(err)
		}
		if err := crlf(br, errChunkEnd); err != nil {
			return err
		}
	}
}

// chunkSize reads a chunk size line.
func chunkSize(br *bufio.Reader) (int, error) {
	size, digits := 0, 0
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		d := hexDigit(b)
		if d < 0 {
			br.UnreadByte()
			break
		}
		if digits++; digits > maxChunkDigits {
			return 0, errChunkSize
		}
		size = size<<4 | d
	}
	if digits == 0 {
		return 0, errChunkSize
	}
	inExt, afterSpace := false, false
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		switch {
		case b == '\r':
			br.UnreadByte()
			return size, crlf(br, errChunkSize)
		case b == '\n':
			return 0, errChunkSize
		case inExt:
		case b == ' ' || b == '\t':
			afterSpace = true
		case b == ';' && !afterSpace:
			inExt = true
		default:
			return 0, errChunkSize
		}
	}
}

// crlf reads "\r\n", or fails with bad.
func crlf(br *bufio.Reader, bad error) error {
	for _, want := range [2]byte{'\r', '\n'} {
		b, err := br.ReadByte()
		if err != nil {
			return unexpectedEOF(err)
		}
		if b != want {
			return bad
		}
	}
	return nil
}

func hexDigit(b byte) int {
	switch {
	case '0' <= b && b <= '9':
		return int(b - '0')
	case 'a' <= b && b <= 'f':
		return int(b-'a') + 10
	case 'A' <= b && b <= 'F':
		return int(b-'A') + 10
	}
	return -1
}
