// Package har converts HAR 1.2 files (what browsers and proxies export) to
// RRPairs, as real recorders write them: entries are read one at a time,
// each on its own, so that an entry of an unexpected shape is skipped (and
// counted by reason) without losing the others, and written ordered by
// startedDateTime in two passes over the file (offsets and times first, 24
// bytes an entry).
package har

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/internal/plural"
)

// Stats say what a conversion did.
type Stats struct {
	Entries int // entries read
	Written int // pairs written
	// HTTP2 counts the pairs written recorded as HTTP/2 or 3
	// (http.req.version "2" or "3"); a run that sends one as HTTP/1.1
	// counts it as downgraded.
	HTTP2 int
	// Skipped counts the entries not written, by reason: the key that
	// starts the Skip's why. "websocket", "cache" and "local" (answered
	// without the network), "no-answer" (status 0) never reached the
	// network; "url" (not http or https), "shape" (a value of the wrong
	// type), "time" (a startedDateTime that is not a time) and "invalid"
	// (what a replay could not send) did, and are lost.
	Skipped map[string]int

	// Written, with a change:
	BadHeaders     int // request header fields dropped: a name that is not a token (WebPageTest's request line), a value with CR or NUL
	AnswerHeaders  int // recorded answer header fields dropped, for the same reasons
	AnswersDropped int // recorded answers that could not be read, dropped (the request kept)
	SplitValues    int // header values with embedded LFs, split into one field a line
	// WebSockets are the WebSocket entries written as upgrade pairs with
	// their messages (Options.WebSockets); WSMessages their messages, and
	// WSIgnored the entries of _webSocketMessages not kept (a pong, a
	// continuation, an opcode RFC 6455 reserves, Chrome's "error").
	WebSockets, WSMessages, WSIgnored int
	// NoBody lists the entries (from 1) whose body the recorder did not
	// capture (a recorded Content-Length or bodySize over 0, no text, no
	// params it could be rebuilt from): sent with an empty body.
	NoBody []int
}

// SkippedTotal is the number of entries skipped, whatever the reason.
func (s *Stats) SkippedTotal() int {
	n := 0
	for _, k := range s.Skipped {
		n += k
	}
	return n
}

// Summary is the sentence that says what a conversion wrote, what it
// skipped by reason, and what it wrote with a change:
// "8 entries, 5 pairs written (3 recorded as HTTP/2 or 3); skipped 3:
// cache 1, no-answer 1, websocket 1; dropped 1 request header field;
// 1 body not captured, sent empty (entries 8)".
func (s *Stats) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries, %d pairs written (%d recorded as HTTP/2 or 3)", s.Entries, s.Written, s.HTTP2)
	if n := s.SkippedTotal(); n > 0 {
		keys := slices.Sorted(maps.Keys(s.Skipped))
		for i, k := range keys {
			keys[i] = fmt.Sprintf("%s %d", k, s.Skipped[k])
		}
		fmt.Fprintf(&b, "; skipped %d: %s", n, strings.Join(keys, ", "))
	}
	var dropped []string
	for _, d := range []struct {
		n    int
		what string
	}{{s.BadHeaders, "request header field"}, {s.AnswerHeaders, "answer header field"}, {s.AnswersDropped, "recorded answer"}} {
		if d.n > 0 {
			dropped = append(dropped, plural.Count(d.n, d.what))
		}
	}
	if len(dropped) > 0 {
		fmt.Fprintf(&b, "; dropped %s", strings.Join(dropped, ", "))
	}
	if s.WebSockets > 0 {
		fmt.Fprintf(&b, "; %s with %s", plural.Count(s.WebSockets, "WebSocket session"), plural.Count(s.WSMessages, "message"))
		if s.WSIgnored > 0 {
			fmt.Fprintf(&b, " (%d pongs and other frames not kept)", s.WSIgnored)
		}
	}
	if n := len(s.NoBody); n > 0 {
		list := make([]string, 0, 5)
		for _, e := range s.NoBody[:min(n, 5)] {
			list = append(list, strconv.Itoa(e))
		}
		more := ""
		if n > 5 {
			more = fmt.Sprintf(" and %d more", n-5)
		}
		fmt.Fprintf(&b, "; %s not captured, sent empty (entries %s%s)", plural.Count(n, "body"), strings.Join(list, ", "), more)
	}
	return b.String()
}

// Skip receives an entry that could not be converted: its number in the
// file (from 1) and why, a reason key then the detail:
// "cache: answered from the browser's cache (_fetchType "Memory Cache")".
type Skip func(entry int, why string)

// ReasonKey is the reason key that starts a Skip's why ("cache").
func ReasonKey(why string) string {
	key, _, _ := strings.Cut(why, ":")
	return key
}

