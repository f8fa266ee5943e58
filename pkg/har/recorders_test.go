package har

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/golden"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// convertFile converts testdata/name, checks that what it wrote opens as
// a traffic file and matches name's golden output, and returns the stats,
// the skipped entries ("n: why") and the pairs written.
func convertFile(t *testing.T, name string) (Stats, []string, []rrpair.Pair) {
	t.Helper()
	return convertFileWith(t, name, Options{}, strings.TrimSuffix(name, ".har")+".golden.jsonl")
}

// convertFileWith is convertFile with options, against the golden file
// goldenName.
func convertFileWith(t *testing.T, name string, opt Options, goldenName string) (Stats, []string, []rrpair.Pair) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	var skipped []string
	st, err := ConvertWith(f, &out, opt, func(n int, why string) { skipped = append(skipped, strconv.Itoa(n)+": "+why) })
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	golden.Check(t, goldenName, out.Bytes())
	return st, skipped, readPairs(t, out.Bytes())
}

// readPairs opens lines as a traffic file, as a run would, and decodes
// every pair.
func readPairs(t *testing.T, lines []byte) []rrpair.Pair {
	t.Helper()
	if len(lines) == 0 {
		return nil
	}
	file, err := rrpair.OpenReader(bytes.NewReader(lines), "out.jsonl", rrpair.Options{})
	if err != nil {
		t.Fatalf("the output is not a valid traffic file: %v\n%s", err, lines)
	}
	t.Cleanup(func() { file.Close() })
	var pairs []rrpair.Pair
	cur := file.NewCursor()
	cur.WithResponses()
	for it := 0; it < file.Iterations(); it++ {
		cur.Start(it)
		for {
			var p rrpair.Pair
			more, err := cur.Next(&p)
			if err != nil {
				t.Fatal(err)
			}
			if !more {
				break
			}
			pairs = append(pairs, clonePair(p))
		}
	}
	return pairs
}

// clonePair copies what the tests read of p out of the cursor's buffers.
func clonePair(p rrpair.Pair) rrpair.Pair {
	c := p
	c.Req.URI = bytes.Clone(p.Req.URI)
	c.Req.Body = bytes.Clone(p.Req.Body)
	c.Version = bytes.Clone(p.Version)
	c.Req.Headers = nil
	for _, h := range p.Req.Headers {
		c.Req.Headers = append(c.Req.Headers, rrpair.Header{Name: bytes.Clone(h.Name), Value: bytes.Clone(h.Value)})
	}
	c.Res.Headers = nil
	for _, h := range p.Res.Headers {
		c.Res.Headers = append(c.Res.Headers, rrpair.Header{Name: bytes.Clone(h.Name), Value: bytes.Clone(h.Value)})
	}
	return c
}

// headers lists hs as "Name: value" lines.
func headers(hs []rrpair.Header) []string {
	var out []string
	for _, h := range hs {
		out = append(out, string(h.Name)+": "+string(h.Value))
	}
	return out
}

func wantSkipped(t *testing.T, st Stats, want map[string]int) {
	t.Helper()
	if len(want) == 0 {
		want = map[string]int{}
	}
	if !reflect.DeepEqual(st.Skipped, want) {
		t.Errorf("skipped by reason %v, want %v", st.Skipped, want)
	}
}

// A UTF-8 byte-order mark before the JSON is skipped, from a file and from
// a pipe alike.
func TestBOM(t *testing.T) {
	st, _, pairs := convertFile(t, "bom.har")
	if st.Written != 1 || len(pairs) != 1 || string(pairs[0].Req.URI) != "/ping" {
		t.Errorf("stats %+v", st)
	}
	in, _ := os.ReadFile(filepath.Join("testdata", "bom.har"))
	var out bytes.Buffer
	if st, err := Convert(io.MultiReader(bytes.NewReader(in)), &out, func(int, string) {}); err != nil || st.Written != 1 {
		t.Errorf("from a stream: %+v, %v", st, err)
	}
}

