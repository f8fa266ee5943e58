package har

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// entry is the part of a HAR entry the conversion reads. The recorded
// answer and the form params are read apart (answer, postData.Params), so
// that a problem in them does not lose the request.
type entry struct {
	// What says an entry never touched the network, read whatever the
	// shape of the rest (json.Unmarshal goes on past a wrong type).
	ResourceType json.RawMessage `json:"_resourceType"`
	WebSocket    json.RawMessage `json:"_webSocketMessages"`
	FetchType    json.RawMessage `json:"_fetchType"`
	FromCache    json.RawMessage `json:"_fromCache"`

	PageRef         string   `json:"pageref"`
	StartedDateTime string   `json:"startedDateTime"`
	Time            lenient  `json:"time"`
	Request         request  `json:"request"`
	Response        rawValue `json:"response"`
}

type request struct {
	Method      string   `json:"method"`
	URL         string   `json:"url"`
	HTTPVersion string   `json:"httpVersion"`
	Headers     []nv     `json:"headers"`
	BodySize    lenient  `json:"bodySize"`
	PostData    postData `json:"postData"`
}

type postData struct {
	MimeType  string   `json:"mimeType"`
	Text      string   `json:"text"`
	Encoding  string   `json:"encoding"`
	EncodingX string   `json:"_encoding"` // another recorder's spelling
	Params    rawValue `json:"params"`
}

type param struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	FileName    string `json:"fileName"`
	ContentType string `json:"contentType"`
}

type answer struct {
	Status      json.RawMessage `json:"status"` // read by status: a wrong type drops the answer, not the request
	HTTPVersion string          `json:"httpVersion"`
	Headers     []nv            `json:"headers"`
	Content     struct {
		Text     string `json:"text"`
		Encoding string `json:"encoding"`
	} `json:"content"`
}

type nv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// rawValue is a value read later, apart; null reads as absent.
type rawValue []byte

func (r *rawValue) UnmarshalJSON(b []byte) error {
	if string(b) != "null" {
		*r = append((*r)[:0], b...)
	}
	return nil
}

// lenient is a number a recorder may write as a number or a numeric
// string; anything else reads as 0. Only timings and sizes are read so,
// where a wrong shape should not lose the request.
type lenient float64

func (n *lenient) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		*n = lenient(f)
	}
	return nil
}

// status is the answer's status, -1 when it is not a number (or a
// numeric string), 0 when absent.
func (a *answer) status() int {
	v := strings.Trim(strings.TrimSpace(string(a.Status)), `"`)
	if v == "" || v == "null" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}

// str is a JSON string's value, or "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// offNetwork says why entry e (its answer res) never touched the network,
// as a skip reason, or "". firefox: the file is Firefox's.
func offNetwork(e *entry, res *answer, firefox bool) string {
	if isWebSocket(e) {
		return "websocket: a WebSocket; its messages are not HTTP requests (import with --websocket to keep the session)"
	}
	if ft := str(e.FetchType); ft != "" && !strings.EqualFold(ft, "Network Load") {
		if strings.Contains(strings.ToLower(ft), "cache") {
			return fmt.Sprintf("cache: answered from the browser's cache (_fetchType %q)", ft)
		}
		return fmt.Sprintf("local: answered without the network (_fetchType %q)", ft)
	}
	if fc := str(e.FromCache); fc != "" {
		return fmt.Sprintf("cache: answered from the browser's cache (_fromCache %q)", fc)
	}
	if firefox && e.Request.HTTPVersion == "" && res.HTTPVersion == "" {
		return "cache: answered from Firefox's cache (no httpVersion)"
	}
	if len(res.Status) > 0 && res.status() == 0 {
		return "no-answer: status 0: blocked, cancelled or failed before an answer"
	}
	return ""
}

// converter turns entries into RRPair lines, counting what it changed.
type converter struct {
	st      *Stats
	firefox bool // the file is Firefox's: an entry without httpVersion came from its cache
	line    []byte
	// webSockets keeps WebSocket entries as upgrade pairs with their
	// messages (Options.WebSockets); upgrade is set while converting one,
	// so that its Upgrade field is kept.
	webSockets, upgrade bool
}

