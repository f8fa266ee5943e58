// Package gor converts GoReplay capture files (.gor, and .gor.gz) to
// RRPairs. A capture is a stream of records separated by the line
// "🐵🙈🙉"; each record is a header line
//
//	<type> <id> <timestamp ns> [<latency ns>]
//
// (type 1: a request, 2: its original response, 3: a replayed response)
// followed by the raw HTTP/1.x message. Each request is paired with its
// original response by id; requests still waiting at the end are written
// without one. Pairs come out in request order, from one capture or from
// several merged by timestamp (Merge).
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

	"github.com/replay-dev/replay/internal/spool"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Separator ends each record.
const Separator = "🐵🙈🙉"

// Stats say what a conversion did.
type Stats struct {
	Files    int // captures read (Merge's sources)
	Records  int // records read, in all files
	Written  int // pairs written
	Replayed int // replayed responses (type 3), which a pair does not keep
	NoHost   int // pairs written whose request had no Host (they replay with --target)
}

// Summary is the sentence that says what a conversion wrote and did not
// keep: "3 files merged: 12 records, 6 pairs written, 0 replayed responses
// not kept; 1 without a Host header (replay them with --target)", the
// files named only when several were merged.
func (s Stats) Summary() string {
	summary := fmt.Sprintf("%d records, %d pairs written, %d replayed responses not kept", s.Records, s.Written, s.Replayed)
	if s.Files > 1 {
		summary = fmt.Sprintf("%d files merged: %s", s.Files, summary)
	}
	if s.NoHost > 0 {
		summary += fmt.Sprintf("; %d without a Host header (replay them with --target)", s.NoHost)
	}
	return summary
}

// Skip receives a record that could not be converted: its number (from 1)
// and why.
type Skip func(record int, why string)

// Source is one capture file: its name (for Merge's skip reports) and
// its bytes, gzip-compressed or not.
type Source struct {
	Name string
	R    io.Reader
}

// Convert reads one capture from r (gzip-compressed or not) and writes
// its pairs to w in request order, as Merge does.
func Convert(r io.Reader, w io.Writer, skip Skip) (Stats, error) {
	return Merge([]Source{{R: r}}, w, func(_ string, n int, why string) { skip(n, why) })
}

