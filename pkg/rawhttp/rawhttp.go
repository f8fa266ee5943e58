// Package rawhttp reads HTTP/1.x messages as they went by: the raw bytes, to
// pass on unchanged, and the parts a recording needs (header names in their
// case and order, the body de-chunked). The recording proxies read them
// off sockets, the GoReplay and packet-capture importers out of capture
// files. It speaks of headers in the file format's words (rrpair.Field),
// so it sits on pkg/rrpair, beside the rooms that write recordings, and
// imports nothing else of the project.
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
	m, f, err := ReadHead(br, request)
	if err != nil {
		return nil, err
	}
	if request && w != nil && HasToken(m.Headers, "expect", "100-continue") {
		if _, err := io.WriteString(w, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return nil, err
		}
		m.Continued = true
	}
	raw := bytes.NewBuffer(m.Raw)
	body := Body{Max: -1}
	if err := m.CopyBody(raw, br, f, method, &body); err != nil {
		return nil, err
	}
	m.Raw, m.Body = raw.Bytes(), body.Kept
	return m, nil
}

// ReadHead reads a message's head from br: its start line and fields, up
// to the blank line (Raw holds them as they came), and how its body is
// framed. A request's stray CRLFs before its line are skipped.
func ReadHead(br *bufio.Reader, request bool) (*Message, Framing, error) {
	m := &Message{}
	var raw bytes.Buffer
	line, err := readLine(br, &raw)
	if err != nil {
		return nil, Framing{}, err
	}
	for request && len(line) == 0 { // stray CRLF between requests
		raw.Reset()
		if line, err = readLine(br, &raw); err != nil {
			return nil, Framing{}, err
		}
	}
	if err := m.startLine(line, request); err != nil {
		return nil, Framing{}, err
	}
	var fields []string
	for {
		h, err := readLine(br, &raw)
		if err != nil {
			return nil, Framing{}, err
		}
		if raw.Len() > maxHead {
			return nil, Framing{}, errors.New("head too large")
		}
		if h == "" {
			break
		}
		fields = append(fields, h)
	}
	f, err := m.fields(fields, request)
	if err != nil {
		return nil, Framing{}, err
	}
	m.Raw = raw.Bytes()
	return m, f, nil
}

// Body is what CopyBody keeps of a body: its first Max bytes (de-chunked;
// Max < 0 keeps all), and its whole Size.
type Body struct {
	Max  int64
	Kept []byte
	Size int64
}

// Cut says the body was larger than what was kept.
func (b *Body) Cut() bool { return b.Max >= 0 && b.Size > b.Max }

// Write keeps p within Max and counts it.
func (b *Body) Write(p []byte) (int, error) {
	b.Size += int64(len(p))
	if b.Max < 0 {
		b.Kept = append(b.Kept, p...)
	} else if room := b.Max - int64(len(b.Kept)); room > 0 {
		b.Kept = append(b.Kept, p[:min(int64(len(p)), room)]...)
	}
	return len(p), nil
}

// CopyBody copies m's body, framed as f says, from br to dst as it came
// (chunk lines and trailers included), and its content (de-chunked) into
// body (a *Body keeps what its Max allows): a body of any size passes in
// the memory of br and dst's buffers. For a response, method is the
// request's. A response read until the connection closes sets m.Close.
func (m *Message) CopyBody(dst io.Writer, br *bufio.Reader, f Framing, method string, body io.Writer) error {
	request := m.Method != ""
	switch {
	case !request && NoBody(method, m.Status):
	case f.Chunked:
		return copyChunked(dst, br, body)
	case f.Length >= 0:
		if _, err := io.CopyN(io.MultiWriter(dst, body), br, f.Length); err != nil {
			return fmt.Errorf("body: %w", err)
		}
	case !request: // until the connection closes
		if _, err := io.Copy(io.MultiWriter(dst, body), br); err != nil {
			return err
		}
		m.Close = true
	}
	return nil
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
	f, err := m.fields(lines[1:], request)
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
// framed. A request is held to RFC 9112 §6 as a proxy must hold it (a
// request framed two ways could be read one way here and another way
// upstream, RFC 9112 §11.2): Content-Length and Transfer-Encoding
// together, Content-Lengths that differ, one that is not digits, and a
// Transfer-Encoding whose last coding is not chunked are errors.
func (m *Message) fields(lines []string, request bool) (Framing, error) {
	f := Framing{Length: -1}
	te := false
	for _, h := range lines {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return f, fmt.Errorf("header line %q", h)
		}
		value = strings.TrimSpace(value)
		m.Headers = append(m.Headers, rrpair.Field{Name: name, Value: value})
		switch strings.ToLower(name) {
		case "content-length":
			if err := f.setLength(value); err != nil {
				return f, err
			}
		case "transfer-encoding":
			te = true
			codings := strings.Split(strings.ToLower(value), ",")
			f.Chunked = strings.TrimSpace(codings[len(codings)-1]) == "chunked"
			if request && !f.Chunked {
				return f, fmt.Errorf("Transfer-Encoding %q: a request's last coding must be chunked", value)
			}
		case "connection":
			m.Close = strings.EqualFold(value, "close")
		}
	}
	if request && te && f.Length >= 0 {
		return f, errors.New("Content-Length and Transfer-Encoding together: a request has one framing")
	}
	if m.Version == "1.0" && !HasToken(m.Headers, "connection", "keep-alive") {
		m.Close = true
	}
	return f, nil
}

// setLength reads a Content-Length value into f.Length; a second one must
// say the same length.
func (f *Framing) setLength(value string) error {
	n, err := contentLength(value)
	if err != nil {
		return err
	}
	if f.Length >= 0 && n != f.Length {
		return fmt.Errorf("Content-Length %d and %d: a message has one length", f.Length, n)
	}
	f.Length = n
	return nil
}

// contentLength reads a Content-Length value: digits only (no sign, no
// space; a list of one value repeated, "5, 5", is that value).
func contentLength(value string) (int64, error) {
	var n int64 = -1
	for _, v := range strings.Split(value, ",") {
		v = strings.TrimSpace(v)
		if v == "" || strings.Trim(v, "0123456789") != "" || len(v) > 18 {
			return 0, fmt.Errorf("Content-Length %q: want digits", value)
		}
		k, _ := strconv.ParseInt(v, 10, 64)
		if n >= 0 && k != n {
			return 0, fmt.Errorf("Content-Length %q: a message has one length", value)
		}
		n = k
	}
	return n, nil
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

// copyChunked copies a chunked body from br to dst as it came, and its
// content de-chunked into body.
func copyChunked(dst io.Writer, br *bufio.Reader, body io.Writer) error {
	var line bytes.Buffer
	next := func() (string, error) {
		line.Reset()
		l, err := readLine(br, &line)
		if err == nil {
			_, err = dst.Write(line.Bytes())
		}
		return l, err
	}
	for {
		l, err := next()
		if err != nil {
			return err
		}
		hexSize := strings.TrimSpace(strings.SplitN(l, ";", 2)[0])
		size, err := strconv.ParseInt(hexSize, 16, 64)
		if err != nil || size < 0 || strings.HasPrefix(hexSize, "+") {
			return fmt.Errorf("chunk size %q", l)
		}
		if size == 0 {
			for { // trailers up to the blank line
				t, err := next()
				if err != nil {
					return err
				}
				if t == "" {
					return nil
				}
			}
		}
		if _, err := io.CopyN(io.MultiWriter(dst, body), br, size); err != nil {
			return err
		}
		if _, err := next(); err != nil { // the CRLF after the data
			return err
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
