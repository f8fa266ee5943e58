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
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replay-dev/replay/internal/rawhttp"
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
	bw := bufio.NewWriter(w)
	write := func(r *rrpair.Record, record int) error {
		line, err := rrpair.AppendChecked(nil, r)
		if err != nil {
			skip(record, err.Error())
			return nil
		}
		st.Written++
		_, err = bw.Write(line)
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
	// Requests whose response was not captured, in capture order.
	left := slices.SortedFunc(maps.Values(pending), func(a, b *waiting) int { return a.record - b.record })
	for _, wt := range left {
		if err := write(wt.rec, wt.record); err != nil {
			return st, err
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
	scanned := 0 // buf[:scanned] was searched: no separator starts before scanned-len(sep)+1
	for {
		k, err := br.Read(chunk)
		buf = append(buf, chunk[:k]...)
		start := 0 // of the record under way
		for {
			from := max(start, scanned-len(sep)+1)
			i := bytes.Index(buf[from:], sep)
			if i < 0 {
				break
			}
			i += from
			if ferr := flush(buf[start:i]); ferr != nil {
				return ferr
			}
			start = i + len(sep)
		}
		// Keep the record under way; the next read searches only past
		// what was searched (a big record is not scanned again each read).
		scanned = len(buf) - start
		if start > 0 {
			buf = append(buf[:0], buf[start:]...)
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
	m, err := rawhttp.Read(bufio.NewReader(bytes.NewReader(b)), true, "", nil)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	r := &rrpair.Record{Method: m.Method, URI: m.Target, Version: m.Version, Body: m.Body}
	if !strings.HasPrefix(r.URI, "/") && r.URI != "*" && !strings.HasPrefix(r.URI, "http://") && !strings.HasPrefix(r.URI, "https://") {
		return nil, fmt.Errorf("request target %q: want a path or an absolute http(s) URL", r.URI)
	}
	for _, h := range m.Headers {
		if strings.EqualFold(h.Name, "Host") {
			r.Host = h.Value
		}
		if kept(h.Name) {
			r.Headers = append(r.Headers, h)
		}
	}
	if strings.HasPrefix(r.URI, "http://") || strings.HasPrefix(r.URI, "https://") {
		return r, nil // absolute form: the decoder takes host and scheme from it
	}
	if r.Host == "" {
		return nil, errors.New("request: no Host header")
	}
	return r, nil
}

// response parses a raw HTTP/1.x response into r, past any interim
// (1xx) answer.
func response(r *rrpair.Record, b []byte) error {
	m, err := rawhttp.ReadResponse(bufio.NewReader(bytes.NewReader(b)), r.Method, nil)
	if err != nil {
		return fmt.Errorf("response: %w", err)
	}
	r.Status, r.ResBody = m.Status, m.Body
	for _, h := range m.Headers {
		if kept(h.Name) {
			r.ResHeaders = append(r.ResHeaders, h)
		}
	}
	return nil
}

// kept reports whether a captured header goes into the pair: not
// Content-Length (recomputed from the body), nor a connection header
// (the VU's business).
func kept(name string) bool {
	return !strings.EqualFold(name, "Content-Length") && !rrpair.ConnectionHeader(name)
}
