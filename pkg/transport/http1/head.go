package http1

import (
	"bufio"
	"bytes"
	"errors"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// This file is the client's own scan of an answer's head, before
// fasthttp parses it: where the head ends (fasthttp would wait for ever
// on a bare LF one), whether its status line is one curl takes, whether
// its framing is one a browser or curl would frame the same way, and the
// leniencies docs/strict.md keeps (RFC 9112 is the rule; curl 8's behaviour
// the reference where the RFC leaves room).

// head is what the scan of an answer's head found.
type head struct {
	size    int // bytes, the blank line included
	status  int
	interim bool // 1xx but 101: dropped, the final answer follows
	// closes: the connection closes after the answer (Connection: close,
	// a field name with a space inside, both Content-Length and chunked).
	closes bool
	length int64 // Content-Length, -1 without one
	// sameLengths: Content-Length repeated, or a list, of one value
	// (RFC 9110 §8.6 lets a recipient take it; curl does), which fasthttp
	// refuses: the client frames the answer from a head with one.
	sameLengths bool
	chunked     bool
	// seen: the head is the one the client remembered (Client.seen).
	seen bool
}

// The heads the client refuses: the request fails as "other" and the
// connection is closed (its framing cannot be trusted).
var (
	errHeadLong     = errors.New("answer head longer than --max-header-bytes")
	errBareLF       = errors.New("answer head with bare LF line ends")
	errBareCR       = errors.New("answer head with a bare CR (RFC 9112 §2.2; curl refuses it too)")
	errVersion      = errors.New(`status line not "HTTP/1.1 " or "HTTP/1.0 " then three digits (another version, more than one space, a leading blank line: curl refuses them too)`)
	errStatus       = errors.New("status code outside 100-599")
	errFieldLine    = errors.New("a field line without a name and a colon")
	errSpaceColon   = errors.New("whitespace between a field name and its colon (RFC 9112 §5.1: a recipient may not tell which field it is)")
	errLengths      = errors.New("Content-Length values that disagree or are not numbers (RFC 9112 §6.3)")
	errCoding       = errors.New("a transfer coding other than chunked, or chunked more than once (replay decodes none; RFC 9112 §6.1, and curl refuses all but identity)")
	errCoding10     = errors.New("Transfer-Encoding in an HTTP/1.0 answer (RFC 9112 §6.1: faulty framing)")
	errFoldFraming  = errors.New("obs-fold in Content-Length or Transfer-Encoding")
	errInterimStorm = errors.New("more than 100 interim (1xx) answers before the final one")
	errUnasked101   = errors.New("101 Switching Protocols to a request that asked for no upgrade")
)

// maxInterim is how many interim (1xx) answers may come before the final
// one (fasthttp's limit, and HTTP/2's in this project).
const maxInterim = 100

// readHead waits for the head of the final answer to req in the read
// buffer, past (and dropping) interim ones, and returns what its scan
// found; the head stays buffered for fasthttp.
func (c *Client) readHead(req *rrpair.Request) (head, error) {
	for interim := 0; ; interim++ {
		h, err := c.peekHead()
		switch {
		case err != nil:
			return h, err
		case !h.interim:
			if h.status == 101 && !asksUpgrade(req) {
				return h, errUnasked101
			}
			return h, nil
		case interim == maxInterim:
			return h, errInterimStorm
		}
		c.br.Discard(h.size)
	}
}

// asksUpgrade reports a request with an Upgrade field: the one a 101 may
// answer (RFC 9110 §15.2.2).
func asksUpgrade(req *rrpair.Request) bool {
	for i := range req.Headers {
		if rrpair.EqualFold(req.Headers[i].Name, "upgrade") && len(req.Headers[i].Value) > 0 {
			return true
		}
	}
	return false
}

// peekHead reads until the read buffer holds a whole head, and scans it.
func (c *Client) peekHead() (head, error) {
	from := 0 // where the line under way begins
	for {
		if n := c.br.Buffered(); n > from {
			b, _ := c.br.Peek(n)
			if s := c.seen; c.seenOK && len(b) >= len(s) && bytes.Equal(b[:len(s)], s) {
				// The same bytes up to the blank line that ended the
				// remembered head: the same head, scanned as it was.
				return c.seenHead, nil
			}
			end, next, err := headEnd(b, from)
			if err != nil {
				return head{}, err
			}
			if end > 0 {
				return scanHead(b[:end])
			}
			from = next
		}
		if c.br.Buffered() == c.br.Size() {
			return head{}, errHeadLong
		}
		if _, err := c.br.Peek(c.br.Buffered() + 1); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return head{}, errHeadLong
			}
			return head{}, err
		}
	}
}