// Merge reads the captures in srcs as one: GoReplay writes a long capture
// in chunks (requests_0.gor, requests_1.gor, ...), and several instances
// write one file each. Records are taken from the files by timestamp, so
// a response finds its request whichever file holds it, and the pairs are
// written to w in request order (by the request record's timestamp, ties
// in capture order), not in the order the answers completed. A request
// without an answer is written without one. skip gets the source's name
// and the record's number in it (from 1).
//
// Memory holds the requests waiting for their answer and 32 bytes a pair;
// the pairs themselves wait in memory up to 8 MiB, then in a temporary
// file.
func Merge(srcs []Source, w io.Writer, skip func(src string, record int, why string)) (Stats, error) {
	st := Stats{Files: len(srcs)}
	heads := make([]*head, len(srcs))
	for i, src := range srcs {
		rr, err := newRecordReader(src.R)
		if err != nil {
			return st, errName(src.Name, err)
		}
		heads[i] = &head{src: src.Name, r: rr}
	}
	sorted := spool.New()
	defer sorted.Close()
	c := converter{st: &st, out: sorted, pending: map[string]*waiting{}, skip: skip}
	for {
		h, err := nextHead(heads, &st, skip)
		if err != nil {
			return st, err
		}
		if h == nil {
			break
		}
		if err := c.record(h); err != nil {
			return st, err
		}
		h.ok = false
	}
	// Requests whose response was not captured.
	left := slices.SortedFunc(maps.Values(c.pending), func(a, b *waiting) int { return a.seq - b.seq })
	for _, wt := range left {
		if err := c.write(wt); err != nil {
			return st, err
		}
	}
	if err := sorted.Sort(); err != nil {
		return st, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf []byte
	for i := range sorted.Len() {
		line, err := sorted.Record(i, buf)
		if err != nil {
			return st, err
		}
		buf = line
		if _, err := bw.Write(line); err != nil {
			return st, err
		}
	}
	return st, bw.Flush()
}

func errName(name string, err error) error {
	if name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// head is a source's next record, parsed.
type head struct {
	src  string
	r    *recordReader
	done bool
	ok   bool // the fields below hold the next record
	n    int  // its number in src
	kind byte
	id   string
	ts   int64
	lat  int64
	body []byte
}

// nextHead returns the source whose next record is the earliest (ties:
// the source given first), or nil when every source is done. A record
// whose header does not parse is skipped on the way.
func nextHead(heads []*head, st *Stats, skip func(string, int, string)) (*head, error) {
	var best *head
	for _, h := range heads {
		for !h.ok && !h.done {
			rec, err := h.r.next()
			if errors.Is(err, io.EOF) {
				h.done = true
				break
			}
			if err != nil {
				return nil, errName(h.src, err)
			}
			st.Records++
			h.n = h.r.n
			h.kind, h.id, h.ts, h.lat, h.body, err = parseRecord(rec)
			if err != nil {
				skip(h.src, h.n, err.Error())
				continue
			}
			h.ok = true
		}
		if h.ok && (best == nil || h.ts < best.ts) {
			best = h
		}
	}
	return best, nil
}

// waiting is a request waiting for its answer.
type waiting struct {
	rec    *rrpair.Record
	src    string
	record int // its number in src
	seq    int // its place among all requests
}

// converter pairs requests with their answers and spools the pairs.
type converter struct {
	st      *Stats
	out     *spool.Sorter
	pending map[string]*waiting
	seq     int
	skip    func(src string, record int, why string)
	line    []byte
}

// record takes one parsed record.
func (c *converter) record(h *head) error {
	switch h.kind {
	case '1':
		r, err := request(h.body)
		if err != nil {
			c.skip(h.src, h.n, err.Error())
			return nil
		}
		r.TS = time.Unix(0, h.ts).UTC()
		if _, dup := c.pending[h.id]; dup {
			c.skip(h.src, h.n, "a second request with id "+h.id)
			return nil
		}
		c.seq++
		c.pending[h.id] = &waiting{r, h.src, h.n, c.seq}
	case '2':
		wt := c.pending[h.id]
		if wt == nil {
			c.skip(h.src, h.n, "a response to no captured request (id "+h.id+")")
			return nil
		}
		if err := response(wt.rec, h.body); err != nil {
			c.skip(h.src, h.n, err.Error())
			return nil
		}
		wt.rec.Duration = time.Duration(h.lat)
		delete(c.pending, h.id)
		return c.write(wt)
	case '3':
		c.st.Replayed++
	default:
		c.skip(h.src, h.n, fmt.Sprintf("unknown record type %q", h.kind))
	}
	return nil
}

// write checks a pair and spools it under its request's time.
func (c *converter) write(wt *waiting) error {
	var err error
	c.line, err = rrpair.AppendChecked(c.line[:0], wt.rec)
	if err != nil {
		c.skip(wt.src, wt.record, err.Error())
		return nil
	}
	c.st.Written++
	if wt.rec.Host == "" && !absolute(wt.rec.URI) {
		c.st.NoHost++
	}
	return c.out.Add(wt.rec.TS.UnixNano(), int64(wt.seq), c.line)
}

// sep ends each record, with the line ends around it.
var sep = []byte("\n" + Separator + "\n")

// recordReader reads records (without their separator line) from a
// capture, gzip-compressed or not.
type recordReader struct {
	src     io.Reader
	buf     []byte
	start   int   // of the record under way in buf
	scanned int   // buf[:scanned] was searched: no separator starts before scanned-len(sep)+1
	err     error // of the last read
	n       int   // records returned
}

func newRecordReader(r io.Reader) (*recordReader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return &recordReader{src: zr}, nil
	}
	return &recordReader{src: br}, nil
}

// next returns the next record, valid until the next call, or io.EOF.
// A big record is not searched again at each read: the search goes on
// past what was searched.
func (r *recordReader) next() ([]byte, error) {
	for {
		from := max(r.start, r.scanned-len(sep)+1)
		if i := bytes.Index(r.buf[from:], sep); i >= 0 {
			i += from
			rec := r.buf[r.start:i]
			r.start = i + len(sep)
			r.scanned = r.start
			if len(bytes.TrimSpace(rec)) == 0 {
				continue
			}
			r.n++
			return rec, nil
		}
		r.scanned = len(r.buf)
		if r.err != nil {
			if !errors.Is(r.err, io.EOF) {
				return nil, r.err
			}
			rec := bytes.TrimSuffix(bytes.TrimSuffix(r.buf[r.start:], []byte("\n")), []byte(Separator))
			r.start = len(r.buf)
			if len(bytes.TrimSpace(rec)) == 0 {
				return nil, io.EOF
			}
			r.n++
			return rec, nil
		}
		if r.start > 0 { // keep the record under way only
			k := copy(r.buf, r.buf[r.start:])
			r.buf, r.scanned, r.start = r.buf[:k], r.scanned-r.start, 0
		}
		r.buf = slices.Grow(r.buf, 64<<10)
		k, err := r.src.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf, r.err = r.buf[:len(r.buf)+k], err
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
	if !strings.HasPrefix(r.URI, "/") && r.URI != "*" && !absolute(r.URI) {
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
	if absolute(r.URI) {
		return r, nil // absolute form: the decoder takes host and scheme from it
	}
	return r, nil // no Host: the pair replays with --target
}

// absolute reports a request target in absolute form (a proxy's).
func absolute(uri string) bool {
	return strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://")
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

// Looks says whether prefix, the first bytes of a file, is the start of a
// GoReplay capture: a record's header line ("1 <id> <timestamp>...") or
// a gzip-compressed one. For the sniffer, which tells formats apart.
func Looks(prefix []byte) bool {
	if len(prefix) >= 2 && prefix[0] == 0x1f && prefix[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(prefix))
		if err != nil {
			return false
		}
		inner := make([]byte, 4<<10)
		n, _ := io.ReadFull(zr, inner)
		return Looks(inner[:n])
	}
	line, _, _ := bytes.Cut(prefix, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 3 || len(f) > 4 || len(f[0]) != 1 || f[0][0] < '1' || f[0][0] > '3' {
		return false
	}
	for _, n := range f[2:] {
		if _, err := strconv.ParseInt(n, 10, 64); err != nil {
			return false
		}
	}
	return true
}
