package capture

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/replay-dev/replay/internal/h2serve"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// tunnel is what an HTTP/2 connection inside a CONNECT tunnel carries to
// its streams' handler.
type tunnel struct{ scheme, authority, session string }

// exchangeH2 makes one HTTP/2 stream's exchange again (a client of the
// pool: HTTP/2 to an upstream that takes it, which a gRPC call needs) and
// records it.
func (p *Proxy) exchangeH2(w http.ResponseWriter, r *http.Request) {
	tn, _ := h2serve.Value(r).(*tunnel)
	if tn == nil {
		w.WriteHeader(http.StatusInternalServerError)
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
	reqFields, reqHeaders := h2Headers(r.Header)
	req := rrpair.Request{Method: []byte(r.Method), URI: []byte(r.RequestURI), Host: []byte(authority),
		Scheme: []byte(scheme), Headers: reqHeaders, Body: body}
	pair := rrpair.Pair{Req: req, Version: []byte("2")}
	reply, err := p.fwd.pool.Do(&req, &pair)
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
