// Package gor converts GoReplay capture files (.gor, and .gor.gz) to
// RRPairs. A capture is a stream of records separated by the line
// "🐵🙈🙉"; each record is a header line
//
//	<type> <id> <timestamp ns> [<latency ns>]
//
// (type 1: a request, 2: its original response, 3: a replayed response)
// followed by the raw HTTP/1.x message. A request is written with its
// original response once both are seen; requests still waiting at the end
// are written without one. Memory holds only the requests waiting for
// their response.
package gor

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Separator ends each record.
const Separator = "🐵🙈🙉"

// Stats say what a conversion did.
type Stats struct {
	Records  int // records read
	Written  int // pairs written
	Replayed int // replayed responses (type 3), which a pair does not keep
}

// Skip receives a record that could not be converted: its number (from 1)
// and why.
type Skip func(record int, why string)

// Convert reads a capture from r (gzip-compressed or not) and writes pairs
// to w as their responses complete (ts keeps each request's capture time;
// replay orders by file position, so a response captured out of order
// moves its pair).
func Convert(r io.Reader, w io.Writer, skip Skip) (Stats, error) {
	var st Stats
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return st, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	type waiting struct {
		rec    *rrpair.Record
		record int
	}
	pending := map[string]*waiting{}
	var order []string // ids waiting, in capture order
	bw := bufio.NewWriter(w)
	write := func(r *rrpair.Record, record int) error {
		line := rrpair.AppendLine(nil, r)
		if err := rrpair.CheckLine(line); err != nil {
			skip(record, err.Error())
			return nil
		}
		st.Written++
		_, err := bw.Write(line)
		return err
	}
	err := records(br, func(n int, rec []byte) error {
		st.Records = n
		kind, id, ts, latency, payload, err := parseRecord(rec)
		if err != nil {
			skip(n, err.Error())
			return nil
		}
		switch kind {
		case '1':
			r, err := request(payload)
			if err != nil {
				skip(n, err.Error())
				return nil
			}
			r.TS = time.Unix(0, ts).UTC()
			if _, dup := pending[id]; dup {
				skip(n, "a second request with id "+id)
				return nil
			}
			pending[id] = &waiting{r, n}
			order = append(order, id)
		case '2':
			wt := pending[id]
			if wt == nil {
				skip(n, "a response to no captured request (id "+id+")")
				return nil
			}
			if err := response(wt.rec, payload); err != nil {
				skip(n, err.Error())
				return nil
			}
			wt.rec.Duration = time.Duration(latency)
			delete(pending, id)
			return write(wt.rec, wt.record)
		case '3':
			st.Replayed++
		default:
			skip(n, fmt.Sprintf("unknown record type %q", kind))
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	for _, id := range order { // requests whose response was not captured
		if wt := pending[id]; wt != nil {
			if err := write(wt.rec, wt.record); err != nil {
				return st, err
			}
		}
	}
	return st, bw.Flush()
}

// records calls fn with each record (without its separator line).
func records(br *bufio.Reader, fn func(n int, rec []byte) error) error {
	sep := []byte("\n" + Separator + "\n")
	var buf []byte
	n := 0
	flush := func(rec []byte) error {
		if len(bytes.TrimSpace(rec)) == 0 {
			return nil
		}
		n++
		return fn(n, rec)
	}
	chunk := make([]byte, 64<<10)
	for {
		k, err := br.Read(chunk)
		buf = append(buf, chunk[:k]...)
		for {
			i := bytes.Index(buf, sep)
			if i < 0 {
				break
			}
			if ferr := flush(buf[:i]); ferr != nil {
				return ferr
			}
			buf = append(buf[:0], buf[i+len(sep):]...)
		}
		if errors.Is(err, io.EOF) {
			return flush(bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte(Separator)))
		}
		if err != nil {
			return err
		}
	}
}

// parseRecord splits a record into its header fields and payload.
func parseRecord(rec []byte) (kind byte, id string, ts, latency int64, payload []byte, err error) {
	nl := bytes.IndexByte(rec, '\n')
	if nl < 0 {
		return 0, "", 0, 0, nil, errors.New("no header line")
	}
	f := strings.Fields(string(rec[:nl]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, "", 0, 0, nil, fmt.Errorf("header line %q: want TYPE ID TIMESTAMP [LATENCY]", rec[:nl])
	}
	if ts, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return 0, "", 0, 0, nil, fmt.Errorf("header line: timestamp %q is not a number", f[2])
	}
	if len(f) > 3 {
		latency, _ = strconv.ParseInt(f[3], 10, 64)
	}
	return f[0][0], f[1], ts, latency, rec[nl+1:], nil
}

// request parses a raw HTTP/1.x request, names, case and order kept.
func request(b []byte) (*rrpair.Record, error) {
	line, rest, ok := cutLine(b)
	if !ok {
		return nil, errors.New("request: no request line")
	}
	parts := strings.SplitN(string(line), " ", 3)
	if len(parts) != 3 || !strings.HasPrefix(parts[2], "HTTP/") || parts[0] == "" || parts[1] == "" {
		return nil, fmt.Errorf("request line %q: want METHOD URI HTTP/x.y", line)
	}
	r := &rrpair.Record{Method: parts[0], URI: parts[1], Version: strings.TrimPrefix(parts[2], "HTTP/")}
	if !strings.HasPrefix(r.URI, "/") && r.URI != "*" && !strings.HasPrefix(r.URI, "http://") && !strings.HasPrefix(r.URI, "https://") {
		return nil, fmt.Errorf("request line %q: the URI must be a path or an absolute http(s) URL", line)
	}
	hs, body, err := headers(rest)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	for _, h := range hs {
		switch strings.ToLower(h.Name) {
		case "host":
			r.Host = h.Value
		case "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection":
			continue // recomputed, or the VU's business
		}
		r.Headers = append(r.Headers, h)
	}
	if r.Body, err = messageBody(hs, body); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	if strings.HasPrefix(r.URI, "http://") || strings.HasPrefix(r.URI, "https://") {
		return r, nil // absolute form: the decoder takes host and scheme from it
	}
	if r.Host == "" {
		return nil, errors.New("request: no Host header")
	}
	return r, nil
}

// response parses a raw HTTP/1.x response into r.
func response(r *rrpair.Record, b []byte) error {
	line, rest, ok := cutLine(b)
	if !ok {
		return errors.New("response: no status line")
	}
	parts := strings.SplitN(string(line), " ", 3)
	if len(parts) < 2 || !strings.HasPrefix(parts[0], "HTTP/") {
		return fmt.Errorf("status line %q: want HTTP/x.y CODE", line)
	}
	code, err := strconv.Atoi(parts[1])
	if err != nil || code < 100 || code > 999 {
		return fmt.Errorf("status line %q: bad status", line)
	}
	hs, body, err := headers(rest)
	if err != nil {
		return fmt.Errorf("response: %w", err)
	}
	r.Status = code
	for _, h := range hs {
		switch strings.ToLower(h.Name) {
		case "content-length", "transfer-encoding", "connection", "keep-alive":
			continue
		}
		r.ResHeaders = append(r.ResHeaders, h)
	}
	r.ResBody, err = messageBody(hs, body)
	if err != nil {
		return fmt.Errorf("response: %w", err)
	}
	return nil
}

func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, nil, false
	}
	return bytes.TrimSuffix(b[:i], []byte("\r")), b[i+1:], true
}