// chrome-har: an object in postData.params[].value skips that entry alone,
// with its HAR path, unless postData.text (which wins) makes the params
// unneeded; response headers joined with "\n" are split into fields.
func TestChromeHARParamsObject(t *testing.T) {
	st, skipped, pairs := convertFile(t, "chrome-har-params-object.har")
	wantSkipped(t, st, map[string]int{"shape": 1})
	if want := "2: shape: log.entries[1].request.postData.params[0].value: want a string, got an object"; len(skipped) != 1 || skipped[0] != want {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
	if st.Written != 2 || st.SplitValues != 2 || st.HTTP2 != 2 {
		t.Errorf("stats %+v", st)
	}
	got := headers(pairs[0].Res.Headers)
	want := []string{"content-type: application/json", "set-cookie: a=1; Path=/", "set-cookie: b=2; Path=/", "vary: Accept-Encoding", "vary: Origin"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("answer headers %q, want %q", got, want)
	}
	if string(pairs[1].Req.Body) != "e=view&n=1" {
		t.Errorf("body %q: text should win over the params", pairs[1].Req.Body)
	}
}

// WebPageTest: the request line stored as a request header and the status
// line stored as a response header are dropped and counted, the request
// kept; the URL's path and query are kept byte for byte; a
// startedDateTime without a zone is read as UTC.
func TestWebPageTestRequestLine(t *testing.T) {
	st, _, pairs := convertFile(t, "webpagetest-request-line.har")
	wantSkipped(t, st, nil)
	if st.Written != 1 || st.BadHeaders != 1 || st.AnswerHeaders != 1 {
		t.Errorf("stats %+v", st)
	}
	p := pairs[0]
	if uri := string(p.Req.URI); uri != "/search/café|x^y{z}?q=a%zz&f[]=1" {
		t.Errorf("uri %q, want the recorded one", uri)
	}
	if got := headers(p.Req.Headers); !reflect.DeepEqual(got, []string{"Host: shop.example", "User-Agent: Mozilla/5.0 PTST/240712", "Accept: text/html"}) {
		t.Errorf("request headers %q", got)
	}
	if got := headers(p.Res.Headers); !reflect.DeepEqual(got, []string{"Content-Type: text/html", "Server: nginx"}) {
		t.Errorf("answer headers %q", got)
	}
	if string(p.TS) != "2026-11-02T09:00:00.448119Z" {
		t.Errorf("ts %s", p.TS)
	}
}

// Cache hits never touched the network: Safari's _fetchType, Chrome's
// _fromCache, Firefox's entries without httpVersion; so did Chrome's
// status 0 (blocked by the client). Each is skipped with its reason.
func TestCacheHits(t *testing.T) {
	for _, tt := range []struct {
		file    string
		written int
		skipped map[string]int
	}{
		{"safari-memory-cache.har", 1, map[string]int{"cache": 2}},
		{"firefox-cache.har", 1, map[string]int{"cache": 1}},
		{"chrome-h2-unknown.har", 3, map[string]int{"cache": 1, "no-answer": 1}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			st, skipped, _ := convertFile(t, tt.file)
			wantSkipped(t, st, tt.skipped)
			if st.Written != tt.written {
				t.Errorf("wrote %d, want %d (skipped %q)", st.Written, tt.written, skipped)
			}
		})
	}
}

// A WebSocket entry is skipped as such, not replayed as a GET.
func TestWebSocket(t *testing.T) {
	st, skipped, pairs := convertFile(t, "websocket.har")
	wantSkipped(t, st, map[string]int{"websocket": 1})
	if len(skipped) != 1 || !strings.HasPrefix(skipped[0], "1: websocket: ") || len(pairs) != 1 || string(pairs[0].Req.URI) != "/rooms" {
		t.Errorf("skipped %q, pairs %d", skipped, len(pairs))
	}
}

// HTTP/2 and 3 keep their version whatever the spelling ("unknown" with
// pseudo-headers, h3, http/2.0), counted as recorded so; split cookie
// fields stay split in the file (the HTTP/1.1 writer joins them); a POST
// whose body was not captured is kept, listed, its recorded Content-Length
// where it stood.
func TestChromeH2Unknown(t *testing.T) {
	st, _, pairs := convertFile(t, "chrome-h2-unknown.har")
	if st.HTTP2 != 3 || !reflect.DeepEqual(st.NoBody, []int{5}) {
		t.Errorf("stats %+v", st)
	}
	for i, want := range []string{"2", "3", "2"} {
		if v := string(pairs[i].Version); v != want || !pairs[i].IsHTTP2() {
			t.Errorf("pair %d: version %q, want %q", i, v, want)
		}
	}
	if got := headers(pairs[0].Req.Headers); !reflect.DeepEqual(got, []string{"accept: application/json", "cookie: sid=abc", "cookie: theme=dark"}) {
		t.Errorf("headers %q", got)
	}
	p := pairs[2]
	if got := headers(p.Req.Headers); len(p.Req.Body) != 0 || !reflect.DeepEqual(got, []string{"content-type: application/octet-stream", "content-length: 2048", "x-after: 1"}) {
		t.Errorf("POST without its body: headers %q, body %q", got, p.Req.Body)
	}
}

