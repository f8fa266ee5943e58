package capture

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

// message is one HTTP/1.x message as it went by: its raw bytes, to pass
// on unchanged, and what the record needs.
type message struct {
	raw     []byte
	method  string // request
	target  string // request: the raw request target
	version string // "1.1"
	status  int    // response
	headers []rrpair.Field
	body    []byte // de-chunked
	close   bool   // the connection ends after this message
}

// maxHead bounds a message's start line and headers.
const maxHead = 64 << 10

// readMessage reads one message from br. For a response, method is the
// request's (a HEAD answer has no body). A request that expects
// "100-continue" gets it from the proxy (to continue, written to w) before
// its body is read; the upstream's own interim answer is then not passed on.
func readMessage(br *bufio.Reader, request bool, method string, w io.Writer) (*message, error) {
	m := &message{}
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
	f := strings.SplitN(line, " ", 3)
	if request {
		if len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/1.") {
			return nil, fmt.Errorf("request line %q: want METHOD TARGET HTTP/1.x", line)
		}
		m.method, m.target, m.version = f[0], f[1], strings.TrimPrefix(f[2], "HTTP/")
	} else {
		if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
			return nil, fmt.Errorf("status line %q", line)
		}
		if m.status, err = strconv.Atoi(f[1]); err != nil {
			return nil, fmt.Errorf("status line %q", line)
		}
		m.version = strings.TrimPrefix(f[0], "HTTP/")
	}
	length, chunked := int64(-1), false
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
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return nil, fmt.Errorf("header line %q", h)
		}
		value = strings.TrimSpace(value)
		m.headers = append(m.headers, rrpair.Field{Name: name, Value: value})
		switch strings.ToLower(name) {
		case "content-length":
			if length, err = strconv.ParseInt(value, 10, 64); err != nil || length < 0 {
				return nil, fmt.Errorf("Content-Length %q", value)
			}
		case "transfer-encoding":
			chunked = strings.Contains(strings.ToLower(value), "chunked")
		case "connection":
			m.close = strings.EqualFold(value, "close")
		}
	}
	if m.version == "1.0" && !hasToken(m.headers, "connection", "keep-alive") {
		m.close = true
	}
	if request && w != nil && hasToken(m.headers, "expect", "100-continue") {
		if _, err := io.WriteString(w, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return nil, err
		}
	}
	switch {
	case !request && (method == "HEAD" || m.status/100 == 1 || m.status == 204 || m.status == 304):
	case chunked:
		if m.body, err = readChunked(br, &raw); err != nil {
			return nil, err
		}
	case length >= 0:
		start := raw.Len()
		if _, err := io.CopyN(&raw, br, length); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		m.body = raw.Bytes()[start:]
	case !request: // until the connection closes
		start := raw.Len()
		if _, err := io.Copy(&raw, br); err != nil {
			return nil, err
		}
		m.body, m.close = raw.Bytes()[start:], true
	}
	m.raw = raw.Bytes()
	m.body = bytes.Clone(m.body)
	return m, nil
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

func hasToken(hs []rrpair.Field, name, token string) bool {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) && strings.Contains(strings.ToLower(h.Value), token) {
			return true
		}
	}
	return false
}