// entry converts entry n (from 1) of the file into c.line, or says why it
// is skipped.
//
// e is the entry as read, err what reading it met (a value of the wrong
// type), and raw reads its JSON again, for the error's HAR path.
func (c *converter) entry(e *entry, err error, raw func() []byte, n int) (ok bool, why string) {
	var res answer
	resErr := json.Unmarshal(e.Response, &res)
	if len(e.Response) == 0 {
		resErr = nil
	}
	session, why := c.sessionOrSkip(e, &res)
	if why != "" {
		return false, why
	}
	if err != nil {
		return false, "shape: " + shapeError(err, raw(), fmt.Sprintf("log.entries[%d]", n-1))
	}
	r, why := c.record(e, &res, n)
	if r == nil {
		return false, why
	}
	r.WebSocket = session
	dropped := resErr != nil
	if !dropped && len(e.Response) > 0 {
		dropped = !c.answer(r, &res)
	}
	c.line, err = rrpair.AppendChecked(c.line[:0], r)
	if err != nil && r.Status != 0 { // the answer's fault, perhaps: keep the request
		r.Status, r.ResHeaders, r.ResBody = 0, nil, nil
		c.line, err = rrpair.AppendChecked(c.line[:0], r)
		dropped = true
	}
	if err == nil && dropped {
		c.st.AnswersDropped++
	}
	if err != nil {
		return false, "invalid: " + err.Error()
	}
	if r.Version == "2" || r.Version == "3" {
		c.st.HTTP2++
	}
	return true, ""
}

// record builds the pair of e, or says why it cannot.
func (c *converter) record(e *entry, res *answer, n int) (*rrpair.Record, string) {
	req := &e.Request
	if req.Method == "" {
		return nil, "invalid: request.method: missing"
	}
	scheme, host, uri, ok := splitURL(httpURL(req.URL))
	if !ok {
		return nil, fmt.Sprintf("url: want an absolute http(s) URL, got %q", clip(req.URL))
	}
	r := &rrpair.Record{Method: req.Method, URI: uri, Host: host, Protocol: scheme, Session: e.PageRef}
	if e.StartedDateTime != "" {
		ts, ok := parseStarted(e.StartedDateTime)
		if !ok {
			return nil, fmt.Sprintf("time: startedDateTime: want RFC 3339, got %q", clip(e.StartedDateTime))
		}
		r.TS = ts
	}
	if e.Time > 0 {
		r.Duration = time.Duration(float64(e.Time) * float64(time.Millisecond))
	}
	r.Version = version(req.HTTPVersion, res.HTTPVersion, req.Headers)
	length := c.requestHeaders(r, req.Headers)
	var why string
	if r.Body, why = c.body(req, r.Headers, n); why != "" {
		return nil, why
	}
	if len(r.Body) == 0 && (length > 0 || req.BodySize > 0) {
		c.st.NoBody = append(c.st.NoBody, n)
	}
	return r, ""
}

// requestHeaders adds the request headers of the entry to r, and returns
// the recorded Content-Length (0 when none). A recorded Content-Length
// stays where it stands; the replay writes the length of the body it sends
// there.
func (c *converter) requestHeaders(r *rrpair.Record, hs []nv) (length int64) {
	for _, h := range hs {
		if strings.HasPrefix(h.Name, ":") || (rrpair.ConnectionHeader(h.Name) || hopOnly(h.Name)) && !c.keepsUpgradeField(h.Name) {
			continue // HTTP/2 pseudo-headers; connection handling is the replay's
		}
		if !rrpair.ValidHeaderName(h.Name) { // a request line ("GET /p HTTP/1.1"), a name with a colon
			c.st.BadHeaders++
			continue
		}
		if strings.EqualFold(h.Name, "content-length") {
			length, _ = strconv.ParseInt(strings.TrimSpace(h.Value), 10, 64)
		}
		c.fields(h, &r.Headers, &c.st.BadHeaders)
	}
	return length
}

