package mock

import (
	"bytes"
	"strconv"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/valyala/fasthttp"
)

// An HTTP/1.1 answer goes out with its recorded head as it was: every
// field in its recorded order and spelling, Date included (fasthttp
// drops a Date it is given, and puts Server, Content-Type and
// Content-Length first and Set-Cookie last). The handler queues the head
// and body it wants on its connection (heads) and tells fasthttp to send
// an empty answer of the same status; the connection's writes then put
// the queued answer in the place of fasthttp's head, keeping only the
// Connection field fasthttp decided (close, or keep-alive for HTTP/1.0).
// fasthttp's own answers (a malformed request's 400) go through as they
// are: no answer is queued for them. One goroutine serves a connection's
// requests and writes their answers, so the queue needs no lock.

// heads is a connection's queue of answers to put in place of fasthttp's
// heads.
type heads struct {
	buf      []byte // the queued answers back to back: head (no Connection field, no blank line), body
	ends     []headEnd
	next     int    // the first answer not yet written
	dropping bool   // fasthttp's head is being read (and dropped)
	fh       []byte // fasthttp's head so far
	out      []byte
}

type headEnd struct{ head, body int }

var crlf2 = []byte("\r\n\r\n")

// queue adds an answer: status, fields (a Content-Length field is
// written where it was recorded, with the length sent; a HEAD's recorded
// one as it is), body (not sent for a HEAD request).
func (q *heads) queue(status int, fields []rrpair.Header, body []byte, head bool) {
	b := append(q.buf, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, fasthttp.StatusMessage(status)...)
	b = append(b, "\r\n"...)
	framed := status < 200 || status == 204 || status == 304
	lengthSent := framed
	for _, h := range fields {
		if rrpair.EqualFold(h.Name, "content-length") {
			if lengthSent {
				continue
			}
			lengthSent = true
			b = append(append(b, h.Name...), ": "...)
			if head && len(body) == 0 {
				b = append(append(b, h.Value...), "\r\n"...) // a HEAD's: the length its GET would send, as recorded
				continue
			}
			b = append(strconv.AppendInt(b, int64(len(body)), 10), "\r\n"...)
			continue
		}
		b = append(append(append(append(b, h.Name...), ": "...), h.Value...), "\r\n"...)
	}
	if !lengthSent {
		b = append(append(b, "Content-Length: "...), strconv.AppendInt(nil, int64(len(body)), 10)...)
		b = append(b, "\r\n"...)
	}
	he := headEnd{head: len(b)}
	if !head && !framed {
		b = append(b, body...)
	}
	he.body = len(b)
	q.buf = b
	q.ends = append(q.ends, he)
}

// pending reports whether a write must be looked at.
func (q *heads) pending() bool { return q.dropping || q.next < len(q.ends) }

// rewrite is p, what fasthttp writes, with the queued answers in the
// place of its heads.
func (q *heads) rewrite(p []byte) []byte {
	q.out = q.out[:0]
	for len(p) > 0 {
		if !q.dropping {
			if q.next == len(q.ends) {
				q.out = append(q.out, p...) // an answer of fasthttp's own
				break
			}
			q.dropping, q.fh = true, q.fh[:0]
		}
		start := len(q.fh)
		q.fh = append(q.fh, p...)
		from := max(0, start-3)
		k := bytes.Index(q.fh[from:], crlf2)
		if k < 0 {
			break // all of p belongs to fasthttp's head
		}
		end := from + k + len(crlf2)
		p = p[end-start:]
		q.fh = q.fh[:end]
		q.emit()
		q.dropping = false
	}
	if !q.pending() {
		q.buf, q.ends, q.next = q.buf[:0], q.ends[:0], 0
	}
	return q.out
}

// emit writes the next queued answer, with the Connection fields of
// fasthttp's head q.fh.
func (q *heads) emit() {
	begin := 0
	if q.next > 0 {
		begin = q.ends[q.next-1].body
	}
	e := q.ends[q.next]
	q.next++
	q.out = append(q.out, q.buf[begin:e.head]...)
	for rest := q.fh; len(rest) > 0; {
		line, after, _ := bytes.Cut(rest, []byte("\r\n"))
		rest = after
		if len(line) > len("connection:") && rrpair.EqualFold(line[:len("connection:")], "connection:") {
			q.out = append(append(q.out, line...), "\r\n"...)
		}
	}
	q.out = append(q.out, "\r\n"...)
	q.out = append(q.out, q.buf[e.head:e.body]...)
}
