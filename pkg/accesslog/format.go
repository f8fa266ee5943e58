package accesslog

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// The formats nginx and Apache ship (Apache's LogFormat "%h %l %u %t \"%r\"
// %>s %b ..." writes the same shapes).
const (
	Combined = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`
	Common   = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent`
)

// Format says how to read a log's lines: a text format (an nginx
// log_format string) or JSON objects.
type Format struct {
	name  string   // as given, for messages
	texts [][]part // text formats tried in order (combined, then common)
	// prefix: text after the format's last part is ignored (the presets:
	// many configurations append fields to combined).
	prefix bool
	json   *JSONFields // a JSON log
}

// part is a literal or a variable of a text format.
type part struct {
	lit  string // literal text, when name is empty
	name string
}

// ParseFormat reads a format: "combined" (which also reads common lines),
// "common", "json", an nginx log_format string, whose $variables name
// the fields ($request or $request_method with $request_uri; $time_local,
// $time_iso8601 or $msec; $status; $http_host or $host; $request_time;
// $scheme), or an Apache LogFormat string (%h %l %u %t \"%r\" %>s %b
// %{Host}i %D ...); any other field is read and ignored.
func ParseFormat(s string) (*Format, error) {
	switch s {
	case "combined", "":
		return &Format{name: "combined", texts: [][]part{mustParts(Combined), mustParts(Common)}, prefix: true}, nil
	case "common":
		return &Format{name: "common", texts: [][]part{mustParts(Common)}, prefix: true}, nil
	case "json":
		return &Format{name: "json", json: DefaultJSONFields()}, nil
	}
	nginx := s
	switch {
	case strings.Contains(s, "$"):
	case strings.Contains(s, "%"):
		var err error
		if nginx, err = fromApache(s); err != nil {
			return nil, fmt.Errorf("format %q: %w", s, err)
		}
	default:
		return nil, fmt.Errorf("format %q: want combined, common, json, an nginx log_format string with $variables or an Apache LogFormat with %%directives", s)
	}
	parts, err := parseParts(nginx)
	if err != nil {
		return nil, err
	}
	if !hasVar(parts, "request") && !(hasVar(parts, "request_method") && hasVar(parts, "request_uri")) {
		return nil, fmt.Errorf("format %q: names no request: want $request, or $request_method and $request_uri", s)
	}
	return &Format{name: s, texts: [][]part{parts}}, nil
}

// apacheVars are the nginx variables of Apache's LogFormat directives;
// those that name nothing a pair keeps are read and ignored.
var apacheVars = map[byte]string{
	'h': "remote_addr", 'a': "remote_addr", 'l': "remote_ident", 'u': "remote_user",
	't': "[$time_local]", 'r': "request", 's': "status", 'b': "body_bytes_sent", 'B': "body_bytes_sent",
	'D': "request_time_us", 'T': "request_time_s", 'v': "server_name", 'V': "host", 'm': "request_method",
	'H': "server_protocol", 'p': "server_port", 'I': "bytes_in", 'O': "bytes_out", 'S': "bytes", 'k': "keepalives",
	'L': "log_id", 'P': "pid", 'X': "connection_status", 'R': "handler", 'f': "filename", 'e': "env",
}

// fromApache writes an Apache LogFormat as an nginx log_format: %r is
// $request, %t is [$time_local] (Apache writes the brackets), %{Name}i is
// $http_name, and so on. A \" copied from the configuration is a ".
func fromApache(s string) (string, error) {
	s = strings.ReplaceAll(s, `\"`, `"`)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		arg, j, err := apacheDirective(s, i+1)
		if err != nil {
			return "", err
		}
		i = j
		if err := writeApacheVar(&b, s[i], arg); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// apacheDirective skips a directive's modifiers from s[i:] and reads its
// {argument}; j is the index of the directive's letter.
func apacheDirective(s string, i int) (arg string, j int, err error) {
	for i < len(s) && (s[i] == '>' || s[i] == '<' || s[i] == '!' || s[i] == ',' || '0' <= s[i] && s[i] <= '9') {
		i++ // modifiers: final or original request, status conditions
	}
	if i < len(s) && s[i] == '{' {
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", i, fmt.Errorf("%%{ without }")
		}
		arg, i = s[i+1:i+end], i+end+1
	}
	if i >= len(s) {
		return "", i, fmt.Errorf("%% at the end")
	}
	return arg, i, nil
}

