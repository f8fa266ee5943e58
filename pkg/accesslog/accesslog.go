// Package accesslog converts web server access logs to RRPairs: nginx's
// and Apache's combined and common formats, a custom nginx log_format,
// and JSON logs (one object a line, as nginx writes with escape=json).
//
// A log line keeps the method, the raw request target, the status and the
// time; the host when the format has one; never headers or bodies. So the
// pairs replay each request's line and nothing of its headers or body,
// and the conversion says so. nginx escapes the bytes of a request line
// outside printable ASCII, and '"' and '\', as \xHH; they are undone, so
// the target goes out as the client sent it.
//
// Time: $time_local (and $time_iso8601) count whole seconds. The requests
// logged within one second are spread evenly across it (the k-th of n at
// second + k/n) so that a recorded pace keeps their order and rate. A log
// out of time order is sorted, stably. Lines are spooled (internal/spool),
// so memory holds 32 bytes a line.
package accesslog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/replay-dev/replay/internal/plural"
	"github.com/replay-dev/replay/internal/spool"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Options say how to read a log.
type Options struct {
	// Format reads the lines; nil: JSON when the first line is an object,
	// else combined (which reads common lines too).
	Format *Format
	// Host is the host of the lines whose log does not name one; "": such
	// lines replay with --target.
	Host string
}

// Stats say what a conversion did.
type Stats struct {
	Lines   int // lines read, empty ones aside
	Written int // pairs written
	// NotHTTP counts lines that hold no HTTP request: "-" (a connection
	// closed before its request line) or bytes that are not a request
	// line (a TLS handshake on a plain port, which nginx answers 400).
	NotHTTP int
	NoHost  int  // pairs written without a host (they replay with --target)
	Spread  int  // pairs whose time counts whole seconds, spread within theirs
	Sorted  bool // the log was out of time order, and was sorted
	Format  string
}

// Summary is the sentence that says what a conversion wrote, and what a
// log does not have: "7 lines (combined), 6 pairs written: method, target,
// time and status only (an access log keeps no headers or bodies); 1 line
// held no HTTP request ("-", or bytes that are no request line), not kept".
func (s Stats) Summary() string {
	b := fmt.Sprintf("%s (%s), %s written: method, target, time and status only (an access log keeps no headers or bodies)",
		plural.Count(s.Lines, "line"), s.Format, plural.Count(s.Written, "pair"))
	if s.NotHTTP > 0 {
		b += fmt.Sprintf("; %s held no HTTP request (\"-\", or bytes that are no request line), not kept", plural.Count(s.NotHTTP, "line"))
	}
	if s.Spread > 0 {
		b += fmt.Sprintf("; %d times of whole seconds spread within their second", s.Spread)
	}
	if s.Sorted {
		b += "; the log was out of time order: pairs sorted by time"
	}
	if s.NoHost > 0 {
		b += fmt.Sprintf("; %d without a host (replay them with --target, or import with --host)", s.NoHost)
	}
	return b
}

// NothingWritten says why no pair was written when the lines, rather than
// the skips, explain it: "none of the 3 lines holds an HTTP request"; else "".
func (s Stats) NothingWritten() string {
	if s.NotHTTP > 0 && s.NotHTTP == s.Lines {
		return fmt.Sprintf("none of the %d lines holds an HTTP request", s.Lines)
	}
	return ""
}

// Skip receives a line that could not be converted: its number (from 1)
// and why.
type Skip func(line int, why string)

// errNotHTTP marks a line that holds no HTTP request.
var errNotHTTP = errors.New("not an HTTP request")

// timeLocal is $time_local's layout (Apache's %t, within its brackets).
const timeLocal = "02/Jan/2006:15:04:05 -0700"