// headers reads header lines up to the blank line.
func headers(b []byte) ([]rrpair.Field, []byte, error) {
	var hs []rrpair.Field
	for {
		line, rest, ok := cutLine(b)
		if !ok {
			if len(bytes.TrimSpace(b)) == 0 {
				return hs, nil, nil // no blank line: a message without body
			}
			return nil, nil, errors.New("headers: no end")
		}
		b = rest
		if len(line) == 0 {
			return hs, b, nil
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 {
			return nil, nil, fmt.Errorf("header line %q: want Name: value", line)
		}
		hs = append(hs, rrpair.Field{Name: string(name), Value: string(bytes.TrimSpace(value))})
	}
}

// messageBody is the body of a message, copied (the record's buffer is
// reused): de-chunked when it was sent chunked, cut to Content-Length when
// it says less.
func messageBody(hs []rrpair.Field, body []byte) ([]byte, error) {
	for _, h := range hs {
		switch strings.ToLower(h.Name) {
		case "transfer-encoding":
			if strings.Contains(strings.ToLower(h.Value), "chunked") {
				return dechunk(body)
			}
		case "content-length":
			if n, err := strconv.Atoi(h.Value); err == nil && n >= 0 && n < len(body) {
				body = body[:n]
			}
		}
	}
	return bytes.Clone(body), nil
}

func dechunk(b []byte) ([]byte, error) {
	var out []byte
	for {
		line, rest, ok := cutLine(b)
		if !ok {
			return nil, errors.New("chunked body: cut short")
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(string(line), ";", 2)[0]), 16, 64)
		if err != nil || size < 0 || size > int64(len(rest)) {
			return nil, fmt.Errorf("chunked body: bad chunk size %q", line)
		}
		if size == 0 {
			return out, nil
		}
		out = append(out, rest[:size]...)
		b = bytes.TrimPrefix(rest[size:], []byte("\r\n"))
	}
}