// writeApacheVar writes the nginx-style variable of Apache's directive c
// with its argument, or says why it is not read.
func writeApacheVar(b *strings.Builder, c byte, arg string) error {
	switch {
	case c == '%':
		b.WriteByte('%')
	case c == 'i' && arg != "":
		b.WriteString("$http_" + strings.ToLower(strings.ReplaceAll(arg, "-", "_")))
	case c == 't' && arg != "":
		return fmt.Errorf("%%{%s}t: a custom time format is not read; use %%t", arg)
	case c == 'U' || c == 'q':
		return fmt.Errorf("%%%c: Apache logs the path decoded; use %%r, the request line as sent", c)
	case arg != "":
		b.WriteString("${apache_" + string(c) + "_" + strings.Map(varByte, arg) + "}")
	case apacheVars[c] == "":
		return fmt.Errorf("%%%c: not an Apache LogFormat directive", c)
	case c == 't':
		b.WriteString(apacheVars[c])
	default:
		b.WriteString("$" + apacheVars[c])
	}
	return nil
}

// varByte keeps the bytes a variable name may hold, and makes the others
// '_'.
func varByte(r rune) rune {
	if r < 0x80 && isVarByte(byte(r)) {
		return r
	}
	return '_'
}

// Name is the format as given ("combined", "json", a log_format string).
func (f *Format) Name() string { return f.name }

func mustParts(s string) []part {
	p, err := parseParts(s)
	if err != nil {
		panic(err)
	}
	return p
}

// parseParts splits a log_format string into literals and variables
// ($name or ${name}). Two variables with nothing between them cannot be
// told apart in a line, and are refused.
func parseParts(s string) ([]part, error) {
	var parts []part
	lit := strings.Builder{}
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			lit.WriteByte(s[i])
			continue
		}
		j, name := i+1, ""
		if j < len(s) && s[j] == '{' {
			k := strings.IndexByte(s[j:], '}')
			if k < 0 {
				return nil, fmt.Errorf("format %q: ${ without }", s)
			}
			name, i = s[j+1:j+k], j+k
		} else {
			for j < len(s) && isVarByte(s[j]) {
				j++
			}
			name, i = s[i+1:j], j-1
		}
		if name == "" {
			return nil, fmt.Errorf("format %q: $ without a variable name at byte %d", s, i)
		}
		if lit.Len() > 0 {
			parts = append(parts, part{lit: lit.String()})
			lit.Reset()
		} else if len(parts) > 0 && parts[len(parts)-1].name != "" {
			return nil, fmt.Errorf("format %q: $%s follows $%s with nothing between: a line cannot tell them apart", s, name, parts[len(parts)-1].name)
		}
		parts = append(parts, part{name: name})
	}
	if lit.Len() > 0 {
		parts = append(parts, part{lit: lit.String()})
	}
	return parts, nil
}

func isVarByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func hasVar(parts []part, name string) bool {
	for _, p := range parts {
		if p.name == name {
			return true
		}
	}
	return false
}

// matchText reads line with the first text format that fits, into
// fields (variable name to its raw, still escaped, value).
func (f *Format) matchText(line []byte, fields map[string][]byte) error {
	var err error
	for _, parts := range f.texts {
		clear(fields)
		if err = matchParts(parts, line, fields, f.prefix); err == nil {
			return nil
		}
	}
	return err
}

// matchParts reads line as parts say. A variable's value runs to the
// next literal, a backslash escaping the byte after it (nginx writes
// \xHH, Apache \" and \\); $time_local takes its fixed width when it
// parses, since its value holds a space.
func matchParts(parts []part, line []byte, fields map[string][]byte, prefix bool) error {
	pos := 0
	for i, p := range parts {
		if p.name == "" {
			if !bytes.HasPrefix(line[pos:], []byte(p.lit)) {
				return fmt.Errorf("column %d: want %q, got %q", pos+1, p.lit, clip(line[pos:]))
			}
			pos += len(p.lit)
			continue
		}
		if p.name == "time_local" && len(line)-pos >= len(timeLocal) {
			if _, err := time.Parse(timeLocal, string(line[pos:pos+len(timeLocal)])); err == nil {
				fields[p.name] = line[pos : pos+len(timeLocal)]
				pos += len(timeLocal)
				continue
			}
		}
		if i == len(parts)-1 {
			fields[p.name] = line[pos:]
			return nil
		}
		end := valueEnd(line, pos, parts[i+1].lit)
		if end < 0 {
			return fmt.Errorf("column %d: $%s runs to the end of the line, want %q after it", pos+1, p.name, parts[i+1].lit)
		}
		fields[p.name] = line[pos:end]
		pos = end
	}
	if pos != len(line) && !prefix {
		return fmt.Errorf("column %d: %q after the end of the format", pos+1, clip(line[pos:]))
	}
	return nil
}

// valueEnd is where the literal next begins in line from pos, outside
// backslash escapes; -1 if nowhere.
func valueEnd(line []byte, pos int, next string) int {
	for i := pos; i < len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if bytes.HasPrefix(line[i:], []byte(next)) {
			return i
		}
	}
	return -1
}

// clip shortens a piece of a line for a message.
func clip(b []byte) []byte {
	if len(b) > 40 {
		return append(b[:40:40], "..."...)
	}
	return b
}
