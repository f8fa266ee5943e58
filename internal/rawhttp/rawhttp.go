// Package rawhttp reads HTTP/1.x messages as they went by: the raw bytes, to
// pass on unchanged, and the parts a recording needs (header names in their
// case and order, the body de-chunked). The capture proxy reads them off
// sockets, the GoReplay importer out of capture files.
package rawhttp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Message is one HTTP/1.x message as it went by.
type Message struct {
	Raw     []byte // as read, to pass on unchanged
	Method  string // request
	Target  string // request: the raw request target
	Version string // "1.1"
	Status  int    // response
	Headers []rrpair.Field
	Body    []byte // de-chunked, a copy of its own
	Close   bool   // the connection ends after this message
	// Continued: a request's "100 Continue" was written to Read's w.
	Continued bool
}

// maxHead bounds a message's start line and headers.
const maxHead = 64 << 10

// Read reads one message from br. For a response, method is the
// request's (a HEAD answer has no body). A request that expects
// "100-continue" gets "100 Continue" written to w, when w is not nil,
// before its body is read.
//
// Its steps follow RFC 9112's message framing in order: the start line
// and the fields (as ParseHead reads them), then the body's length by
// HEAD/1xx/204/304, Transfer-Encoding, Content-Length or close.
func Read(br *bufio.Reader, request bool, method string, w io.Writer) (*Message, error) {
	m := &Message{}
	var raw bytes.Buffer
	line, err := readLine(br, &raw)
	if err != nil {
		return nil, err
	}
	for request && len(line) == 0 { // stray CRLF between requests
		raw.Reset()
		if line, err = readLine(br, &raw); err != nil {
			return nil, err
		}
	}
	if err := m.startLine(line, request); err != nil {
		return nil, err
	}
	var fields []string
	for {
		h, err := readLine(br, &raw)
		if err != nil {
			return nil, err
		}
		if raw.Len() > maxHead {
			return nil, errors.New("head too large")
		}
		if h == "" {
			break
		}
		fields = append(fields, h)
	}
	f, err := m.fields(fields)
	if err != nil {
		return nil, err
	}
	length, chunked := f.Length, f.Chunked
	if request && w != nil && HasToken(m.Headers, "expect", "100-continue") {
		if _, err := io.WriteString(w, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return nil, err
		}
		m.Continued = true
	}
	switch {
	case !request && NoBody(method, m.Status):
	case chunked: // de-chunked into a slice of its own
		if m.Body, err = readChunked(br, &raw); err != nil {
			return nil, err
		}
	case length >= 0:
		start := raw.Len()
		if _, err := io.CopyN(&raw, br, length); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		m.Body = bytes.Clone(raw.Bytes()[start:])
	case !request: // until the connection closes
		start := raw.Len()
		if _, err := io.Copy(&raw, br); err != nil {
			return nil, err
		}
		m.Body, m.Close = bytes.Clone(raw.Bytes()[start:]), true
	}
	m.Raw = raw.Bytes()
	return m, nil
}

// ReadResponse reads the answer to a request of method from br: past any
// interim (1xx) responses, the final one. interim, when not nil, gets each
// interim response first, in order (to pass it on); its error ends the
// read. A 101 Switching Protocols is final: what follows it is not HTTP.
func ReadResponse(br *bufio.Reader, method string, interim func(*Message) error) (*Message, error) {
	for {
		m, err := Read(br, false, method, nil)
		if err != nil || m.Status/100 != 1 || m.Status == 101 {
			return m, err
		}
		if interim != nil {
			if err := interim(m); err != nil {
				return nil, err
			}
		}
	}
}

// NoBody says whether an answer with status to a request of method has
// no body, whatever its head says (RFC 9112 §6.3): HEAD, 1xx, 204, 304,
// and a CONNECT's 2xx (a tunnel follows).
func NoBody(method string, status int) bool {
	return method == "HEAD" || status/100 == 1 || status == 204 || status == 304 ||
		method == "CONNECT" && status/100 == 2 // a tunnel follows a CONNECT's 2xx (RFC 9110 9.3.6)
}