// answer adds the recorded answer of the entry to r, and reports whether
// it could; its faults drop what they touch, never the request.
func (c *converter) answer(r *rrpair.Record, res *answer) bool {
	status := res.status()
	if status < 100 || status > 999 {
		return false
	}
	body := []byte(res.Content.Text)
	if strings.EqualFold(res.Content.Encoding, "base64") {
		var err error
		if body, err = base64.StdEncoding.DecodeString(res.Content.Text); err != nil {
			return false
		}
	}
	r.Status, r.ResBody = status, body
	for _, h := range res.Headers {
		switch {
		case strings.HasPrefix(h.Name, ":"), (rrpair.ConnectionHeader(h.Name) || hopOnly(h.Name)) && !c.keepsUpgradeField(h.Name), strings.EqualFold(h.Name, "content-length"):
			// the length is the encoded body's, not the decoded content's
		case !rrpair.ValidHeaderName(h.Name): // WebPageTest's status line, and the like
			c.st.AnswerHeaders++
		default:
			c.fields(h, &r.ResHeaders, &c.st.AnswerHeaders)
		}
	}
	return true
}

// fields adds header h to hs, one field per line of its value: chrome-har
// joins repeated fields (Set-Cookie, Vary) with "\n" in one value. A line
// with a CR or NUL left in it cannot be sent; it is dropped and counted in
// bad.
func (c *converter) fields(h nv, hs *[]rrpair.Field, bad *int) {
	if !strings.Contains(h.Value, "\n") {
		if validValue(h.Value) {
			*hs = append(*hs, rrpair.Field{Name: h.Name, Value: h.Value})
		} else {
			*bad++
		}
		return
	}
	c.st.SplitValues++
	for v := range strings.SplitSeq(h.Value, "\n") {
		v = strings.TrimSuffix(v, "\r")
		switch {
		case v == "":
		case validValue(v):
			*hs = append(*hs, rrpair.Field{Name: h.Name, Value: v})
		default:
			*bad++
		}
	}
}

func validValue(v string) bool { return !strings.ContainsAny(v, "\r\n\x00") }

// hopOnly are headers HTTP/2 forbids and HTTP/1.1 ties to the connection:
// a replay does not send them as recorded.
func hopOnly(name string) bool {
	return strings.EqualFold(name, "upgrade") || strings.EqualFold(name, "te")
}

// body is the request body of the entry: postData.text (base64-decoded when
// so encoded), else its params rebuilt, else none.
func (c *converter) body(req *request, hs []rrpair.Field, n int) ([]byte, string) {
	pd := &req.PostData
	if pd.Text != "" {
		if enc := pd.Encoding + pd.EncodingX; strings.EqualFold(enc, "base64") {
			b, err := base64.StdEncoding.DecodeString(pd.Text)
			if err != nil {
				return nil, fmt.Sprintf("invalid: request.postData.text: bad base64: %v", err)
			}
			return b, ""
		}
		return []byte(pd.Text), ""
	}
	if len(pd.Params) == 0 {
		return nil, ""
	}
	var params []param
	if err := json.Unmarshal(pd.Params, &params); err != nil {
		return nil, "shape: " + shapeError(err, pd.Params, fmt.Sprintf("log.entries[%d].request.postData.params", n-1))
	}
	if len(params) == 0 {
		return nil, ""
	}
	contentType := header(hs, "content-type")
	mimeType := pd.MimeType
	if mimeType == "" {
		mimeType = contentType
	}
	media, mediaParams, _ := mime.ParseMediaType(mimeType)
	switch {
	case media == "application/x-www-form-urlencoded":
		return formBody(params), ""
	case strings.HasPrefix(media, "multipart/"):
		boundary := mediaParams["boundary"]
		if _, p, err := mime.ParseMediaType(contentType); err == nil && p["boundary"] != "" {
			boundary = p["boundary"] // the one the recorded request announced
		}
		if boundary != "" {
			return multipartBody(params, boundary), ""
		}
	}
	return nil, "" // not rebuilt: counted with the bodies not captured
}