// headEnd looks in b, from the start of a line, for the blank line that
// ends a head: end is the head's length, 0 if it has not come yet, and
// next where the line under way begins. A line may end in a bare LF
// (RFC 9112 §2.2 lets a recipient take it, and curl does), but the blank
// line must be CRLF: fasthttp would wait for ever for one after a bare
// LF. A bare CR is refused.
func headEnd(b []byte, from int) (end, next int, err error) {
	for {
		i := bytes.IndexByte(b[from:], '\n')
		if i < 0 {
			if j := bytes.IndexByte(b[from:], '\r'); j >= 0 && from+j < len(b)-1 {
				return 0, 0, errBareCR
			}
			return 0, from, nil
		}
		line := b[from : from+i]
		from += i + 1
		switch {
		case len(line) == 0:
			return 0, 0, errBareLF
		case len(line) == 1 && line[0] == '\r': // the blank line
			return from, from, nil
		case bytes.IndexByte(line[:len(line)-1], '\r') >= 0:
			return 0, 0, errBareCR
		}
	}
}

// scanHead scans a whole head: its status line, then each field that
// matters to the framing (Content-Length, Transfer-Encoding, Connection)
// or that a browser or curl would read otherwise than fasthttp.
func scanHead(b []byte) (head, error) {
	h := head{size: len(b), length: -1}
	line, rest := nextLine(b)
	http10, err := scanStatusLine(&h, line)
	if err != nil {
		return h, err
	}
	h.interim = h.status < 200 && h.status != 101
	fs := fieldScan{h: &h}
	for len(rest) > 2 {
		line, rest = nextLine(rest)
		if len(line) == 0 {
			break // the blank line
		}
		if err := fs.field(line); err != nil {
			return h, err
		}
	}
	return h, fs.finish(http10)
}

// scanStatusLine scans the status line into h.status, and reports an
// HTTP/1.0 answer.
func scanStatusLine(h *head, line []byte) (http10 bool, err error) {
	http10 = bytes.HasPrefix(line, http10Prefix)
	if !http10 && !bytes.HasPrefix(line, http11Prefix) {
		return http10, errVersion
	}
	code := line[len(http11Prefix):]
	if len(code) < 3 || len(code) > 3 && code[3] != ' ' {
		return http10, errVersion
	}
	for _, d := range code[:3] {
		if d < '0' || d > '9' {
			return http10, errVersion
		}
		h.status = h.status*10 + int(d-'0')
	}
	if h.status < 100 || h.status > 599 {
		return http10, errStatus
	}
	return http10, nil
}

// fieldScan is the scan of a head's field lines under way.
type fieldScan struct {
	h                *head
	lengths, codings int    // Content-Length values and Transfer-Encoding fields seen
	last             []byte // the name of the last field, for obs-fold
}

// field scans one field line (not the blank one).
func (fs *fieldScan) field(line []byte) error {
	if line[0] == ' ' || line[0] == '\t' { // obs-fold: the last field goes on
		return fs.obsFold()
	}
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return errFieldLine
	}
	name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
	if isWS(name[len(name)-1]) {
		return errSpaceColon
	}
	if bytes.IndexByte(name, ' ') >= 0 || bytes.IndexByte(name, '\t') >= 0 {
		fs.h.closes = true // kept (curl takes it), but its connection is not trusted
	}
	fs.last = name
	return fs.framing(name, value)
}