// Convert reads a log from r (gzip-compressed or not) and writes a pair
// for each request line to w, in time order.
func Convert(r io.Reader, w io.Writer, opt Options, skip Skip) (Stats, error) {
	var st Stats
	if err := CheckHost(opt.Host); err != nil {
		return st, err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return st, fmt.Errorf("gzip: %w", err)
		}
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	if opt.Format == nil {
		first, _ := br.Peek(1)
		name := "combined"
		if len(first) == 1 && first[0] == '{' {
			name = "json"
		}
		opt.Format, _ = ParseFormat(name)
	}
	st.Format = opt.Format.name
	c := &converter{opt: opt, st: &st, skip: skip, sorted: spool.New(), fields: map[string][]byte{}, last: -1 << 63}
	defer c.sorted.Close()
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if e := c.first(n, line); e != nil {
				return st, e
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
	}
	if err := c.sorted.Sort(); err != nil {
		return st, err
	}
	return st, c.second(w)
}

// CheckHost checks Options.Host as a traffic file's host is checked.
func CheckHost(host string) error {
	if host == "" {
		return nil
	}
	if _, err := rrpair.AppendChecked(nil, &rrpair.Record{Method: "GET", URI: "/", Host: host}); err != nil {
		return fmt.Errorf("%q: want HOST or HOST:PORT", host)
	}
	return nil
}

// converter turns lines into pairs.
type converter struct {
	opt    Options
	st     *Stats
	skip   Skip
	sorted *spool.Sorter // the lines kept, by time
	last   int64         // the latest time read: an earlier one means the log is out of order
	fields map[string][]byte
	out    []byte
}

// entry is one line read.
type entry struct {
	rec    rrpair.Record
	coarse bool // the time counts whole seconds
}

// first reads a line, checks what it would write, and spools the line
// under its time.
func (c *converter) first(n int, line []byte) error {
	st := c.st
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	st.Lines++
	e, err := c.parse(line)
	if errors.Is(err, errNotHTTP) {
		st.NotHTTP++
		return nil
	}
	if err != nil {
		c.skip(n, err.Error())
		return nil
	}
	if c.out, err = rrpair.AppendChecked(c.out[:0], &e.rec); err != nil {
		c.skip(n, err.Error())
		return nil
	}
	key := e.rec.TS.UnixNano()
	if key < c.last {
		st.Sorted = true
	}
	c.last = max(c.last, key)
	return c.sorted.Add(key, int64(n), line)
}

// second writes the spooled lines in time order, the ones of a coarse
// time spread within their second.
func (c *converter) second(w io.Writer) error {
	st, sorted := c.st, c.sorted
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf []byte
	run, of := 0, 0 // the line's place in its second's run, and the run's length
	for i := 0; i < sorted.Len(); i++ {
		line, err := sorted.Record(i, buf)
		if err != nil {
			return err
		}
		buf = line
		e, err := c.parse(line)
		if err != nil {
			return fmt.Errorf("a line read before no longer parses: %w", err) // cannot happen: the same parse
		}
		if i == 0 || sorted.Key(i) != sorted.Key(i-1) {
			run, of = 0, 1
			for j := i + 1; j < sorted.Len() && sorted.Key(j) == sorted.Key(i); j++ {
				of++
			}
		}
		if e.coarse {
			e.rec.TS = e.rec.TS.Add(time.Duration(int64(run) * int64(time.Second) / int64(of)))
			st.Spread++
		}
		run++
		if c.out, err = rrpair.AppendChecked(c.out[:0], &e.rec); err != nil {
			return err
		}
		if _, err := bw.Write(c.out); err != nil {
			return err
		}
		st.Written++
		if e.rec.Host == "" && !strings.HasPrefix(e.rec.URI, "http") {
			st.NoHost++
		}
	}
	return bw.Flush()
}

// getter returns the value of the first field named that the line has.
type getter func(names ...string) ([]byte, bool)

// parse reads a line into a pair.
func (c *converter) parse(line []byte) (entry, error) {
	get, err := c.read(line)
	if err != nil {
		return entry{}, err
	}
	keys := c.opt.Format.keys()
	if req, ok := get(keys.Request...); ok && string(req) == "-" {
		return entry{}, errNotHTTP // a connection closed before its request line
	}
	get = dashless(get)
	var e entry
	if e.rec.Method, e.rec.URI, e.rec.Version, err = request(get, keys); err != nil {
		return e, err
	}
	ts, ok := get(keys.Time...)
	if !ok {
		return e, errors.New("no time")
	}
	if e.rec.TS, e.coarse, err = parseTime(string(ts)); err != nil {
		return e, err
	}
	c.optional(&e, get, keys)
	return e, nil
}