// header is the first value of the header name (any case) in hs.
func header(hs []rrpair.Field, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// formBody writes params as application/x-www-form-urlencoded. Recorders
// give the values raw (Chrome) or decoded (by the spec), so what form
// encoding itself writes is kept as it is: unreserved bytes, valid %XX
// escapes and "+" (a space, encoded); a space becomes "+", any other byte
// %XX. Nothing is encoded twice.
func formBody(params []param) []byte {
	var b []byte
	for i, p := range params {
		if i > 0 {
			b = append(b, '&')
		}
		b = formEscape(b, p.Name)
		b = append(b, '=')
		b = formEscape(b, p.Value)
	}
	return b
}

func formEscape(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case unreserved(c) || c == '+':
			b = append(b, c)
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b = append(b, s[i:i+3]...)
			i += 2
		case c == ' ':
			b = append(b, '+')
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return b
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// multipartBody writes params as multipart/form-data parts separated by
// boundary, the one the recorded Content-Type announces.
func multipartBody(params []param, boundary string) []byte {
	var b strings.Builder
	quote := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	for _, p := range params {
		b.WriteString("--" + boundary + "\r\n")
		b.WriteString(`Content-Disposition: form-data; name="` + quote.Replace(p.Name) + `"`)
		if p.FileName != "" {
			b.WriteString(`; filename="` + quote.Replace(p.FileName) + `"`)
		}
		b.WriteString("\r\n")
		if p.ContentType != "" {
			b.WriteString("Content-Type: " + p.ContentType + "\r\n")
		}
		b.WriteString("\r\n" + p.Value + "\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return []byte(b.String())
}

// splitURL splits an absolute http(s) URL by hand into its scheme, host
// and request target, which keeps the path and query exactly as recorded
// (net/url would re-encode "|", "^", "{", non-ASCII and bad escapes). The
// fragment, which a browser never sends, and any user:password@ go.
func splitURL(raw string) (scheme, host, uri string, ok bool) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return "", "", "", false
	}
	scheme = strings.ToLower(raw[:i])
	if scheme != "http" && scheme != "https" {
		return "", "", "", false
	}
	rest := raw[i+3:]
	host, uri = rest, "/"
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		host, uri = rest[:j], rest[j:]
	}
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if k := strings.IndexByte(uri, '#'); k >= 0 {
		uri = uri[:k]
	}
	switch {
	case uri == "":
		uri = "/"
	case uri[0] == '?':
		uri = "/" + uri
	}
	return scheme, host, uri, host != ""
}

// version is the pair's http.req.version from the spellings recorders use:
// "HTTP/1.1", "http/2.0", "HTTP/2", "h2", "h3", "HTTP/3"; Chrome's
// "unknown" (or nothing) reads the answer's, and then pseudo-headers, which
// only HTTP/2 and 3 have.
func version(req, res string, hs []nv) string {
	v := strings.ToLower(strings.TrimSpace(req))
	if v == "" || v == "unknown" {
		v = strings.ToLower(strings.TrimSpace(res))
	}
	v = strings.TrimPrefix(v, "http/")
	switch {
	case v == "h3" || strings.HasPrefix(v, "h3-") || strings.HasPrefix(v, "3"):
		return "3"
	case v == "h2" || v == "h2c" || strings.HasPrefix(v, "2"):
		return "2"
	case strings.HasPrefix(v, "1.0"):
		return "1.0"
	case strings.HasPrefix(v, "1"):
		return "1.1"
	}
	for _, h := range hs {
		if strings.HasPrefix(h.Name, ":") {
			return "2"
		}
	}
	return "1.1"
}

// parseStarted reads startedDateTime: RFC 3339, or without a zone as
// WebPageTest writes it ("2024-07-12T12:44:30.448119"), taken as UTC.
func parseStarted(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// shapeError says, in HAR terms, where a value of raw (found at the HAR
// path at) has the wrong type, and what was wanted:
// "log.entries[4].request.postData.params[0].value: want a string, got an object".
func shapeError(err error, raw []byte, at string) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return at + ": " + err.Error()
	}
	return fmt.Sprintf("%s%s: want %s, got %s", at, pathAt(raw, te.Offset), want(te), got(te.Value))
}
