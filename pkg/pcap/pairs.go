package pcap

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/replay-dev/replay/internal/spool"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// pairs spools the pairs found, checked as Open would read them, and
// sorts them by request time at the end; it counts and logs what is not
// kept. Used from one goroutine.
type pairs struct {
	w      io.Writer
	opt    *Options
	st     *Stats
	skipFn Skip
	names  []string // of the files, when several were read
	sorted *spool.Sorter
	check  rrpair.Checker
	line   []byte
	seq    int64 // requests begun: the order of pairs with the same time
	err    error // the spool's first error: the conversion stops at it
}

func newPairs(w io.Writer, opt *Options, st *Stats, skip Skip, rs []*reader) *pairs {
	p := &pairs{w: w, opt: opt, st: st, skipFn: skip, sorted: spool.New()}
	if len(rs) > 1 {
		for _, r := range rs {
			p.names = append(p.names, r.name)
		}
	}
	return p
}

// skip counts and logs what was not kept: of kind, begun at at, why.
func (p *pairs) skip(at place, kind, why string, lost bool) {
	p.st.Skipped[kind]++
	file := ""
	if p.names != nil {
		file = p.names[at.src]
	}
	p.skipFn(file, at.packet, kind+": "+why, lost)
}

// next is the sequence number of a request begun now.
func (p *pairs) next() int64 {
	p.seq++
	return p.seq
}

// exchange is what pairs needs of a request and its answer besides the
// record: when and where it began, its order, when its answer ended.
type exchange struct {
	start int64 // the request's first byte, capture time
	end   int64 // the answer's last byte; 0: no answer
	at    place // the request's first packet
	seq   int64
	// lost says the answer was lost in the capture (a gap, the snap
	// length): the pair is written without it.
	lost bool
}

// write spools the pair r of connection c, of protocol proto ("HTTP/1.1",
// "HTTP/2", "gRPC"): the fields every pair shares are set here (time,
// duration, scheme, direction, session, the host when no header named
// one).
func (p *pairs) write(c *conn, r *rrpair.Record, x exchange, proto string) {
	r.TS = time.Unix(0, x.start).UTC()
	if x.end > x.start && r.Status != 0 {
		r.Duration = time.Duration(x.end - x.start)
	}
	r.Protocol = "http"
	if c.tl != nil {
		r.Protocol = "https"
	}
	r.Direction = c.direction
	switch {
	case r.Host != "":
	case c.tl != nil && c.tl.sni != "":
		r.Host = c.tl.sni // the name the client asked the server for
		if p := c.server().Port(); p != 443 {
			r.Host += ":" + strconv.Itoa(int(p))
		}
	default:
		r.Host = c.server().String() // "10.0.0.5:8080", "[2001:db8::5]:443"
	}
	r.Session = p.session(c, r)
	var err error
	p.line, err = p.check.AppendChecked(p.line[:0], r)
	if err != nil {
		p.skip(x.at, "invalid", err.Error(), true)
		return
	}
	p.st.Written++
	p.st.Kinds[proto+" "+c.direction]++
	if r.Status == 0 {
		p.st.NoAnswer++
		if x.lost {
			p.st.AnswerLost++
		}
	}
	if err := p.sorted.Add(x.start, x.seq, p.line); err != nil && p.err == nil {
		p.err = err
	}
}

// session is the session of a pair, as --session says.
func (p *pairs) session(c *conn, r *rrpair.Record) string {
	s := p.opt.Session
	switch s.Kind {
	case "none":
		return ""
	case "header":
		for _, h := range r.Headers {
			if strings.EqualFold(h.Name, s.Name) {
				return h.Value
			}
		}
		return ""
	case "cookie":
		return cookie(r.Headers, s.Name)
	}
	return c.session
}

// cookie is the value of the cookie called name among the Cookie header
// fields hs (HTTP/2 splits them into several), or "".
func cookie(hs []rrpair.Field, name string) string {
	for _, h := range hs {
		if !strings.EqualFold(h.Name, "cookie") {
			continue
		}
		for kv := range strings.SplitSeq(h.Value, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == name {
				return v
			}
		}
	}
	return ""
}

// flush writes the pairs, sorted by request time, to w.
func (p *pairs) flush() error {
	if err := p.sorted.Sort(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(p.w, 64<<10)
	var buf []byte
	for i := range p.sorted.Len() {
		line, err := p.sorted.Record(i, buf)
		if err != nil {
			return err
		}
		buf = line
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func (p *pairs) close() { p.sorted.Close() }