// optional fills the fields a line may leave out: status (only 100-599),
// host (else the one given), scheme (http or https) and duration.
func (c *converter) optional(e *entry, get getter, keys *JSONFields) {
	if status, ok := get(keys.Status...); ok { // else, or not 100-599: no recorded status
		if n, err := strconv.Atoi(string(status)); err == nil && n >= 100 && n <= 599 {
			e.rec.Status = n
		}
	}
	e.rec.Host = c.opt.Host
	if host, ok := get(keys.Host...); ok && len(host) > 0 {
		e.rec.Host = string(host)
	}
	if s, ok := get(keys.Scheme...); ok && (string(s) == "http" || string(s) == "https") {
		e.rec.Protocol = string(s)
	}
	e.rec.Duration = duration(get, keys, e.rec.Duration)
}

// duration is the line's positive duration: its duration field in seconds,
// else Apache's %D in microseconds; def when neither is read.
func duration(get getter, keys *JSONFields, def time.Duration) time.Duration {
	if d, ok := get(keys.Duration...); ok {
		if secs, err := strconv.ParseFloat(string(d), 64); err == nil && secs > 0 {
			return time.Duration(secs * float64(time.Second))
		}
	} else if d, ok := get("request_time_us"); ok { // Apache's %D
		if us, err := strconv.ParseInt(string(d), 10, 64); err == nil && us > 0 {
			return time.Duration(us) * time.Microsecond
		}
	}
	return def
}

// read reads a line's fields, as its format says, into c.fields.
func (c *converter) read(line []byte) (getter, error) {
	clear(c.fields)
	f := c.opt.Format
	if f.json != nil {
		if err := parseJSONLine(line, c.fields); err != nil {
			return nil, err
		}
		return func(keys ...string) ([]byte, bool) { return lookup(c.fields, keys) }, nil
	}
	if err := f.matchText(line, c.fields); err != nil {
		return nil, fmt.Errorf("not %s: %w", f.describe(), err)
	}
	return func(names ...string) ([]byte, bool) {
		v, ok := lookup(c.fields, names)
		return unescape(v), ok
	}, nil
}

// request reads the request line, or the method, target and protocol.
func request(get getter, keys *JSONFields) (method, target, version string, err error) {
	if req, ok := get(keys.Request...); ok {
		return requestLine(req)
	}
	m, okM := get(keys.Method...)
	uri, okU := get(keys.URI...)
	if !okM || !okU {
		return "", "", "", errors.New("no request: neither the request line nor method and target")
	}
	line := string(m) + " " + string(uri)
	if proto, _ := get(keys.Protocol...); len(proto) > 0 {
		line += " " + string(proto)
	}
	return requestLine([]byte(line))
}

// dashless treats a field logged as "-" (nginx's and Apache's empty
// value) as absent.
func dashless(get getter) getter {
	return func(names ...string) ([]byte, bool) {
		v, ok := get(names...)
		return v, ok && string(v) != "-"
	}
}

// textKeys are the variables a text format's fields come from.
var textKeys = &JSONFields{
	Request:  []string{"request"},
	Method:   []string{"request_method"},
	URI:      []string{"request_uri"},
	Time:     []string{"time_local", "time_iso8601", "msec"},
	Status:   []string{"status"},
	Host:     []string{"http_host", "host"},
	Duration: []string{"request_time"},
	Scheme:   []string{"scheme"},
	Protocol: []string{"server_protocol"},
}

func (f *Format) keys() *JSONFields {
	if f.json != nil {
		return f.json
	}
	return textKeys
}

func (f *Format) describe() string {
	if f.name == "combined" || f.name == "common" {
		return "a " + f.name + " log line"
	}
	return "a line of the format"
}