// obsFold refuses a folded line that goes on with a framing field.
func (fs *fieldScan) obsFold() error {
	if isHeader(fs.last, "content-length", 'c') || isHeader(fs.last, "transfer-encoding", 't') {
		return errFoldFraming
	}
	return nil
}

// framing reads the fields that frame the answer or keep its connection:
// Content-Length, Transfer-Encoding and Connection.
func (fs *fieldScan) framing(name, value []byte) error {
	h := fs.h
	switch {
	case isHeader(name, "content-length", 'c'):
		n, count, ok := lengthList(value)
		if !ok || h.length >= 0 && n != h.length {
			return errLengths
		}
		h.length, fs.lengths = n, fs.lengths+count
	case isHeader(name, "transfer-encoding", 't'):
		if fs.codings++; fs.codings > 1 || !rrpair.EqualFold(value, "chunked") {
			return errCoding
		}
		h.chunked = true
	case isHeader(name, "connection", 'c'):
		h.closes = h.closes || hasToken(value, "close")
	}
	return nil
}

// finish weighs the framing fields together once all are read.
func (fs *fieldScan) finish(http10 bool) error {
	h := fs.h
	switch {
	case h.chunked && http10:
		return errCoding10
	case h.chunked && h.length >= 0:
		h.closes = true // chunked wins (RFC 9112 §6.3), and the connection is not kept
	case fs.lengths > 1:
		h.sameLengths = true
	}
	return nil
}

var (
	http11Prefix = []byte("HTTP/1.1 ")
	http10Prefix = []byte("HTTP/1.0 ")
)

// nextLine cuts b at its first line end, LF or CRLF (b is a head: every
// line has one).
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	return bytes.TrimSuffix(b[:i], cr), b[i+1:]
}

var (
	cr        = []byte("\r")
	crlfBytes = []byte("\r\n")
)

func isWS(b byte) bool { return b == ' ' || b == '\t' }

// lengthList reads a Content-Length value: one number, or a list of the
// same number (RFC 9110 §8.6); count is how many.
func lengthList(v []byte) (n int64, count int, ok bool) {
	n = -1
	for len(v) > 0 || count == 0 {
		item, rest := cutComma(v)
		if len(item) == 0 || len(item) > 18 {
			return 0, 0, false
		}
		var m int64
		for _, d := range item {
			if d < '0' || d > '9' {
				return 0, 0, false
			}
			m = m*10 + int64(d-'0')
		}
		if n >= 0 && m != n {
			return 0, 0, false
		}
		n, count, v = m, count+1, rest
	}
	return n, count, true
}

// hasToken reports token among the comma-separated tokens of v, in any
// case.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var t []byte
		t, v = cutComma(v)
		if rrpair.EqualFold(t, token) {
			return true
		}
	}
	return false
}

// cutComma cuts v at its first comma: the item before, trimmed, and
// what follows (nil when there was no comma).
func cutComma(v []byte) (item, rest []byte) {
	if i := bytes.IndexByte(v, ','); i >= 0 {
		return bytes.TrimSpace(v[:i]), v[i+1:]
	}
	return bytes.TrimSpace(v), nil
}

// sameLengthHead appends to dst the head b with its Content-Length
// fields given as one, "Content-Length: n", where the first stood: the
// head fasthttp then parses.
func sameLengthHead(dst, b []byte, n int64) []byte {
	line, rest := nextLine(b)
	dst = append(append(dst, line...), crlfBytes...)
	written := false
	for len(rest) > 2 {
		line, rest = nextLine(rest)
		if len(line) == 0 {
			break
		}
		if colon := bytes.IndexByte(line, ':'); colon > 0 && isHeader(line[:colon], "content-length", 'c') {
			if !written {
				dst = appendLength(dst, line[:colon], int(n))
				written = true
			}
			continue
		}
		dst = append(append(dst, line...), crlfBytes...)
	}
	return append(dst, crlfBytes...)
}