// postData: form params rebuilt without double encoding, multipart params
// with the recorded boundary, base64 text decoded; Content-Length kept in
// place.
func TestPostData(t *testing.T) {
	st, _, pairs := convertFile(t, "postdata-params.har")
	wantSkipped(t, st, nil)
	if st.Written != 3 || len(st.NoBody) != 0 {
		t.Errorf("stats %+v", st)
	}
	if got, want := string(pairs[0].Req.Body), "user=ada+lovelace&next=%2Fcart%3Fx%3D1%26y%3D2&already=a%2Fb%20c+d&bad=100%25zz&name=caf%C3%A9~-._"; got != want {
		t.Errorf("form body\n%s\nwant\n%s", got, want)
	}
	if got := headers(pairs[0].Req.Headers); got[1] != "Content-Length: 77" {
		t.Errorf("headers %q: Content-Length not in place", got)
	}
	mp := "------X1\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nme\r\n" +
		"------X1\r\nContent-Disposition: form-data; name=\"file\"; filename=\"me.png\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n------X1--\r\n"
	if got := string(pairs[1].Req.Body); got != mp {
		t.Errorf("multipart body %q, want %q", got, mp)
	}
	if got := pairs[2].Req.Body; !bytes.Equal(got, []byte{0, 1, 0xff, 0}) {
		t.Errorf("base64 body %x", got)
	}
}

// Syntax errors say where, by line and column, and in HAR terms.
func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, in  string
		line, col int
		path, msg string
	}{
		{"truncated-postdata.har", "", 15, 69, "log.entries[1].request.postData", "after object key:value pair"},
		{"cut short", "{\"log\":{\"entries\":[\n{\"request\":{\"method\":\"GE", 2, 25, "log.entries[0].request.method", "unexpected end of file"},
		{"after the entries", "{\"log\":{\"entries\":[],\n \"pages\": [}}", 2, 12, "log.pages[0]", "invalid character '}'"},
		{"entries not an array", `{"log":{"entries":{}}}`, 1, 19, "log.entries", "want an array, got an object"},
		{"comma missing between entries", "{\"log\":{\"entries\":[{}\n  {}]}}", 2, 3, "log.entries[1]", "expected comma"},
		{"not JSON", "\xef\xbb\xbfnope", 1, 2, "", "invalid character 'o' in literal null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			if in == nil || tt.in == "" {
				in, _ = os.ReadFile(filepath.Join("testdata", tt.name))
			}
			for _, r := range []io.Reader{bytes.NewReader(in), io.MultiReader(bytes.NewReader(in))} {
				_, err := Convert(r, io.Discard, func(int, string) {})
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("got %v, want a ParseError", err)
				}
				if pe.Line != tt.line || pe.Column != tt.col || pe.Path != tt.path || !strings.Contains(pe.Error(), tt.msg) {
					t.Errorf("got %q (line %d, column %d, path %q), want line %d, column %d, %s: ...%s...", err, pe.Line, pe.Column, pe.Path, tt.line, tt.col, tt.path, tt.msg)
				}
				if strings.Contains(err.Error(), "har.") || strings.Contains(err.Error(), "Go ") {
					t.Errorf("%q names Go types", err)
				}
			}
		})
	}
}

// A field of the wrong type anywhere in an entry skips that entry, named by
// its HAR path, and the others are written; a wrong type in the recorded
// answer drops the answer, not the request.
func TestWrongTypes(t *testing.T) {
	entry := func(req, res string) string {
		return `{"startedDateTime":"2026-01-01T00:00:00Z","request":{"method":"GET","url":"http://h/","headers":[]` + req + `},"response":{"status":200,"headers":[]` + res + `}}`
	}
	in := `{"log":{"entries":[` + strings.Join([]string{
		entry(`,"httpVersion":2`, ""),
		entry(`,"extra":1`, `,"status":"OK"`),
		entry(``, ""),
		entry(`,"headers":[{"name":"a","value":1}]`, ""),
		`{"request":{"method":"GET","url":"http://h/x","headers":[]},"response":{"status":200,"headers":[{"name":"a","value":{"x":1}}]}}`,
		`1`,
		`{"request":[]}`,
	}, ",") + `]}}`
	var skipped []string
	var out bytes.Buffer
	st, err := Convert(strings.NewReader(in), &out, func(n int, why string) { skipped = append(skipped, why) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"shape: log.entries[0].request.httpVersion: want a string, got a number",
		"shape: log.entries[3].request.headers[0].value: want a string, got a number",
		"shape: log.entries[5]: want an object, got a number",
		"shape: log.entries[6].request: want an object, got an array",
	}
	slices.Sort(skipped) // in time order, those without a time first
	if !reflect.DeepEqual(skipped, want) {
		t.Errorf("skipped\n%q\nwant\n%q", skipped, want)
	}
	if st.Written != 3 || st.AnswersDropped != 2 {
		t.Errorf("stats %+v, want 3 written, 2 answers dropped", st)
	}
}
