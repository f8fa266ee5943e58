package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replay-dev/replay/internal/h2serve"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

// tunnel is what an HTTP/2 connection inside a CONNECT tunnel carries to
// its streams' handler. It counts the handlers under way, which its
// connection waits for before it gives its slot back (serveTunnel): a
// client that opens connection after connection, each full of streams,
// holds no more handlers than its connections hold, and Close finds no
// exchange still using the upstream pool or the writer it closes.
type tunnel struct {
	scheme, authority, session string

	mu       sync.Mutex
	idle     sync.Cond // signalled when handlers falls to 0
	handlers int
	over     bool // the connection is done: a handler that starts now returns at once
}

// enter counts a handler in; false when the connection is done.
func (tn *tunnel) enter() bool {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if tn.over {
		return false
	}
	tn.handlers++
	return true
}

// leave counts a handler out.
func (tn *tunnel) leave() {
	tn.mu.Lock()
	if tn.handlers--; tn.handlers == 0 {
		tn.idle.Broadcast()
	}
	tn.mu.Unlock()
}

// wait marks the connection done and waits for its handlers to return.
func (tn *tunnel) wait() {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	tn.over = true
	for tn.handlers > 0 {
		tn.idle.Wait()
	}
}

// exchangeH2 makes one HTTP/2 stream's exchange again (a client of the
// pool: HTTP/2 to an upstream that takes it, which a gRPC call needs) and
// records it.
func (p *Proxy) exchangeH2(w http.ResponseWriter, r *http.Request) {
	tn, _ := h2serve.Value(r).(*tunnel)
	if tn == nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if !tn.enter() {
		return
	}
	defer tn.leave()
	if r.Context().Err() != nil { // reset (or its connection gone) before it was handled: nothing to pass on
		return
	}
	scheme, authority, session := tn.scheme, tn.authority, tn.session
	seq, start := p.w.BeginAt()
	// The body is read whole to be sent again (the pool sends a body it
	// holds), so at most MaxBody of it, each read within the idle timeout:
	// a larger one is refused with 413, not passed on.
	body, err := p.readH2Body(w, r)
	if err != nil {
		p.fail(seq)
		if errors.Is(err, errTooLarge) {
			p.stats.large.Add(1)
			msg := fmt.Sprintf("replay record --forward: an HTTP/2 request body over --max-body (%d bytes) is not passed on", p.opt.MaxBody)
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			io.WriteString(w, msg)
		}
		return
	}
	if r.Context().Err() != nil { // reset while its body came
		p.fail(seq)
		return
	}
	reqFields, reqHeaders := h2Headers(r.Header)
	if done, err := p.viaH1(w, r, reqFields, body, tn, seq, start); done {
		if err != nil {
			p.fail(seq)
		}
		return
	}
	req := rrpair.Request{Method: []byte(r.Method), URI: []byte(r.RequestURI), Host: []byte(authority),
		Scheme: []byte(scheme), Headers: reqHeaders, Body: body}
	pair := rrpair.Pair{Req: req, Version: []byte("2")}
	reply, err := p.fwd.pool.DoContext(r.Context(), &req, &pair) // cut when the client resets the stream or goes
	if err != nil {
		p.fail(seq)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "replay record --forward: "+authority+": "+err.Error())
		return
	}
	end := time.Now()
	status, resHeaders, trailers, resBody := reply.Status, reply.Headers, reply.Trailers, reply.Body
	writeH2Answer(w, status, resHeaders, trailers, resBody)
	rec := &rrpair.Record{Version: "2", Method: r.Method, URI: r.RequestURI, Headers: reqFields, Body: body,
		Status: status, ResHeaders: dropConnection(resHeaders), ResTrailers: trailers, ResBody: resBody}
	p.record(seq, rec, exchange{start: start, end: end, session: session, host: authority, scheme: scheme, direction: "OUT"})
}

var errTooLarge = errors.New("body too large")