// OffNetwork reports whether a Skip's why is an entry that never reached
// the network (a cache hit, a WebSocket, a local answer, status 0): not
// traffic to replay, rather than a request the import lost.
func OffNetwork(why string) bool {
	switch ReasonKey(why) {
	case "websocket", "cache", "local", "no-answer":
		return true
	}
	return false
}

// ParseError is a file that is not a HAR: where (line and column, from 1;
// the HAR path of the value, such as log.entries[129].request.postData)
// and why. Column counts characters.
type ParseError struct {
	Line, Column int
	Path         string
	Err          error
}

func (e *ParseError) Error() string {
	where := fmt.Sprintf("line %d, column %d", e.Line, e.Column)
	if e.Path != "" {
		where += ": " + e.Path
	}
	return where + ": " + e.Err.Error()
}

func (e *ParseError) Unwrap() error { return e.Err }

// Convert reads a HAR from r and writes its entries to w as RRPair lines,
// ordered by startedDateTime; pages become sessions. It reads in two
// passes: the first checks the JSON and keeps each entry's offset and time
// (24 bytes an entry), the second converts the entries in time order, one
// at a time. An input that cannot seek (a pipe) is first copied to a
// temporary file. A UTF-8 byte-order mark before the JSON is skipped.
func Convert(r io.Reader, w io.Writer, skip Skip) (Stats, error) {
	return ConvertWith(r, w, Options{}, skip)
}

// ConvertWith is Convert with options.
func ConvertWith(r io.Reader, w io.Writer, opt Options, skip Skip) (Stats, error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		if _, err := rs.Seek(0, io.SeekCurrent); err == nil {
			return convertSeeking(rs, w, opt, skip)
		}
	}
	tmp, err := os.CreateTemp("", "replay-har-*")
	if err != nil {
		return Stats{}, fmt.Errorf("copy the input to a temporary file: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if _, err := io.Copy(tmp, r); err != nil {
		return Stats{}, fmt.Errorf("copy the input to a temporary file: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return Stats{}, err
	}
	return convertSeeking(tmp, w, opt, skip)
}

// ref is what the first pass keeps of an entry: 24 bytes.
type ref struct {
	sec  int64 // startedDateTime, as Unix seconds
	off  int64 // where the entry starts (after the previous token)
	nsec int32 // and nanoseconds
	n    int32 // the entry's number
}

func (a ref) compare(b ref) int {
	return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.nsec, b.nsec))
}

var bom = []byte("\xef\xbb\xbf")

// convertSeeking is Convert over a seekable input.
func convertSeeking(r io.ReadSeeker, w io.Writer, opt Options, skip Skip) (Stats, error) {
	st := Stats{Skipped: map[string]int{}}
	base, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return st, err
	}
	var head [3]byte
	if n, _ := io.ReadFull(r, head[:]); n == 3 && bytes.Equal(head[:], bom) {
		base += 3
	}
	if _, err := r.Seek(base, io.SeekStart); err != nil {
		return st, err
	}
	s := &scan{r: r, base: base, dec: json.NewDecoder(r)}
	var refs []ref
	err = s.entries(func(n int, off int64, started json.RawMessage) error {
		st.Entries = n
		if n > math.MaxInt32 {
			return fmt.Errorf("entry %d: more entries than a file can be sorted with", n)
		}
		at, _ := parseStarted(str(started)) // a bad time is the second pass's to report
		refs = append(refs, ref{at.Unix(), off, int32(at.Nanosecond()), int32(n)})
		return nil
	})
	if err != nil {
		return st, err
	}
	slices.SortStableFunc(refs, ref.compare)
	c := &converter{st: &st, firefox: s.firefox, webSockets: opt.WebSockets}
	br := bufio.NewReader(r)
	for _, f := range refs {
		var e entry
		err := readAt(r, br, f.off, &e)
		var te *json.UnmarshalTypeError
		if err != nil && !errors.As(err, &te) {
			return st, fmt.Errorf("entry %d: %w", f.n, err)
		}
		raw := func() []byte {
			var raw json.RawMessage
			readAt(r, br, f.off, &raw) //nolint:errcheck // read whole before
			return raw
		}
		ok, why := c.entry(&e, err, raw, int(f.n))
		if !ok {
			st.Skipped[ReasonKey(why)]++
			skip(int(f.n), why)
			continue
		}
		if _, err := w.Write(c.line); err != nil {
			return st, err
		}
		st.Written++
	}
	return st, nil
}

// readAt reads the JSON value that follows offset off of r (after the
// previous token: a comma and spaces first) into v.
func readAt(r io.ReadSeeker, br *bufio.Reader, off int64, v any) error {
	start, err := valueStart(r, br, off)
	if err != nil {
		return err
	}
	if _, err := r.Seek(start, io.SeekStart); err != nil {
		return err
	}
	br.Reset(r)
	return json.NewDecoder(br).Decode(v)
}

