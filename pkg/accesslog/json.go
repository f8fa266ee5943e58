package accesslog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// JSONFields names the keys of a JSON log's fields, each a list tried in
// order; a key with dots ("http.request.method") reaches into nested
// objects when the line has no key spelled so.
type JSONFields struct {
	Request  []string // the request line, "GET /p HTTP/1.1"
	Method   []string // or the method and the raw target
	URI      []string
	Time     []string // $time_local, RFC 3339 or epoch seconds ($msec)
	Status   []string
	Host     []string
	Duration []string // seconds ($request_time)
	Scheme   []string
	Protocol []string // "HTTP/1.1", with Method and URI
}

// DefaultJSONFields are the names an nginx log_format with escape=json
// uses when each key is named after its variable, and the common
// timestamp keys of log shippers.
func DefaultJSONFields() *JSONFields {
	return &JSONFields{
		Request:  []string{"request"},
		Method:   []string{"request_method", "method"},
		URI:      []string{"request_uri"},
		Time:     []string{"time_local", "time_iso8601", "msec", "@timestamp", "timestamp", "time"},
		Status:   []string{"status"},
		Host:     []string{"http_host", "host"},
		Duration: []string{"request_time"},
		Scheme:   []string{"scheme"},
		Protocol: []string{"server_protocol", "protocol"},
	}
}

// roles are JSONFields' fields by the names --json-field takes.
func (j *JSONFields) roles() map[string]*[]string {
	return map[string]*[]string{
		"request": &j.Request, "method": &j.Method, "uri": &j.URI, "time": &j.Time, "status": &j.Status,
		"host": &j.Host, "duration": &j.Duration, "scheme": &j.Scheme, "protocol": &j.Protocol,
	}
}

// SetJSONField names the key of a field of a JSON log, from a flag's
// "ROLE=KEY" (time=ts, status=code, request=req, method=verb, uri=path,
// host=vhost, duration=rt, scheme=proto, protocol=version).
func (f *Format) SetJSONField(spec string) error {
	if f.json == nil {
		return fmt.Errorf("%q: field names are for a JSON log (--format json)", spec)
	}
	role, key, ok := strings.Cut(spec, "=")
	roles := f.json.roles()
	dst := roles[role]
	if !ok || key == "" || dst == nil {
		return fmt.Errorf("%q: want ROLE=KEY, ROLE one of request, method, uri, time, status, host, duration, scheme, protocol", spec)
	}
	*dst = []string{key}
	return nil
}

// lookup returns the first of keys the object has, with its value.
func lookup(obj map[string][]byte, keys []string) ([]byte, bool) {
	for _, k := range keys {
		if v, ok := obj[k]; ok {
			return v, true
		}
	}
	return nil, false
}

// parseJSONLine reads one JSON object into obj: each scalar by its key,
// nested objects' scalars by their dotted path. Strings are unescaped
// with their bytes kept as they are: nginx's escape=json writes the
// bytes of a request outside ASCII as they came, which need not be
// UTF-8, and a decoder that replaced them would change the target.
func parseJSONLine(line []byte, obj map[string][]byte) error {
	p := jsonParser{b: line}
	p.ws()
	if err := p.object("", obj, 0); err != nil {
		return err
	}
	p.ws()
	if p.i != len(p.b) {
		return p.fail("text after the object")
	}
	return nil
}

type jsonParser struct {
	b []byte
	i int
}

func (p *jsonParser) fail(msg string) error { return fmt.Errorf("JSON column %d: %s", p.i+1, msg) }

func (p *jsonParser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

func (p *jsonParser) object(prefix string, obj map[string][]byte, depth int) error {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return p.fail("want an object")
	}
	return p.list('}', depth, func() error {
		key, err := p.str()
		if err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return p.fail("want :")
		}
		p.i++
		p.ws()
		return p.value(prefix+string(key), obj, depth)
	})
}

// array skips an array: no field of a log is one.
func (p *jsonParser) array(depth int) error {
	scratch := map[string][]byte{}
	return p.list(']', depth, func() error { return p.value("", scratch, depth) })
}

// list reads the elements of an object or an array, from its opening
// byte to end.
func (p *jsonParser) list(end byte, depth int, elem func() error) error {
	if depth > 32 {
		return p.fail("nested too deep")
	}
	p.i++
	for first := true; ; first = false {
		p.ws()
		if first && p.i < len(p.b) && p.b[p.i] == end {
			p.i++
			return nil
		}
		if err := elem(); err != nil {
			return err
		}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.b) && p.b[p.i] == end {
			p.i++
			return nil
		}
		return p.fail("want , or " + string(end))
	}
}

func (p *jsonParser) value(key string, obj map[string][]byte, depth int) error {
	if p.i >= len(p.b) {
		return p.fail("want a value")
	}
	switch c := p.b[p.i]; {
	case c == '"':
		s, err := p.str()
		obj[key] = s
		return err
	case c == '{':
		return p.object(key+".", obj, depth+1)
	case c == '[':
		return p.array(depth + 1)
	default: // a number, true, false or null: kept as written
		start := p.i
		for p.i < len(p.b) && !strings.ContainsRune(",}] \t\r\n", rune(p.b[p.i])) {
			p.i++
		}
		if p.i == start {
			return p.fail("want a value")
		}
		if v := string(p.b[start:p.i]); v != "null" {
			obj[key] = p.b[start:p.i]
		}
		return nil
	}
}

// str reads a string, unescaped (rrpair.AppendUnescaped), other bytes as
// they are: nginx writes bytes above 0x7F unescaped, which a JSON decoder
// would replace.
func (p *jsonParser) str() ([]byte, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, p.fail("want a string")
	}
	start := p.i + 1
	for p.i = start; p.i < len(p.b); p.i++ {
		switch p.b[p.i] {
		case '\\':
			p.i++
		case '"':
			raw := p.b[start:p.i]
			p.i++
			out, err := rrpair.AppendUnescaped(nil, raw)
			if err != nil {
				return nil, p.fail("bad escape in " + strconv.Quote(string(raw)))
			}
			return out, nil
		}
	}
	return nil, p.fail("unterminated string")
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