// h2OrH1 is what the first connection to a host offers, to learn which
// of the two it speaks.
var h2OrH1 = conn.Protocols{ALPN: []string{"h2", "http/1.1"}}

// viaH1 makes an HTTP/2 stream's exchange again over HTTP/1.1 when the
// host speaks HTTP/1.1 (ALPN), its answer streamed back and read as it
// came: header names in the host's spelling and order, which the pool's
// client does not keep (Etag for ETag). done is false, nothing sent,
// when the host speaks HTTP/2 (remembered for its next calls): the pool
// makes the exchange then. A failure before the answer is a 502; done
// and err say the exchange failed.
func (p *Proxy) viaH1(w http.ResponseWriter, r *http.Request, headers []rrpair.Field, body []byte, tn *tunnel, seq int64, start time.Time) (done bool, err error) {
	if _, h2 := p.fwd.h2hosts.Load(tn.authority); h2 {
		return false, nil
	}
	u := p.fwd.getUpstream()
	// Cut when the client resets the stream or goes (a flood of streams
	// reset at once holds nothing on the way to the host); an upstream
	// cut so is spent (a Line's Interrupt is for good).
	stop := context.AfterFunc(r.Context(), u.line.Interrupt)
	defer func() {
		if stop() {
			p.fwd.putUpstream(u)
		} else {
			u.line.Close()
		}
	}()
	dst := u.line.Route(&rrpair.Request{Scheme: []byte(tn.scheme), Host: []byte(tn.authority)})
	var res result.Result
	cn, _, kind := u.line.Connect(&dst, &res, &h2OrH1, nil)
	if kind != result.ErrNone {
		_, err := u.line.Failure()
		return h2BadGateway(w, tn, fmt.Errorf("%s %s: %w", kind, dst.Addr, err))
	}
	if cn.Proto == "h2" {
		p.fwd.h2hosts.Store(tn.authority, true)
		u.line.Drop(nil)
		return false, nil
	}
	u.use(cn)
	writeH1Request(u, r, tn, headers, body)
	if err := u.bw.Flush(); err != nil {
		u.line.Drop(err)
		return h2BadGateway(w, tn, err)
	}
	m, f, err := readFinalHead(u)
	if err != nil {
		u.line.Drop(err)
		return h2BadGateway(w, tn, err)
	}
	writeH1AnswerHead(w, m)
	kept := rawhttp.Body{Max: p.opt.MaxBody}
	if err := m.CopyBody(io.Discard, u.br, f, r.Method, io.MultiWriter(w, &kept)); err != nil {
		u.line.Drop(err)
		return true, err
	}
	u.line.Idle(unixNano())
	if m.Close {
		u.line.Drop(nil)
	}
	rec := &rrpair.Record{Version: "2", Method: r.Method, URI: r.RequestURI, Headers: headers, Body: body,
		Status: m.Status, ResHeaders: dropConnection(m.Headers), ResBody: kept.Kept}
	if kept.Cut() {
		rec.ResBodyCut = kept.Size
	}
	p.record(seq, rec, exchange{start: start, end: time.Now(), session: tn.session, host: tn.authority, scheme: tn.scheme, direction: "OUT"})
	return true, nil
}

// h2BadGateway answers 502, saying why the exchange with the host failed,
// and returns viaH1's done and err for it.
func h2BadGateway(w http.ResponseWriter, tn *tunnel, err error) (bool, error) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusBadGateway)
	io.WriteString(w, "replay record --forward: "+tn.authority+": "+err.Error())
	return true, err
}