// valueStart is where the value after offset off of r begins: past spaces
// and one comma or colon.
func valueStart(r io.ReadSeeker, br *bufio.Reader, off int64) (int64, error) {
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	br.Reset(r)
	sep := false
	for {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF {
				return off, nil
			}
			return 0, err
		}
		switch {
		case c == ' ' || c == '\n' || c == '\r' || c == '\t':
		case (c == ',' || c == ':') && !sep:
			sep = true
		default:
			return off, nil
		}
		off++
	}
}

// scan is the first pass: it walks the HAR's structure down to
// log.entries, reading each entry whole (which checks its JSON), and
// log.creator.
type scan struct {
	r       io.ReadSeeker
	base    int64 // where the JSON starts in r (after a byte-order mark)
	dec     *json.Decoder
	firefox bool // log.creator.name says Firefox
}

// pos is the offset in r where the decoder stands.
func (s *scan) pos() int64 { return s.base + s.dec.InputOffset() }

// entries calls fn for each entry of log.entries with its number (from 1),
// the offset where the previous token ended, and its startedDateTime.
func (s *scan) entries(fn func(n int, off int64, started json.RawMessage) error) error {
	if err := s.delim('{', "", "not a HAR: want an object"); err != nil {
		return err
	}
	found := false
	for s.dec.More() {
		key, err := s.key("")
		if err != nil {
			return err
		}
		if key != "log" {
			if err := s.skipValue(key); err != nil {
				return err
			}
			continue
		}
		found = true
		if err := s.log(fn); err != nil {
			return err
		}
	}
	if err := s.delim('}', "", "want the end of the HAR"); err != nil {
		return err
	}
	if !found {
		return s.errorAt(s.base, "", errors.New("not a HAR: no log"))
	}
	return nil
}

// log walks the log object.
func (s *scan) log(fn func(n int, off int64, started json.RawMessage) error) error {
	if err := s.delim('{', "log", "want an object"); err != nil {
		return err
	}
	for s.dec.More() {
		key, err := s.key("log")
		if err != nil {
			return err
		}
		switch key {
		case "entries":
			if err := s.delim('[', "log.entries", "want an array"); err != nil {
				return err
			}
			for n := 1; s.dec.More(); n++ {
				mark := s.pos()
				var e struct {
					StartedDateTime json.RawMessage `json:"startedDateTime"`
				}
				// The whole entry is read, which checks its JSON; a wrong
				// shape is the second pass's to report.
				var te *json.UnmarshalTypeError
				if err := s.dec.Decode(&e); err != nil && !errors.As(err, &te) {
					return s.fail(err, mark, fmt.Sprintf("log.entries[%d]", n-1))
				}
				if err := fn(n, mark, e.StartedDateTime); err != nil {
					return err
				}
			}
			if err := s.delim(']', "log.entries", "want the end of the entries"); err != nil {
				return err
			}
		case "creator":
			mark := s.pos()
			var c struct {
				Name json.RawMessage `json:"name"`
			}
			var raw json.RawMessage
			if err := s.dec.Decode(&raw); err != nil {
				return s.fail(err, mark, "log.creator")
			}
			json.Unmarshal(raw, &c) //nolint:errcheck // a creator of another shape says nothing
			s.firefox = strings.Contains(strings.ToLower(str(c.Name)), "firefox")
		default:
			if err := s.skipValue("log." + key); err != nil {
				return err
			}
		}
	}
	return s.delim('}', "log", "want the end of the log")
}

// key reads an object key, in the object at path.
func (s *scan) key(path string) (string, error) {
	mark := s.pos()
	t, err := s.dec.Token()
	if err != nil {
		return "", s.fail(err, mark, path)
	}
	k, ok := t.(string)
	if !ok {
		return "", s.errorAt(mark, path, fmt.Errorf("want a key, got %v", t))
	}
	return k, nil
}

// delim reads the delimiter want of the value at path, or fails with msg.
func (s *scan) delim(want json.Delim, path, msg string) error {
	mark := s.pos()
	t, err := s.dec.Token()
	if err != nil {
		return s.fail(err, mark, path)
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return s.errorAt(mark, path, fmt.Errorf("%s, got %s", msg, describe(t)))
	}
	return nil
}

// skipValue skips the value at path.
func (s *scan) skipValue(path string) error {
	mark := s.pos()
	var v json.RawMessage
	if err := s.dec.Decode(&v); err != nil {
		return s.fail(err, mark, path)
	}
	return nil
}

// describe names a JSON token for a message.
func describe(t json.Token) string {
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", t.String())
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "true or false"
	case nil:
		return "null"
	}
	return fmt.Sprint(t)
}

// Looks says whether head, the first bytes of a file, starts a HAR: a
// JSON object whose first key is "log", after a byte-order mark when a
// writer put one. For the sniffer, which tells formats apart.
func Looks(head []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(head, bom)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	tok, err := dec.Token()
	return err == nil && tok == "log"
}
