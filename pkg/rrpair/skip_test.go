package rrpair

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// speedscaleFile is a Speedscale-shaped export: IN HTTP pairs mixed with
// the service's database queries, its own calls out, a response-only
// record and gRPC calls.
var speedscaleFile = filepath.Join("testdata", "speedscale.jsonl")

// keptLines opens path with opt and returns the line numbers of the pairs
// kept, in file order.
func keptLines(t *testing.T, path string, opt Options) ([]int, *File) {
	t.Helper()
	f, err := Open(path, opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	var lines []int
	c := f.NewCursor()
	var p Pair
	for i := 0; i < f.Len(); i++ {
		if err := c.Decode(i, &p); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, p.Line)
	}
	return lines, f
}

func rules(t *testing.T, specs ...string) []Rule {
	t.Helper()
	var rs []Rule
	for _, s := range specs {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatalf("ParseRule(%q): %v", s, err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestSpeedscaleFileSkipsWhatIsNotHTTP(t *testing.T) {
	tests := []struct {
		name     string
		opt      Options
		lines    []int
		skipped  Skipped
		filtered int
	}{
		{
			name:    "default: IN pairs only, the gRPC one too; the OUT ones are skipped as OUT",
			lines:   []int{1, 3, 7, 8},
			skipped: Skipped{Protocol: map[string]int{"postgres": 2, "mysql": 1}, ResponseOnly: 1, DirectionOut: 2},
		},
		{
			name:     "--keep direction=OUT: the OUT pairs only (HTTP and gRPC); the IN ones are filtered",
			opt:      Options{Filter: &Filter{Keep: rules(t, "direction=OUT")}},
			lines:    []int{4, 9},
			skipped:  Skipped{Protocol: map[string]int{"postgres": 2, "mysql": 1}, ResponseOnly: 1},
			filtered: 4,
		},
		{
			name:    "--keep direction=in,out: both",
			opt:     Options{Filter: &Filter{Keep: rules(t, "direction=in,out")}},
			lines:   []int{1, 3, 4, 7, 8, 9},
			skipped: Skipped{Protocol: map[string]int{"postgres": 2, "mysql": 1}, ResponseOnly: 1},
		},
		{
			name:     "--keep direction=IN: OUT pairs are filtered, not skipped",
			opt:      Options{Filter: &Filter{Keep: rules(t, "direction=IN")}},
			lines:    []int{1, 3, 7, 8},
			skipped:  Skipped{Protocol: map[string]int{"postgres": 2, "mysql": 1}, ResponseOnly: 1},
			filtered: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, f := keptLines(t, speedscaleFile, tt.opt)
			if !reflect.DeepEqual(lines, tt.lines) {
				t.Errorf("kept lines %v, want %v", lines, tt.lines)
			}
			if got := f.Skipped(); !reflect.DeepEqual(got, tt.skipped) {
				t.Errorf("skipped: got %+v, want %+v", got, tt.skipped)
			}
			if f.Filtered() != tt.filtered {
				t.Errorf("filtered: got %d, want %d", f.Filtered(), tt.filtered)
			}
		})
	}
}

func TestSkippedLinesAndBrokenLines(t *testing.T) {
	const http = `{"http":{"req":{"method":"GET","uri":"/a","host":"h"}}}`
	tests := []struct {
		name    string
		line    string
		skipped string // Skipped.String(); "" for a broken line
		errHas  string // for a broken line
	}{
		{"another protocol, no http at all", `{"l7protocol":"redis","direction":"OUT","redis":{"req":{"command":"GET k"}}}`, "1 line (redis 1)", ""},
		{"another protocol whose http field is not HTTP's shape", `{"http":"SELECT 1","l7protocol":"Postgres"}`, "1 line (postgres 1)", ""},
		{"another protocol with request fields HTTP would refuse", `{"http":{"req":{"method":"Q","uri":"x y"}},"l7protocol":"kafka"}`, "1 line (kafka 1)", ""},
		{"response only", `{"l7protocol":"http","http":{"res":{"statusCode":200}}}`, "1 line (response_only 1)", ""},
		{"response only, null request", `{"http":{"req":null,"res":{"statusCode":200,"body":"x"}}}`, "1 line (response_only 1)", ""},
		{"grpc record with no HTTP fields", `{"l7protocol":"grpc","grpc":{"method":"/a.B/C"}}`, "1 line (grpc 1)", ""},
		{"OUT pair", `{"direction":"out","http":{"req":{"method":"GET","uri":"/a","host":"h"}}}`, "1 line (direction_out 1)", ""},
		{"OUT pair without a host needs none", `{"direction":"OUT","http":{"req":{"method":"GET","uri":"/a"}}}`, "1 line (direction_out 1)", ""},

		{"bad JSON in another protocol's line", `{"l7protocol":"postgres","postgres":{"req":}}`, "", "invalid JSON"},
		{"bad request field: no uri", `{"l7protocol":"http","http":{"req":{"method":"GET","host":"h"}}}`, "", "http.req.uri: missing"},
		{"request without a method", `{"http":{"req":{"uri":"/a","host":"h"},"res":{"statusCode":200}}}`, "", "http.req.method: missing"},
		{"bad header in an HTTP line", `{"http":{"req":{"method":"GET","uri":"/a","host":"h","headers":{"A":"b"}}}}`, "", "want an array of strings"},
		{"neither request nor response", `{"l7protocol":"http","ts":"2026-11-01T10:00:00Z"}`, "", "http.req.method: missing"},
		{"unknown direction", `{"direction":"SIDEWAYS","http":{"req":{"method":"GET","uri":"/a","host":"h"}}}`, "", "direction: want IN or OUT"},
		{"bad response field of a response-only line", `{"http":{"res":{"statusCode":"ok"}}}`, "", "http.res.statusCode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, http+"\n"+tt.line+"\n")
			f, err := Open(path, Options{RequireHost: true})
			if tt.skipped == "" {
				var verr *ValidationError
				if !errors.As(err, &verr) || verr.Lines[0].Line != 2 || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("got %v, want line 2 refused with %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer f.Close()
			sk := f.Skipped()
			if f.Len() != 1 || sk.String() != tt.skipped {
				t.Errorf("got %d pairs, skipped %s; want 1 pair, skipped %s", f.Len(), sk.String(), tt.skipped)
			}
		})
	}
}

func TestAllSkipped(t *testing.T) {
	path := writeFile(t, `{"direction":"OUT","http":{"req":{"method":"GET","uri":"/a","host":"h"}}}
{"l7protocol":"postgres","postgres":{}}
`)
	_, err := Open(path, Options{})
	if !errors.Is(err, ErrAllSkipped) || !strings.Contains(err.Error(), "postgres 1, direction_out 1") || !strings.Contains(err.Error(), "--keep direction=OUT") {
		t.Fatalf("got %v, want ErrAllSkipped with the counts and the hint", err)
	}
	_, err = Open(path, Options{Filter: &Filter{Keep: rules(t, "method=POST", "direction=OUT")}})
	if !errors.Is(err, ErrAllFiltered) || !strings.Contains(err.Error(), "skipped 1 line (postgres 1)") {
		t.Fatalf("got %v, want ErrAllFiltered with the skipped counts", err)
	}
}

func TestHostAndTagRules(t *testing.T) {
	tests := []struct {
		name       string
		keep, drop []string
		lines      []int
	}{
		{"host name matches any port", []string{"host=ORDERS.svc"}, nil, []int{1, 3, 7, 8}},
		{"host with port is exact", []string{"host=orders.svc:8081,payments.example.com", "direction=IN,OUT"}, nil, []int{4}},
		{"drop host", []string{"direction=IN,OUT"}, []string{"host=orders.svc:8080"}, []int{4, 7, 9}},
		{"tag value", []string{"tag.tenant=acme"}, nil, []int{1, 7, 8}},
		{"tag list", []string{"tag.tenant=acme, beta"}, nil, []int{1, 3, 7, 8}},
		{"tags. spelling", []string{"tags.source=web"}, nil, []int{1, 8}},
		{"drop tag", nil, []string{"tag.tenant=beta"}, []int{1, 7, 8}},
		{"tag and direction", []string{"tag.tenant=beta", "direction=IN,OUT"}, nil, []int{3, 4}},
		{"session is a tag too", []string{"tag.session=s-1"}, nil, []int{1, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, _ := keptLines(t, speedscaleFile, Options{Filter: &Filter{Keep: rules(t, tt.keep...), Drop: rules(t, tt.drop...)}})
			if !reflect.DeepEqual(lines, tt.lines) {
				t.Errorf("kept lines %v, want %v", lines, tt.lines)
			}
		})
	}
}

func TestTagValue(t *testing.T) {
	tags := []byte(`{"session":"s-1","n":42,"ok":true,"nil":null,"obj":{"a":"b"},"esc\u0061ped":"v\"1","x":"é"}`)
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{
		{"session", "s-1", true}, {"n", "42", true}, {"ok", "true", true}, {"nil", "", false},
		{"obj", "", false}, {"escaped", `v"1`, true}, {"x", "é", true}, {"absent", "", false},
	} {
		v, ok := tagValue(tags, tt.name)
		if ok != tt.ok || string(v) != tt.want {
			t.Errorf("tagValue(%q): got %q, %v; want %q, %v", tt.name, v, ok, tt.want, tt.ok)
		}
	}
}

func TestParseRuleNewKeys(t *testing.T) {
	for _, s := range []string{"direction=UP", "direction=IN,SIDEWAYS", "tag.=x", "tags.=x", "tag.a=", "host="} {
		if _, err := ParseRule(s); err == nil {
			t.Errorf("ParseRule(%q) succeeded", s)
		}
	}
	_, err := ParseRule("colour=red")
	if err == nil || !strings.Contains(err.Error(), "host, direction or tag.NAME") {
		t.Errorf("got %v, want the keys listed", err)
	}
}

func TestInspectCountsSkipped(t *testing.T) {
	f, err := Open(speedscaleFile, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Inspect()
	if err != nil {
		t.Fatal(err)
	}
	want := Skipped{Protocol: map[string]int{"postgres": 2, "mysql": 1}, ResponseOnly: 1, DirectionOut: 2}
	if st.Pairs != 4 || !reflect.DeepEqual(st.Skipped, want) {
		t.Errorf("got %d pairs, skipped %+v; want 4, %+v", st.Pairs, st.Skipped, want)
	}
	if got := strings.Join(st.Skipped.Kinds(), ", "); got != "postgres 2, mysql 1, response_only 1, direction_out 2" {
		t.Errorf("kinds: got %q", got)
	}
}

// speedscaleLine is an IN pair as Speedscale writes it: direction, tags
// beyond session and endpoint, fields replay ignores.
const speedscaleLine = `{"msgType":"rrpair","resource":"orders","uuid":"4d0a2f2e-1b1e-4c55-9a0e-0b7f0c1d2e01","ts":"2026-11-01T10:00:00.1Z","l7protocol":"http","direction":"IN","duration":4,"tags":{"session":"s-1","tenant":"acme","source":"web","build":"1.4.2"},"netinfo":{"upstream":{"hostname":"orders.svc"}},"http":{"req":{"method":"GET","uri":"/orders/1","version":"1.1","host":"orders.svc:8080","headers":{"Accept":["application/json"]}},"res":{"statusCode":200,"bodyBase64":"eyJpZCI6MX0="}}}`

// TestDecodeSpeedscaleLine: direction, protocol and tags come straight
// from the line (TestDecodeDoesNotAllocate decodes it without allocating).
func TestDecodeSpeedscaleLine(t *testing.T) {
	f := mustOpen(t, speedscaleLine)
	var p Pair
	if err := f.NewCursor().Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	if string(p.Direction) != "IN" || string(p.Protocol) != "http" || !strings.HasPrefix(string(p.Tags), `{"session"`) || string(p.Session) != "s-1" {
		t.Errorf("got direction %q, protocol %q, tags %q, session %q", p.Direction, p.Protocol, p.Tags, p.Session)
	}
	if !f.inMapping(p.Tags) || !f.inMapping(p.Direction) {
		t.Error("tags or direction copied out of the mapping")
	}
}

func BenchmarkDecodeSpeedscale(b *testing.B) { benchDecode(b, speedscaleLine) }

// FuzzTagValue checks tagValue against encoding/json: on any object, a
// tag with a string value is found with that value, and nothing panics.
// (encoding/json keeps the last of repeated keys, tagValue the first: such
// objects are left out.)
func FuzzTagValue(f *testing.F) {
	f.Add([]byte(`{"session":"s-1","tenant":"acme"}`), "tenant")
	f.Add([]byte(`{"t\u0065nant":"a\"b","n":1}`), "tenant")
	f.Add([]byte(`{"a":{"b":"c"},"b":"d"}`), "b")
	f.Fuzz(func(t *testing.T, tags []byte, name string) {
		v, ok := tagValue(tags, name)
		var m map[string]any
		if json.Unmarshal(tags, &m) != nil || bytes.Count(tags, []byte(`"`+name+`"`)) > 1 || bytes.IndexByte(tags, '\\') >= 0 {
			return // not an object, or a name that may repeat (escapes: TestTagValue)
		}
		if want, isString := m[name].(string); isString && utf8.Valid(tags) && (!ok || string(v) != want) {
			t.Fatalf("tagValue(%q, %q) = %q, %v; encoding/json read %q", tags, name, v, ok, want)
		}
	})
}