// Framing is how a message's body is delimited, as its head says.
type Framing struct {
	Length  int64 // Content-Length; -1: none
	Chunked bool  // Transfer-Encoding: chunked (which wins over Length)
}

// ParseHead reads a message's head as it went by: its start line and its
// fields, up to the blank line that ends it (lines end in CRLF or LF; a
// head may hold the blank line or not). For a reader that frames messages
// itself (a packet capture's, which gets them in pieces); the returned
// Message has no Raw and no Body.
func ParseHead(head []byte, request bool) (*Message, Framing, error) {
	lines := strings.Split(strings.TrimRight(string(head), "\r\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	m := &Message{}
	if err := m.startLine(lines[0], request); err != nil {
		return nil, Framing{}, err
	}
	f, err := m.fields(lines[1:])
	return m, f, err
}

// startLine reads a request or status line into m.
func (m *Message) startLine(line string, request bool) error {
	f := strings.SplitN(line, " ", 3)
	if request {
		if len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/1.") {
			return fmt.Errorf("request line %q: want METHOD TARGET HTTP/1.x", line)
		}
		m.Method, m.Target, m.Version = f[0], f[1], strings.TrimPrefix(f[2], "HTTP/")
		return nil
	}
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
		return fmt.Errorf("status line %q", line)
	}
	var err error
	if m.Status, err = strconv.Atoi(f[1]); err != nil {
		return fmt.Errorf("status line %q", line)
	}
	m.Version = strings.TrimPrefix(f[0], "HTTP/")
	return nil
}

// fields reads a head's field lines into m, and says how its body is
// framed.
func (m *Message) fields(lines []string) (Framing, error) {
	f := Framing{Length: -1}
	for _, h := range lines {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return f, fmt.Errorf("header line %q", h)
		}
		value = strings.TrimSpace(value)
		m.Headers = append(m.Headers, rrpair.Field{Name: name, Value: value})
		switch strings.ToLower(name) {
		case "content-length":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 {
				return f, fmt.Errorf("Content-Length %q", value)
			}
			f.Length = n
		case "transfer-encoding":
			f.Chunked = strings.Contains(strings.ToLower(value), "chunked")
		case "connection":
			m.Close = strings.EqualFold(value, "close")
		}
	}
	if m.Version == "1.0" && !HasToken(m.Headers, "connection", "keep-alive") {
		m.Close = true
	}
	return f, nil
}

// readLine reads one line into raw and returns it without its line end.
func readLine(br *bufio.Reader, raw *bytes.Buffer) (string, error) {
	line, err := br.ReadSlice('\n')
	raw.Write(line)
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", errors.New("line too long")
		}
		if len(line) > 0 && errors.Is(err, io.EOF) {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

// readChunked reads a chunked body (raw kept in raw) and returns it
// de-chunked.
func readChunked(br *bufio.Reader, raw *bytes.Buffer) ([]byte, error) {
	var body []byte
	for {
		line, err := readLine(br, raw)
		if err != nil {
			return nil, err
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(line, ";", 2)[0]), 16, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("chunk size %q", line)
		}
		if size == 0 {
			for { // trailers up to the blank line
				t, err := readLine(br, raw)
				if err != nil {
					return nil, err
				}
				if t == "" {
					return body, nil
				}
			}
		}
		start := raw.Len()
		if _, err := io.CopyN(raw, br, size); err != nil {
			return nil, err
		}
		body = append(body, raw.Bytes()[start:]...)
		if _, err := readLine(br, raw); err != nil { // the CRLF after the data
			return nil, err
		}
	}
}

// HasToken says whether a field called name (in any case) holds token
// (lower-case) in its value, in any case.
func HasToken(hs []rrpair.Field, name, token string) bool {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) && strings.Contains(strings.ToLower(h.Value), token) {
			return true
		}
	}
	return false
}
