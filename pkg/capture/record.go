package capture

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// exchange is what a record knows of an exchange beyond its messages.
type exchange struct {
	start, end time.Time
	session    string // the client connection's session
	host       string // http.req.host
	scheme     string // l7protocol: "http" or "https"; "" writes none
	direction  string // "OUT" for the forward proxy
}

// recordRaw records an HTTP/1.x exchange under ticket seq: a request
// body cut (over MaxBody) records nothing, counted too large; an answer
// body cut is recorded as far as kept, its whole size said (bodyCut).
func (p *Proxy) recordRaw(seq int64, req *rawhttp.Message, x passed, ex exchange) {
	if x.reqBody.Cut() {
		p.stats.large.Add(1)
		p.w.Done(seq, nil)
		return
	}
	r := &rrpair.Record{Version: req.Version, Method: req.Method, URI: req.Target, Status: x.res.Status,
		Headers: dropConnection(req.Headers), ResHeaders: dropConnection(x.res.Headers), Body: x.reqBody.Kept, ResBody: x.resBody.Kept}
	if x.resBody.Cut() {
		r.ResBodyCut = x.resBody.Size
	}
	r.WebSocket = x.ws
	p.record(seq, r, ex)
}

// dropConnection is hs without the headers of the connection, which a
// replay never sends (rrpair.ConnectionHeader).
func dropConnection(hs []rrpair.Field) []rrpair.Field {
	out := make([]rrpair.Field, 0, len(hs))
	for _, h := range hs {
		if !rrpair.ConnectionHeader(h.Name) {
			out = append(out, h)
		}
	}
	return out
}

// record completes r (time, session, host, size limits, redaction) and
// gives its line to ticket seq, unless Open would refuse it or its request
// body is over MaxBody: then the ticket goes back empty, counted.
func (p *Proxy) record(seq int64, r *rrpair.Record, x exchange) {
	if int64(len(r.Body)) > p.opt.MaxBody {
		p.stats.large.Add(1)
		p.w.Done(seq, nil)
		return
	}
	if int64(len(r.ResBody)) > p.opt.MaxBody {
		r.ResBodyCut, r.ResBody = int64(len(r.ResBody)), r.ResBody[:p.opt.MaxBody]
	}
	if r.ResBodyCut > 0 {
		p.stats.cut.Add(1)
	}
	r.TS, r.Duration = x.start, max(x.end.Sub(x.start), time.Microsecond)
	r.Protocol, r.Direction, r.Host = x.scheme, x.direction, x.host
	if r.Protocol == "" {
		r.Protocol = "http"
	}
	r.Session = p.session(r.Headers, x.session)
	for i := range r.Headers {
		r.Headers[i] = p.redactHeader(r.Headers[i])
	}
	for i := range r.ResHeaders {
		r.ResHeaders[i] = p.redactHeader(r.ResHeaders[i])
	}
	r.Body, r.ResBody = p.redactJSON(r.Body), p.redactJSON(r.ResBody)
	line, err := rrpair.AppendChecked(nil, r)
	if err != nil {
		p.stats.unreplayable.Add(1)
		p.w.Done(seq, nil)
		return
	}
	p.stats.pairs.Add(1)
	p.w.Done(seq, line)
}

// session is the session of a request with headers hs: the connection's,
// or the header's or cookie's that --session names ("" when the request
// has none).
func (p *Proxy) session(hs []rrpair.Field, conn string) string {
	s := p.opt.Session
	if s == "" {
		return conn
	}
	session := ""
	kind, name, _ := strings.Cut(s, ":")
	for _, h := range hs {
		switch {
		case kind == "header" && strings.EqualFold(h.Name, name):
			session = h.Value
		case kind == "cookie" && strings.EqualFold(h.Name, "Cookie"):
			for _, kv := range strings.Split(h.Value, ";") {
				if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == name {
					session = v
				}
			}
		}
	}
	return session
}

func (p *Proxy) redactHeader(h rrpair.Field) rrpair.Field {
	for _, name := range p.opt.RedactHeader {
		if strings.EqualFold(h.Name, name) {
			return rrpair.Field{Name: h.Name, Value: Redacted}
		}
	}
	if p.opt.Redact == RedactCredentials {
		h.Value = RedactCredential(h.Name, h.Value)
	}
	return h
}

// The --redact presets.
const (
	// RedactCredentials, the default, records the credentials of the
	// usual headers as REDACTED (RedactCredential).
	RedactCredentials = "credentials"
	// RedactNone records every header as it went by (--redact none):
	// only --redact-header and --redact-json redact.
	RedactNone = "none"
)

// RedactCredential is value with the credentials the preset
// RedactCredentials hides replaced by REDACTED, for a header called name
// (any case): Authorization and Proxy-Authorization keep their scheme
// ("Bearer REDACTED"); Cookie keeps each cookie's name
// ("sid=REDACTED; theme=REDACTED"), Set-Cookie the cookie's name and its
// attributes ("sid=REDACTED; Path=/; HttpOnly"); a header whose name
// holds "api-key", "api_key", "apikey", "token", "secret" or "password"
// (X-Api-Key, X-Auth-Token, X-Amz-Security-Token...) is
// REDACTED whole. Any other header's value comes back as it was.
func RedactCredential(name, value string) string {
	lower := strings.ToLower(name)
	switch lower {
	case "authorization", "proxy-authorization":
		if scheme, _, ok := strings.Cut(value, " "); ok && scheme != "" {
			return scheme + " " + Redacted
		}
		return Redacted
	case "cookie":
		parts := strings.Split(value, ";")
		for i, kv := range parts {
			parts[i] = redactCookie(kv)
		}
		return strings.Join(parts, ";")
	case "set-cookie":
		first, attrs, ok := strings.Cut(value, ";")
		if ok {
			return redactCookie(first) + ";" + attrs
		}
		return redactCookie(first)
	}
	for _, word := range []string{"api-key", "api_key", "apikey", "token", "secret", "password"} {
		if strings.Contains(lower, word) {
			return Redacted
		}
	}
	return value
}

// redactCookie is one "name=value" with its value REDACTED, the spaces
// around it kept.
func redactCookie(kv string) string {
	k, _, ok := strings.Cut(kv, "=")
	if !ok {
		return Redacted
	}
	return k + "=" + Redacted
}

// redactJSON replaces the configured fields of a JSON object body. A body
// it changes is written again by encoding/json (keys sorted).
func (p *Proxy) redactJSON(body []byte) []byte {
	if len(p.opt.RedactJSON) == 0 || len(body) == 0 || bytes.TrimSpace(body)[0] != '{' {
		return body
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return body
	}
	changed := false
	for _, path := range p.opt.RedactJSON {
		obj := doc
		parts := strings.Split(path, ".")
		for i, k := range parts {
			v, ok := obj[k]
			if !ok {
				break
			}
			if i == len(parts)-1 {
				obj[k] = Redacted
				changed = true
				break
			}
			if obj, ok = v.(map[string]any); !ok {
				break
			}
		}
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return body
	}
	return out
}
