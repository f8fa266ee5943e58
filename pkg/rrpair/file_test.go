package rrpair

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func writeFile(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustOpen(t testing.TB, content string) *File {
	t.Helper()
	f, err := Open(writeFile(t, content), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

const goodLine = `{"http":{"req":{"method":"GET","uri":"/a","host":"h:1"}}}`

func TestOpenRejectsBadLines(t *testing.T) {
	tests := []struct {
		name    string
		content string
		opt     Options
		line    int
		col     int
		want    string // substring of the message
	}{
		{"not JSON", goodLine + "\nnot json\n", Options{}, 2, 1, "invalid JSON"},
		{"truncated JSON", goodLine + "\n" + `{"http":{"req":{"method":"GET"` + "\n", Options{}, 2, 0, "invalid JSON"},
		{"array not object", `[1,2]`, Options{}, 1, 0, "want a JSON object, got an array"},
		{"trailing garbage", goodLine + "x\n", Options{}, 1, 0, "unexpected data after the object"},
		{"no method", `{"http":{"req":{"uri":"/a","host":"h"}}}`, Options{}, 1, 0, "http.req.method: missing"},
		{"empty method", `{"http":{"req":{"method":"","uri":"/a","host":"h"}}}`, Options{}, 1, 0, "http.req.method: missing"},
		{"method with space", `{"http":{"req":{"method":"GE T","uri":"/a","host":"h"}}}`, Options{}, 1, 0, "not a valid method"},
		{"method not a string", `{"http":{"req":{"method":5,"uri":"/a","host":"h"}}}`, Options{}, 1, 0, "http.req.method: want a string, got a number"},
		{"no uri", `{"http":{"req":{"method":"GET","host":"h"}}}`, Options{}, 1, 0, "http.req.uri: missing"},
		{"uri without slash", `{"http":{"req":{"method":"GET","uri":"a/b","host":"h"}}}`, Options{}, 1, 0, "want a path starting with /"},
		{"uri with space", `{"http":{"req":{"method":"GET","uri":"/a b","host":"h"}}}`, Options{}, 1, 0, "space or control"},
		{"uri with escaped newline", `{"http":{"req":{"method":"GET","uri":"/a\nb","host":"h"}}}`, Options{}, 1, 0, "space or control"},
		{"star without OPTIONS", `{"http":{"req":{"method":"GET","uri":"*","host":"h"}}}`, Options{}, 1, 0, "only valid with OPTIONS"},
		{"bad base64", `{"http":{"req":{"method":"POST","uri":"/a","host":"h","bodyBase64":"!!!"}}}`, Options{}, 1, 0, "http.req.bodyBase64: bad base64"},
		{"bad response base64", `{"http":{"req":{"method":"POST","uri":"/a","host":"h"},"res":{"bodyBase64":"a"}}}`, Options{}, 1, 0, "http.res.bodyBase64: bad base64"},
		{"no host, no target", `{"http":{"req":{"method":"GET","uri":"/a"}}}`, Options{RequireHost: true}, 1, 0, "http.req.host: missing"},
		{"bad host", `{"http":{"req":{"method":"GET","uri":"/a","host":"a b"}}}`, Options{}, 1, 0, "http.req.host"},
		{"headers not an object", `{"http":{"req":{"method":"GET","uri":"/a","host":"h","headers":[]}}}`, Options{}, 1, 0, "http.req.headers: want an object"},
		{"header value not array", `{"http":{"req":{"method":"GET","uri":"/a","host":"h","headers":{"X":"v"}}}}`, Options{}, 1, 0, "http.req.headers.X: want an array of strings, got a string"},
		{"header element not string", `{"http":{"req":{"method":"GET","uri":"/a","host":"h","headers":{"X":[1]}}}}`, Options{}, 1, 0, "http.req.headers.X: want an array of strings"},
		{"header name not token", `{"http":{"req":{"method":"GET","uri":"/a","host":"h","headers":{"X Y":["v"]}}}}`, Options{}, 1, 0, "not a valid token"},
		{"header value with CRLF", `{"http":{"req":{"method":"GET","uri":"/a","host":"h","headers":{"X":["v\r\nEvil: 1"]}}}}`, Options{}, 1, 0, "CR, LF or NUL"},
		{"status not a number", `{"http":{"req":{"method":"GET","uri":"/a","host":"h"},"res":{"statusCode":"200"}}}`, Options{}, 1, 0, "http.res.statusCode: want a number"},
		{"status out of range", `{"http":{"req":{"method":"GET","uri":"/a","host":"h"},"res":{"statusCode":42}}}`, Options{}, 1, 0, "from 100 to 999"},
		{"bad ts", `{"ts":"yesterday","http":{"req":{"method":"GET","uri":"/a","host":"h"}}}`, Options{}, 1, 0, "ts: want RFC 3339"},
		{"ts on a day the month has not", `{"ts":"2026-02-29T10:00:00Z","http":{"req":{"method":"GET","uri":"/a","host":"h"}}}`, Options{}, 1, 0, "ts: want RFC 3339"},
		{"ts not a string", `{"ts":12,"http":{"req":{"method":"GET","uri":"/a","host":"h"}}}`, Options{}, 1, 0, "ts: want a string"},
		{"session not a string", `{"tags":{"session":7},"http":{"req":{"method":"GET","uri":"/a","host":"h"}}}`, Options{}, 1, 0, "tags.session: want a string"},
		{"http not an object", `{"http":"x"}`, Options{}, 1, 0, "http: want an object"},
		{"req not an object", `{"http":{"req":[]}}`, Options{}, 1, 0, "http.req: want an object"},
		{"bad line after blank lines", goodLine + "\n\n   \n" + `{"http":{}}` + "\n", Options{}, 4, 0, "http.req.method: missing"},
		{"CRLF line endings keep line numbers", goodLine + "\r\n" + goodLine + "\r\n{bad}\r\n", Options{}, 3, 2, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			f, err := Open(path, tt.opt)
			if err == nil {
				f.Close()
				t.Fatalf("Open succeeded, want an error naming line %d", tt.line)
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("got %T %v, want *ValidationError", err, err)
			}
			if verr.Total != 1 || len(verr.Lines) != 1 {
				t.Fatalf("got %d errors (%v), want 1", verr.Total, err)
			}
			le := verr.Lines[0]
			if le.Line != tt.line {
				t.Errorf("got line %d, want %d (%v)", le.Line, tt.line, err)
			}
			if tt.col != 0 && le.Col != tt.col {
				t.Errorf("got column %d, want %d (%v)", le.Col, tt.col, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to contain %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("got %q, want it to name the file %s", err, path)
			}
		})
	}
}

func TestOpenEmpty(t *testing.T) {
	for name, content := range map[string]string{"empty": "", "only blank lines": "\n  \n\t\r\n"} {
		t.Run(name, func(t *testing.T) {
			_, err := Open(writeFile(t, content), Options{})
			if !errors.Is(err, ErrEmpty) {
				t.Fatalf("got %v, want ErrEmpty", err)
			}
		})
	}
}

func TestValidationErrorListsFirstFewAndCounts(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 25; i++ {
		b.WriteString(goodLine + "\n{}\n")
	}
	_, err := Open(writeFile(t, b.String()), Options{MaxErrors: 3})
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("got %v, want *ValidationError", err)
	}
	if verr.Total != 25 || len(verr.Lines) != 3 {
		t.Fatalf("got total %d, listed %d; want 25, 3", verr.Total, len(verr.Lines))
	}
	if verr.Lines[0].Line != 2 || verr.Lines[2].Line != 6 {
		t.Errorf("got lines %d..%d, want 2..6", verr.Lines[0].Line, verr.Lines[2].Line)
	}
	if !strings.Contains(err.Error(), "... and 22 more") {
		t.Errorf("got %q, want a count of the rest", err)
	}
}

func TestDecodeFields(t *testing.T) {
	body := []byte{0, 1, 2, 0xff, '\n'}
	line := map[string]any{
		"msgType":    "rrpair",
		"ts":         "2026-11-01T10:00:00.123456789+02:00",
		"duration":   12.5,
		"l7protocol": "https",
		"tags":       map[string]any{"session": "s-1", "endpoint": "ingest", "other": []int{1}},
		"http": map[string]any{
			"req": map[string]any{
				"method": "POST", "uri": "//double/slash/%2F?q=a+b&q=c", "url": "/ignored",
				"host": "api.example:8443", "version": "2",
				"bodyBase64": body, // encoding/json writes []byte as base64
				"body":       "ignored when bodyBase64 is present",
				"extra":      map[string]any{"deep": []any{1, "x", nil, true}},
			},
			"res": map[string]any{"statusCode": 201, "body": "créé \"ok\""},
		},
	}
	raw, err := json.Marshal(line)
	if err != nil {
		t.Fatal(err)
	}
	// Header order and case matter and encoding/json sorts map keys, so
	// splice the headers object in by hand.
	raw = bytes.Replace(raw, []byte(`"host":`), []byte(`"headers":{"x-lower":["1"],"X-Multi":["a","b"],"x-multi":["c"],"Content-Type":["text/plain; q=\"x\""]},"host":`), 1)
	f := mustOpen(t, string(raw)+"\n")
	c := f.NewCursor().WithResponses()
	var p Pair
	if err := c.Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	check := func(field string, got []byte, want string) {
		t.Helper()
		if string(got) != want {
			t.Errorf("%s: got %q, want %q", field, got, want)
		}
	}
	check("method", p.Req.Method, "POST")
	check("uri", p.Req.URI, "//double/slash/%2F?q=a+b&q=c")
	check("host", p.Req.Host, "api.example:8443")
	check("scheme", p.Req.Scheme, "https")
	check("body", p.Req.Body, string(body))
	check("session", p.Session, "s-1")
	check("endpoint tag", p.EndpointTag, "ingest")
	check("res body", p.Res.Body, `créé "ok"`)
	if p.Res.Status != 201 {
		t.Errorf("status: got %d, want 201", p.Res.Status)
	}
	if !p.IsHTTP2() {
		t.Errorf("version 2: IsHTTP2 false")
	}
	var hs []string
	for _, h := range p.Req.Headers {
		hs = append(hs, string(h.Name)+"="+string(h.Value))
	}
	want := []string{"x-lower=1", "X-Multi=a", "X-Multi=b", "x-multi=c", `Content-Type=text/plain; q="x"`}
	if strings.Join(hs, "|") != strings.Join(want, "|") {
		t.Errorf("headers: got %q, want %q", hs, want)
	}
	ts, err := p.Time()
	if err != nil || ts.UnixNano() != 1793520000123456789 {
		t.Errorf("ts: got %v %v", ts.UTC(), err)
	}
	if d, _ := p.RecordedDuration(); d.Milliseconds() != 12 {
		t.Errorf("duration: got %v", d)
	}
	if got := f.Endpoints(); len(got) != 1 || got[0] != "ingest" {
		t.Errorf("endpoints: got %q, want the tag", got)
	}
}

func TestBodyTextWithoutEscapesComesFromTheMapping(t *testing.T) {
	f := mustOpen(t, `{"http":{"req":{"method":"POST","uri":"/a","host":"h","body":"plain text body"}}}`)
	var p Pair
	if err := f.NewCursor().Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	if !within(p.Req.Body, f.data) {
		t.Errorf("body %q was copied; want a slice of the mapped file", p.Req.Body)
	}
}

func within(b, data []byte) bool {
	if len(b) == 0 {
		return false
	}
	start := &data[0]
	end := &data[len(data)-1]
	p := &b[0]
	return uintptrOf(p) >= uintptrOf(start) && uintptrOf(p) <= uintptrOf(end)
}

func TestAbsoluteURI(t *testing.T) {
	f := mustOpen(t, `{"http":{"req":{"method":"GET","uri":"https://svc.local:9443/x?y=1"}}}`)
	var p Pair
	if err := f.NewCursor().Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	if string(p.Req.URI) != "/x?y=1" || string(p.Req.Host) != "svc.local:9443" || string(p.Req.Scheme) != "https" {
		t.Errorf("got uri %q host %q scheme %q", p.Req.URI, p.Req.Host, p.Req.Scheme)
	}
}

func TestSessionsFormIterations(t *testing.T) {
	lines := []string{
		`{"tags":{"session":"A"},"http":{"req":{"method":"GET","uri":"/1","host":"h"}}}`,
		`{"http":{"req":{"method":"GET","uri":"/2","host":"h"}}}`,
		`{"tags":{"session":"B"},"http":{"req":{"method":"GET","uri":"/3","host":"h"}}}`,
		``,
		`{"tags":{"session":"A"},"http":{"req":{"method":"GET","uri":"/4","host":"h"}}}`,
		`{"tags":{"session":""},"http":{"req":{"method":"GET","uri":"/5","host":"h"}}}`,
		`{"tags":{"session":"B"},"http":{"req":{"method":"GET","uri":"/6","host":"h"}}}`,
	}
	f := mustOpen(t, strings.Join(lines, "\n"))
	if f.Len() != 6 || f.Sessions() != 2 || f.Iterations() != 4 {
		t.Fatalf("got %d pairs, %d sessions, %d iterations; want 6, 2, 4", f.Len(), f.Sessions(), f.Iterations())
	}
	want := [][]string{{"/1", "/4"}, {"/2"}, {"/3", "/6"}, {"/5"}}
	c := f.NewCursor()
	var p Pair
	for k, uris := range want {
		c.Start(k)
		var got []string
		for {
			ok, err := c.Next(&p)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got = append(got, string(p.Req.URI))
		}
		if strings.Join(got, ",") != strings.Join(uris, ",") {
			t.Errorf("iteration %d: got %v, want %v", k, got, uris)
		}
	}
	c.Start(2)
	c.Next(&p)
	if p.Line != 3 {
		t.Errorf("line of /3: got %d, want 3", p.Line)
	}
}

func TestOpenReaderSpools(t *testing.T) {
	f, err := OpenReader(strings.NewReader(goodLine+"\n"+goodLine), "<stdin>", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Len() != 2 {
		t.Errorf("got %d pairs, want 2", f.Len())
	}
	_, err = OpenReader(strings.NewReader("{}\n"), "<stdin>", Options{})
	if err == nil || !strings.Contains(err.Error(), "<stdin>:1: http.req.method: missing") {
		t.Errorf("got %v, want an error naming <stdin>:1", err)
	}
}

func TestEndpointTable(t *testing.T) {
	var b strings.Builder
	// 102 distinct names: /n0 x1, /n1 x2 ... so frequency decides the order.
	for i := 0; i < 102; i++ {
		for j := 0; j <= i%5; j++ {
			b.WriteString(`{"http":{"req":{"method":"GET","uri":"/n` + string(rune('a'+i/26)) + string(rune('a'+i%26)) + `","host":"h"}}}` + "\n")
		}
	}
	b.WriteString(`{"http":{"req":{"method":"GET","uri":"/users/42","host":"h"}}}` + "\n")
	f := mustOpen(t, b.String())
	eps := f.Endpoints()
	if len(eps) != MaxEndpoints+1 || eps[len(eps)-1] != OtherEndpoint {
		t.Fatalf("got %d endpoints ending %q, want %d ending %q", len(eps), eps[len(eps)-1], MaxEndpoints+1, OtherEndpoint)
	}
	if eps[0] != "GET /nae" { // i=4: the first name seen with 5 pairs
		t.Errorf("most frequent: got %q, want GET /nae", eps[0])
	}
	c := f.NewCursor()
	var p Pair
	if err := c.Decode(f.Len()-1, &p); err != nil {
		t.Fatal(err)
	}
	if eps[p.Endpoint] != OtherEndpoint {
		t.Errorf("a rare endpoint: got %q, want %q", eps[p.Endpoint], OtherEndpoint)
	}
}

func TestEndpointNames(t *testing.T) {
	tests := []struct{ method, uri, want string }{
		{"GET", "/users/42", "GET /users/{id}"},
		{"GET", "/users/42/orders/o-991?x=1", "GET /users/{id}/orders/{id}"},
		{"DELETE", "/items/3f2b1c9e-1a2b-4c3d-8e9f-001122334455", "DELETE /items/{id}"},
		{"GET", "/blobs/5f2b9c3ad4e1f0a7b8c9d0e1", "GET /blobs/{id}"},
		{"GET", "/u/usr_8f3a2/x", "GET /u/{id}/x"},
		{"GET", "/k/01ARZ3NDEKTSV4RRFFQ69G5FAV", "GET /k/{id}"},
		{"GET", "/api/v2/health", "GET /api/v2/health"},
		{"GET", "/api_v2/facade", "GET /api_v2/facade"},
		{"GET", "/", "GET /"},
		{"GET", "?x", "GET /"},
		{"POST", "/events/", "POST /events/"},
		{"GET", "//double//slash", "GET //double//slash"},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			got := string(AppendEndpointName(nil, []byte(tt.method), []byte(tt.uri)))
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInspect(t *testing.T) {
	lines := []string{
		`{"ts":"2026-11-01T10:00:00Z","tags":{"session":"A"},"http":{"req":{"method":"POST","uri":"/e","host":"h","body":"abc"},"res":{"statusCode":202,"body":"ok"}}}`,
		`{"ts":"2026-11-01T10:00:05Z","http":{"req":{"method":"GET","uri":"/e/1","host":"h","version":"2"},"res":{"statusCode":200}}}`,
		`{"ts":"2026-11-01T10:00:02Z","tags":{"session":"A"},"http":{"req":{"method":"GET","uri":"/e/2","host":"g"}}}`,
		strings.Replace(grpcLine, "10:00:00Z", "10:00:03Z", 1),
	}
	f := mustOpen(t, strings.Join(lines, "\n"))
	st, err := f.Inspect()
	if err != nil {
		t.Fatal(err)
	}
	if st.Pairs != 4 || st.Sessions != 1 || st.Iterations != 3 || st.SpanS != 5 || st.OutOfOrder != 1 || st.GRPC != 1 {
		t.Errorf("got %+v", st)
	}
	if st.Methods["GET"] != 2 || st.Status[202] != 1 || st.Status[0] != 1 || st.Downgraded != 2 || st.ReqBytes != 8 || st.ResBytes != 2 {
		t.Errorf("got %+v", st)
	}
	if len(st.Endpoints) != 3 || st.Endpoints[0] != (Count{"GET /e/{id}", 2}) {
		t.Errorf("endpoints: got %+v", st.Endpoints)
	}
}

func TestDecodeDoesNotAllocate(t *testing.T) {
	for _, line := range []string{benchLine, speedscaleLine} {
		f := mustOpen(t, line)
		c := f.NewCursor()
		var p Pair
		c.Decode(0, &p)
		allocs := testing.AllocsPerRun(100, func() {
			if err := c.Decode(0, &p); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("got %v allocs per decode of %.60s..., want 0", allocs, line)
		}
	}
}

const benchLine = `{"msgType":"rrpair","ts":"2026-11-01T10:00:00.123456789Z","l7protocol":"http","duration":3,"tags":{"session":"s-0007"},"http":{"req":{"method":"POST","url":"/events","uri":"/events?src=web","version":"1.1","host":"ingest.demo.local:8080","headers":{"Content-Type":["application/json"],"User-Agent":["shop-web/4.2"],"X-Request-Id":["8c1e2f4a-0b7d-4f63-9a51-2d7e8f9a0b1c"],"Accept":["*/*"]},"body":"{\"type\":\"page_view\",\"user_id\":\"u-0012345\",\"ts\":1793527200123,\"url\":\"/products/42\"}"},"res":{"statusCode":202,"headers":{"Content-Type":["application/json"]},"bodyBase64":"eyJzdGF0dXMiOiJhY2NlcHRlZCJ9"}}}`

// grpcLine is a recorded gRPC call whose status came in the trailers.
const grpcLine = `{"ts":"2026-11-01T10:00:00Z","http":{"req":{"method":"POST","uri":"/pkg.Svc/Get","host":"h:1","version":"2","headers":{"content-type":["application/grpc"],"te":["trailers"]},"bodyBase64":"AAAAAAA="},"res":{"statusCode":200,"headers":{"content-type":["application/grpc"]},"trailers":{"grpc-status":["5"],"grpc-message":["not found"]},"bodyBase64":""}}}`

func TestDecodeTrailers(t *testing.T) {
	f := mustOpen(t, grpcLine+"\n"+goodLine)
	var p Pair
	c := f.NewCursor()
	if err := c.Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	if p.Res.Status != 200 || len(p.Res.Trailers) != 0 || len(p.Res.Headers) != 0 {
		t.Errorf("without WithResponses: got status %d, %d trailers, %d headers; want 200, 0, 0", p.Res.Status, len(p.Res.Trailers), len(p.Res.Headers))
	}
	c.WithResponses()
	if err := c.Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range p.Res.Trailers {
		got = append(got, string(h.Name)+"="+string(h.Value))
	}
	if want := []string{"grpc-status=5", "grpc-message=not found"}; !reflect.DeepEqual(got, want) {
		t.Errorf("trailers: got %q, want %q", got, want)
	}
	if !p.IsGRPC() {
		t.Error("IsGRPC: got false, want true")
	}
	// The next pair has none: the trailers of the last one are gone.
	if err := c.Decode(1, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Res.Trailers) != 0 {
		t.Errorf("next pair: got %d trailers, want 0", len(p.Res.Trailers))
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := c.Decode(0, &p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("got %v allocs per decode with responses and trailers, want 0", allocs)
	}
}

func TestTrailersValidated(t *testing.T) {
	bad := strings.Replace(grpcLine, `"grpc-message"`, `"grpc message"`, 1)
	_, err := Open(writeFile(t, bad), Options{})
	if err == nil || !strings.Contains(err.Error(), "http.res.trailers") || !strings.Contains(err.Error(), ":1") {
		t.Errorf("got %v, want an error naming http.res.trailers at line 1", err)
	}
}

func BenchmarkDecode(b *testing.B) { benchDecode(b, benchLine) }

// benchDecode measures a cursor decoding line, again and again.
func benchDecode(b *testing.B, line string) {
	f := mustOpen(b, line)
	c := f.NewCursor()
	var p Pair
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if err := c.Decode(0, &p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 10000; i++ {
		sb.WriteString(benchLine + "\n")
	}
	path := writeFile(b, sb.String())
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	for b.Loop() {
		f, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func TestUnixNanoAgreesWithTimeParse(t *testing.T) {
	for _, s := range []string{
		"2026-11-01T10:00:00Z", "2026-11-01T10:00:00.5Z", "2026-11-01T10:00:00.123456789Z",
		"2026-11-01T10:00:00.123456789+02:00", "2026-11-01T10:00:00-07:30", "1999-12-31T23:59:59.999999999Z",
		"2024-02-29T12:00:00Z", "2000-02-29T00:00:00Z", "2100-03-01T00:00:00Z", "1970-01-01T00:00:00Z",
		"1969-12-31T23:59:59.5Z", "1900-01-01T00:00:00+01:00", "2262-04-11T23:47:16Z",
	} {
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		p := Pair{TS: []byte(s)}
		got, ok := p.UnixNano()
		if !ok || got != want.UnixNano() {
			t.Errorf("%s: got %d %v, want %d", s, got, ok, want.UnixNano())
		}
		if a := testing.AllocsPerRun(10, func() { p.UnixNano() }); a != 0 {
			t.Errorf("%s: %v allocs", s, a)
		}
	}
	for _, s := range []string{"", "2026-11-01", "2026-11-01T10:00:00", "2026-11-01T10:00:00.Z", "2026-13-01T10:00:00Z", "2026-11-01T10:00:00+0200",
		"2026-02-29T10:00:00Z", "2100-02-29T10:00:00Z", "2026-04-31T10:00:00Z", "2026-11-00T10:00:00Z",
		"9999-12-31T23:59:59Z", "2263-01-01T00:00:00Z", "1677-01-01T00:00:00Z", "0001-01-01T00:00:00Z"} {
		p := Pair{TS: []byte(s)}
		if _, ok := p.UnixNano(); ok {
			t.Errorf("%q parsed", s)
		}
	}
}

// TestStampRoundTrip checks that a time written back at its own instant
// is written as it was: offset, fraction digits, separator, zone letter.
func TestStampRoundTrip(t *testing.T) {
	for _, s := range []string{
		"2026-11-01T10:00:00Z", "2026-11-01T10:00:00.5Z", "2026-11-01T10:00:00.000000001+14:00",
		"2026-11-01 10:00:00-09:30", "1999-12-31T23:59:59.123456789z",
	} {
		st, ok := ParseRFC3339([]byte(s))
		if !ok {
			t.Fatalf("%s: not parsed", s)
		}
		if got := string(st.AppendRFC3339(nil, st.UnixNano)); got != s {
			t.Errorf("got %s, want %s", got, s)
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if err == nil && want.UnixNano() != st.UnixNano {
			t.Errorf("%s: %d, want %d", s, st.UnixNano, want.UnixNano())
		}
	}
}

func TestHosts(t *testing.T) {
	f := mustOpen(t, strings.Join([]string{
		`{"http":{"req":{"method":"GET","uri":"/a","host":"b:1"}}}`,
		`{"http":{"req":{"method":"GET","uri":"http://a:2/x"}}}`,
		`{"http":{"req":{"method":"GET","uri":"/c","host":"b:1"}}}`,
		`{"http":{"req":{"method":"GET","uri":"/d"}}}`,
	}, "\n"))
	if got := strings.Join(f.Hosts(), ","); got != "b:1,a:2," {
		t.Errorf("got %q, want b:1,a:2, and the empty host", got)
	}
}

func TestShardsAreDisjointAndWhole(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 50; i++ {
		session := ""
		if i%3 != 0 {
			session = `"tags":{"session":"s` + string(rune('a'+i%7)) + `"},`
		}
		b.WriteString(`{` + session + `"http":{"req":{"method":"GET","uri":"/` + strings.Repeat("x", i%5) + `/` + string(rune('A'+i%26)) + `","host":"h"}}}` + "\n")
	}
	path := writeFile(t, b.String())
	all, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if all.Requests() != 50 || all.PerIteration() != 50/float64(all.Iterations()) {
		t.Errorf("whole file: %d requests, %v an iteration; want 50, 50/%d", all.Requests(), all.PerIteration(), all.Iterations())
	}
	seen := map[int]int{}
	iterations, requests := 0, 0
	for i := 0; i < 3; i++ {
		f, err := Open(path, Options{Shard: Shard{i, 3}})
		if err != nil {
			t.Fatal(err)
		}
		requests += f.Requests()
		if want := float64(f.Requests()) / float64(f.Iterations()); f.PerIteration() != want {
			t.Errorf("shard %d: %v requests an iteration, want its own %v", i, f.PerIteration(), want)
		}
		if strings.Join(f.Endpoints(), ",") != strings.Join(all.Endpoints(), ",") {
			t.Errorf("shard %d derives another endpoint table", i)
		}
		iterations += f.Iterations()
		for k := 0; k < f.Iterations(); k++ {
			for j := 0; j < f.IterationLen(k); j++ {
				seen[f.PairOf(k, j)]++
			}
			// Iteration k of shard i is iteration 3k+i of the whole file.
			if want := all.IterationLen(3*k + i); f.IterationLen(k) != want {
				t.Errorf("shard %d iteration %d: %d pairs, want %d (sessions stay whole)", i, k, f.IterationLen(k), want)
			}
		}
		f.Close()
	}
	if len(seen) != 50 || iterations != all.Iterations() || requests != 50 {
		t.Errorf("shards cover %d pairs (%d requests) in %d iterations, want 50 in %d", len(seen), requests, iterations, all.Iterations())
	}
	for p, n := range seen {
		if n != 1 {
			t.Errorf("pair %d in %d shards", p, n)
		}
	}
	if _, err := Open(path, Options{Shard: Shard{3, 3}}); err == nil {
		t.Error("shard 3/3 opened")
	}
}

func TestSetsCookies(t *testing.T) {
	res := func(headers string) string {
		return `{"http":{"req":{"method":"POST","uri":"/login","host":"h","body":"set-cookie is just text here"},"res":{"statusCode":200,"headers":` + headers + `}}}`
	}
	for _, tt := range []struct {
		lines []string
		want  bool
	}{
		{[]string{res(`{}`), res(`{"Content-Type":["text/plain"]}`)}, false},
		{[]string{res(`{}`), res(`{"set-cookie":["sid=1"]}`)}, true},
		{[]string{res(`{"SET-COOKIE":["sid=1"]}`)}, true},
		{[]string{res(`{"X-Note":["Set-Cookie"]}`)}, false}, // mentioned, not set
	} {
		f, err := OpenReader(strings.NewReader(strings.Join(tt.lines, "\n")), "t.jsonl", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.SetsCookies(); got != tt.want {
			t.Errorf("%v: got %v, want %v", tt.lines, got, tt.want)
		}
		f.Close()
	}
}

// TestChunkedIndexMatchesOnePass opens files cut into chunks as small as a
// line, which the workers validate in parallel, and checks that the index,
// the numbering and the errors are those of the file read in one chunk.
func TestChunkedIndexMatchesOnePass(t *testing.T) {
	demo, err := os.ReadFile(filepath.Join("..", "..", "testdata", "demo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var mixed strings.Builder
	for i := range 300 {
		host := []string{"a:1", "b:2", "a:1", "c:3"}[i%4/2*2+i%7%2]
		session := fmt.Sprintf(`s-%d`, i%37)
		if i%11 == 0 {
			session = fmt.Sprintf(`s\u002d%d`, i%37) // unescaped out of the decoder: copied
		}
		res := `"res":{"statusCode":200}`
		if i == 250 {
			res = `"res":{"statusCode":200,"headers":{"Set-Cookie":["sid=1"]}}`
		}
		fmt.Fprintf(&mixed, `{"ts":"2026-11-01T10:%02d:%02dZ","tags":{"session":"%s"},"http":{"req":{"method":"%s","uri":"/items/%d?x=%d","host":"%s"},%s}}`+"\n",
			(300-i)/60, (300-i)%60, session, []string{"GET", "POST"}[i%2], i%5, i, host, res)
		if i%13 == 0 {
			mixed.WriteString("\n  \n")
		}
	}
	var bad strings.Builder
	for i := range 60 {
		if i%4 == 3 {
			bad.WriteString("{not json\n")
		} else {
			bad.WriteString(goodLine + "\n")
		}
	}
	sample := &Filter{Sample: 0.5, Seed: 7}
	keep, err := ParseRule("method=GET")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		content string
		opt     Options
	}{
		{"demo", string(demo), Options{}},
		{"mixed", mixed.String(), Options{}},
		{"mixed, sampled", mixed.String(), Options{Filter: sample}},
		{"mixed, kept", mixed.String(), Options{Filter: &Filter{Keep: []Rule{keep}}}},
		{"mixed, shard", mixed.String(), Options{Shard: Shard{Index: 1, Count: 3}}},
		{"bad lines", bad.String(), Options{}},
		{"no final newline", strings.TrimSuffix(mixed.String(), "\n"), Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.content)
			open := func(size int) (*File, error) {
				old := chunkSize
				chunkSize = size
				defer func() { chunkSize = old }()
				return Open(path, tc.opt)
			}
			want, wantErr := open(1 << 30)
			if want != nil { // the reference itself: each pair's endpoint is its name
				c := want.NewCursor()
				var p Pair
				for i := range want.Len() {
					if err := c.Decode(i, &p); err != nil {
						t.Fatal(err)
					}
					name := string(AppendEndpointName(nil, p.Req.Method, p.Req.URI))
					if got := want.Endpoints()[p.Endpoint]; got != name {
						t.Fatalf("pair %d (line %d): endpoint %q, want %q", i, p.Line, got, name)
					}
				}
			}
			for _, size := range []int{1, 50, 333, 4096} {
				got, err := open(size)
				if !reflect.DeepEqual(err, wantErr) {
					t.Fatalf("chunks of %d: error %v; one pass: %v", size, err, wantErr)
				}
				if err != nil {
					continue
				}
				g, w := *got, *want
				g.data, w.data = nil, nil // compared by the offsets into them
				if !reflect.DeepEqual(g, w) {
					t.Errorf("chunks of %d: index differs from one pass:\n got %+v\nwant %+v", size, g, w)
				}
				got.Close()
			}
			if want != nil {
				want.Close()
			}
		})
	}
}
