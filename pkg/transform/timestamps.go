package transform

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// TimestampSpec configures the timestamp shift: every timestamp found in a
// request moves by (now − the pair's recorded ts), written as it was
// written (RFC 3339 with its offset and fraction digits, epoch seconds,
// epoch milliseconds).
//
//   - timestamps:
//     auto: true         # find them: RFC 3339 strings, 10/13-digit numbers near ts
//     window: 24h        # how near (auto only)
//     json: [sent_at, items.*.ts]
//     query: [since]
//     headers: [X-Request-Time]
type TimestampSpec struct {
	// Auto finds timestamps in every header value, query value and JSON
	// body value: RFC 3339 strings, and 10- or 13-digit numbers (epoch s,
	// ms), that lie within Window of the recorded ts.
	Auto   bool          `yaml:"auto"`
	Window time.Duration `yaml:"window"`
	// Named locations are shifted whatever their distance from ts.
	JSON    []string `yaml:"json"`
	Query   []string `yaml:"query"`
	Headers []string `yaml:"headers"`
}

// DefaultWindow is how far from the recorded ts an automatically found
// timestamp may lie.
const DefaultWindow = 24 * time.Hour

type timestamps struct {
	auto    bool
	window  int64
	paths   []jsonPath
	query   [][]byte
	headers [][]byte
}

func newTimestamps(s *TimestampSpec) (*timestamps, error) {
	if !s.Auto && len(s.JSON)+len(s.Query)+len(s.Headers) == 0 {
		return nil, fmt.Errorf("nothing to shift: set auto: true, or name json, query or headers")
	}
	if s.Window < 0 {
		return nil, fmt.Errorf("window: want a positive duration such as 24h, got %s", s.Window)
	}
	t := &timestamps{auto: s.Auto, window: int64(s.Window), query: toBytes(s.Query), headers: toBytes(s.Headers)}
	if t.window == 0 {
		t.window = int64(DefaultWindow)
	}
	var err error
	if t.paths, err = parseJSONPaths(s.JSON, "sent_at or items.*.ts"); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *timestamps) name() string { return "timestamps" }

// shift is one request's shift: the recorded time and how far to move.
type shift struct {
	rec, delta, window int64
}

func (t *timestamps) apply(c *call) {
	rec, ok := c.pair.UnixNano()
	if !ok {
		c.failed = true // no recorded ts: nothing to shift from
		return
	}
	sh := shift{rec: rec, delta: c.now - rec, window: t.window}
	req := c.req
	buf := c.buf(0)
	*buf = (*buf)[:0]
	for i := range req.Headers {
		h := &req.Headers[i]
		named := containsFold(t.headers, h.Name)
		if !named && !t.auto {
			continue
		}
		if v, ok := sh.apply(buf, h.Value, named); ok {
			h.Value = v
			c.changed = true
		}
	}
	if len(t.query) > 0 || t.auto {
		if uri, ok := t.shiftQuery(c, sh); ok {
			req.URI = uri
			c.changed = true
		}
	}
	if (t.auto || len(t.paths) > 0) && c.bodyAllowed() && isJSON(req.Body) {
		st := &c.st.ts
		st.t, st.sh, st.spans, st.ends = t, sh, st.spans[:0], st.ends[:0]
		st.repl = c.buf(1)
		*st.repl = (*st.repl)[:0]
		if c.st.walker.walk(req.Body, st) && len(st.spans) > 0 {
			out := c.buf(2)
			*out = splice((*out)[:0], req.Body, st.resolve())
			req.Body = *out
			c.changed = true
		}
	}
}

// shiftQuery shifts the query values of the request's URI into a buffer of
// its own; ok is false when none changed.
func (t *timestamps) shiftQuery(c *call, sh shift) ([]byte, bool) {
	out, tmp := c.buf(3), c.buf(4)
	return rewriteQuery(out, c.req.URI, func(name, value []byte) bool {
		named := containsExact(t.query, name)
		if !named && !t.auto {
			return false
		}
		raw, escaped := UnescapeQuery((*tmp)[:0], value)
		*tmp = (*tmp)[:0]
		if escaped {
			*tmp = raw // never keep value itself: it may be the read-only mapping
		}
		v, ok := sh.apply(tmp, raw, named) // after raw, in tmp
		if !ok {
			return false
		}
		*out = escapeQuery(*out, v, value)
		return true
	})
}

// apply shifts v if it is a timestamp (within the window unless named),
// appending the new value to buf and returning it.
func (sh shift) apply(buf *[]byte, v []byte, named bool) ([]byte, bool) {
	start := len(*buf)
	if len(v) >= 20 {
		st, ok := rrpair.ParseRFC3339(v)
		if !ok || !named && !sh.near(st.UnixNano) {
			return nil, false
		}
		*buf = st.AppendRFC3339(*buf, st.UnixNano+sh.delta)
		return (*buf)[start:], true
	}
	if len(v) != 10 && len(v) != 13 {
		return nil, false
	}
	n, ok := digits(v)
	if !ok {
		return nil, false
	}
	unit := int64(time.Second)
	if len(v) == 13 {
		unit = int64(time.Millisecond)
	}
	if !named && !sh.near(n*unit) {
		return nil, false
	}
	shifted := n + floorDiv(sh.delta, unit)
	*buf = appendDigits(*buf, shifted, len(v))
	if len(*buf)-start != len(v) {
		*buf = (*buf)[:start] // out of the range of that many digits
		return nil, false
	}
	return (*buf)[start:], true
}

func (sh shift) near(ns int64) bool {
	d := ns - sh.rec
	return d <= sh.window && d >= -sh.window
}

// tsState is a VU's walk over a JSON body: the spans to replace, their new
// values in repl.
type tsState struct {
	t     *timestamps
	sh    shift
	spans []span
	ends  []int // end of each span's value in repl
	repl  *[]byte
}

func (s *tsState) visit(w *jsonWalker, start, end int) bool {
	named := atAny(s.t.paths, w)
	if !named && !s.t.auto {
		return true
	}
	v, quoted := w.data[start:end], false
	if v[0] == '"' {
		v, quoted = v[1:len(v)-1], true
		start, end = start+1, end-1
	}
	if quoted && bytes.IndexByte(v, '\\') >= 0 {
		return true
	}
	if _, ok := s.sh.apply(s.repl, v, named); ok {
		s.spans = append(s.spans, span{start: start, end: end})
		s.ends = append(s.ends, len(*s.repl))
	}
	return true
}

// resolve points each span at its value, now that repl has stopped growing.
func (s *tsState) resolve() []span {
	at := 0
	for i := range s.spans {
		s.spans[i].repl = (*s.repl)[at:s.ends[i]]
		at = s.ends[i]
	}
	return s.spans
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func digits(b []byte) (int64, bool) {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// appendDigits appends n (not negative) zero-padded to width digits.
func appendDigits(dst []byte, n int64, width int) []byte {
	if n < 0 {
		return append(dst, '-') // never the right width: the caller refuses it
	}
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], n, 10)
	for i := len(digits); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}