// requestLine splits "METHOD TARGET HTTP/x.y" (the target may hold
// spaces; HTTP/0.9's "METHOD TARGET" has no version). A line that is no
// request at all is errNotHTTP; a request replay cannot send (CONNECT's
// authority) says why.
func requestLine(b []byte) (method, target, version string, err error) {
	s := string(b)
	if s == "" || s == "-" {
		return "", "", "", errNotHTTP
	}
	m, rest, ok := strings.Cut(s, " ")
	if !ok || !rrpair.ValidToken([]byte(m)) {
		return "", "", "", errNotHTTP
	}
	if i := strings.LastIndexByte(rest, ' '); i >= 0 && strings.HasPrefix(rest[i+1:], "HTTP/") {
		rest, version = rest[:i], strings.TrimPrefix(rest[i+1:], "HTTP/")
		switch version {
		case "2.0":
			version = "2"
		case "3.0":
			version = "3"
		}
	}
	switch {
	case rest == "":
		return "", "", "", errNotHTTP
	case strings.HasPrefix(rest, "/") || rest == "*" || strings.HasPrefix(rest, "http://") || strings.HasPrefix(rest, "https://"):
		return m, rest, version, nil
	case m == "CONNECT":
		return "", "", "", fmt.Errorf("CONNECT %s: a tunnel, not a request replay can send", rest)
	}
	return "", "", "", fmt.Errorf("request target %q: want a path or an absolute http(s) URL", rest)
}

// unescape undoes the escapes of a text log: nginx's \xHH, and Apache's
// \" \\ \n \r \t \v \b; a backslash before anything else stays.
func unescape(v []byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 {
		return v
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 == len(v) {
			out = append(out, c)
			continue
		}
		switch e := v[i+1]; e {
		case 'x':
			if i+3 < len(v) && hexVal(v[i+2]) >= 0 && hexVal(v[i+3]) >= 0 {
				out = append(out, byte(hexVal(v[i+2])<<4|hexVal(v[i+3])))
				i += 3
				continue
			}
			out = append(out, c)
		case '"', '\\':
			out = append(out, e)
			i++
		case 'n', 'r', 't', 'v', 'b':
			out = append(out, "\n\r\t\v\b"[strings.IndexByte("nrtvb", e)])
			i++
		default:
			out = append(out, c)
		}
	}
	return out
}

// parseTime reads $time_local, RFC 3339 ($time_iso8601, @timestamp) or
// epoch seconds ($msec); coarse says the time counts whole seconds.
func parseTime(s string) (t time.Time, coarse bool, err error) {
	if t, err := time.Parse(timeLocal, s); err == nil {
		return t, true, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, !strings.Contains(s, "."), nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil && secs > 1e8 {
		whole, frac, _ := strings.Cut(s, ".")
		sec, _ := strconv.ParseInt(whole, 10, 64)
		ns := int64(0)
		if frac != "" {
			frac = (frac + "000000000")[:9]
			ns, _ = strconv.ParseInt(frac, 10, 64)
		}
		return time.Unix(sec, ns), frac == "", nil
	}
	return time.Time{}, false, fmt.Errorf("time %q: want $time_local (02/Jan/2006:15:04:05 -0700), RFC 3339 or epoch seconds", s)
}

// Looks says whether line is a line of an access log (combined, common,
// a JSON object with a request and a status and no "http" of an RRPair,
// or "custom": another text line with a quoted request line), and which:
// for the sniffer, which tells formats apart.
func Looks(line []byte) (format string, ok bool) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > 0 && line[0] == '{' {
		obj := map[string][]byte{}
		if parseJSONLine(line, obj) != nil || hasPrefixKey(obj, "http.") {
			return "", false
		}
		k := DefaultJSONFields()
		_, req := lookup(obj, append(k.Request, k.URI...))
		if _, status := lookup(obj, k.Status); !req || !status {
			return "", false
		}
		return "json", true
	}
	for _, name := range []string{"combined", "common"} {
		f, _ := ParseFormat(name)
		if matchParts(f.texts[0], line, map[string][]byte{}, true) == nil {
			return name, true
		}
	}
	if quotedRequest.Match(line) {
		return "custom", true
	}
	return "", false
}

// quotedRequest is a request line in quotes, as text logs write it.
var quotedRequest = regexp.MustCompile(`"[!#$%&'*+.^_|~0-9A-Za-z-]+ [^ "]+ HTTP/[0-9.]+"`)

func hasPrefixKey(obj map[string][]byte, prefix string) bool {
	for k := range obj {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