// writeH1Request buffers the HTTP/2 request as HTTP/1.1 on u: its request
// line and Host, its fields but those of the connection (its cookie fields
// as one line), a Content-Length when it has a body or its method takes
// one, and the body.
func writeH1Request(u *upstream, r *http.Request, tn *tunnel, headers []rrpair.Field, body []byte) {
	u.bw.WriteString(r.Method + " " + r.RequestURI + " HTTP/1.1\r\nHost: " + tn.authority + "\r\n")
	var cookies []string // HTTP/2's cookie fields, one line over HTTP/1.1 (RFC 9113 8.2.3)
	for _, h := range headers {
		switch {
		case h.Name == "cookie":
			cookies = append(cookies, h.Value)
		case h.Name != "host" && h.Name != "content-length" && !rrpair.ConnectionHeader(h.Name) && h.Name != "te":
			u.bw.WriteString(h.Name + ": " + h.Value + "\r\n")
		}
	}
	if len(cookies) > 0 {
		u.bw.WriteString("cookie: " + strings.Join(cookies, "; ") + "\r\n")
	}
	if len(body) > 0 || r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH" {
		u.bw.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	}
	u.bw.WriteString("\r\n")
	u.bw.Write(body)
}

// readFinalHead reads the host's answer head, past its interim answers,
// which are not passed on over HTTP/2 here.
func readFinalHead(u *upstream) (*rawhttp.Message, rawhttp.Framing, error) {
	for {
		m, f, err := rawhttp.ReadHead(u.br, false)
		if err != nil {
			return m, f, err
		}
		if m.Status/100 != 1 || m.Status == 101 {
			return m, f, nil
		}
	}
}

// writeH1AnswerHead writes the host's answer head on the stream: its
// fields but those of the connection, and no Content-Type or Date of
// the server's own when the host sent none.
func writeH1AnswerHead(w http.ResponseWriter, m *rawhttp.Message) {
	wh := w.Header()
	for _, h := range m.Headers {
		if !rrpair.ConnectionHeader(h.Name) {
			wh.Add(h.Name, h.Value)
		}
	}
	for _, name := range []string{"Content-Type", "Date"} {
		if _, ok := wh[name]; !ok {
			wh[name] = nil // written by nobody
		}
	}
	w.WriteHeader(m.Status)
}

// readH2Body reads r's body, at most MaxBody bytes (errTooLarge past
// them), each read within the idle timeout.
func (p *Proxy) readH2Body(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	var body []byte
	buf := make([]byte, 32<<10)
	for {
		rc.SetReadDeadline(time.Now().Add(p.opt.IdleTimeout))
		n, err := r.Body.Read(buf)
		if int64(len(body)+n) > p.opt.MaxBody {
			return nil, errTooLarge
		}
		body = append(body, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return body, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// writeH2Answer writes an answer to an HTTP/2 stream: its headers as they
// came (nothing sniffed or added: no Content-Type, no Date of the
// proxy's), the body, then the trailers.
func writeH2Answer(w http.ResponseWriter, status int, headers, trailers []rrpair.Field, body []byte) {
	wh := w.Header()
	for _, h := range headers {
		if !rrpair.ConnectionHeader(h.Name) {
			wh.Add(h.Name, h.Value)
		}
	}
	for _, name := range []string{"Content-Type", "Date"} {
		if _, ok := wh[name]; !ok {
			wh[name] = nil // written by nobody
		}
	}
	w.WriteHeader(status)
	w.Write(body)
	for _, t := range trailers {
		wh.Add(http.TrailerPrefix+t.Name, t.Value)
	}
}

// h2Headers are an HTTP/2 request's header fields as recorded: names
// lower-case (as they went on the wire), in name order (the server's map
// kept no order), the values of a name in their order; as a Record holds
// them, and as a Request sends them.
func h2Headers(h http.Header) ([]rrpair.Field, []rrpair.Header) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	var fs []rrpair.Field
	var hs []rrpair.Header
	for _, name := range names {
		lower := strings.ToLower(name)
		for _, v := range h[name] {
			fs = append(fs, rrpair.Field{Name: lower, Value: v})
			hs = append(hs, rrpair.Header{Name: []byte(lower), Value: []byte(v)})
		}
	}
	return fs, hs
}
