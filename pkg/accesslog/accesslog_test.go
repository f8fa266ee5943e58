package accesslog

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/golden"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// The logs in testdata were written by nginx 1.22 on loopback, one
// request per connection: the same ten requests logged in combined, in a
// JSON log_format with escape=json, and in a custom log_format.
const customFormat = `$remote_addr [$time_local] "$request" $status $request_time "$http_host"`

// wantTargets are the raw targets the clients sent, in order, of the
// requests replay keeps: the garbage of a TLS handshake is no request,
// and "/sp ace" is no target a replay can send. (A run takes the host of
// the absolute target http://a.test/abs and sends /abs.)
var wantTargets = []string{
	"/plain",
	"/search?q=caf%C3%A9&page=2",
	"/caf\xc3\xa9/\"q\"/\\/~%7f",
	"/bin/\xff\xfe?x=\xa5",
	"/events",
	"/missing",
	"/nohost",
	"/abs",
}

func TestNginxLogs(t *testing.T) {
	for _, c := range []struct {
		file, format string
		hosts        bool
	}{
		{"nginx-combined.log", "", false},
		{"nginx-json.log", "", true},
		{"nginx-custom.log", customFormat, true},
	} {
		t.Run(c.file, func(t *testing.T) {
			in, err := os.Open(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			var opt Options
			if c.format != "" {
				if opt.Format, err = ParseFormat(c.format); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			var skipped []string
			st, err := Convert(in, &out, opt, func(n int, why string) { skipped = append(skipped, fmt.Sprintf("%d: %s", n, why)) })
			if err != nil {
				t.Fatal(err)
			}
			if st.Lines != 10 || st.Written != 8 || st.NotHTTP != 1 || st.Spread != 8 || st.Sorted ||
				len(skipped) != 1 || !strings.HasPrefix(skipped[0], "8: ") || !strings.Contains(skipped[0], "space") {
				t.Errorf("stats %+v, skipped %q", st, skipped)
			}
			pairs := decode(t, out.Bytes())
			var targets []string
			for i, p := range pairs {
				targets = append(targets, p.uri)
				// All ten were logged within one second: eight kept, 1/8 s apart.
				if want := pairs[0].ts.Add(time.Duration(i) * time.Second / 8); !p.ts.Equal(want) {
					t.Errorf("pair %d: ts %v, want %v", i, p.ts, want)
				}
			}
			if !slices.Equal(targets, wantTargets) {
				t.Errorf("targets %q\nwant %q", targets, wantTargets)
			}
			if pairs[4].method != "POST" || pairs[5].method != "HEAD" || pairs[5].status != 404 || pairs[0].status != 200 {
				t.Errorf("methods or statuses: %+v", pairs)
			}
			if got := pairs[2].host; c.hosts && got != "a.test:8080" || !c.hosts && got != "" {
				t.Errorf("host %q (the log has hosts: %v)", got, c.hosts)
			}
			if c.hosts && (st.NoHost != 1 || pairs[6].host != "") {
				t.Errorf("no host: %d, %q", st.NoHost, pairs[6].host)
			}
			golden.Check(t, strings.TrimSuffix(c.file, ".log")+".golden.jsonl", out.Bytes())
		})
	}
}

type pair struct {
	method, uri, host string
	status            int
	ts                time.Time
}

// decode opens a converted file as a run would.
func decode(t *testing.T, jsonl []byte) []pair {
	t.Helper()
	f, err := rrpair.OpenReader(bytes.NewReader(jsonl), "out.jsonl", rrpair.Options{})
	if err != nil {
		t.Fatalf("the output does not open: %v\n%s", err, jsonl)
	}
	defer f.Close()
	var got []pair
	c := f.NewCursor()
	var p rrpair.Pair
	for i := range f.Len() {
		if err := c.Decode(i, &p); err != nil {
			t.Fatal(err)
		}
		ts, err := p.Time()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pair{string(p.Req.Method), string(p.Req.URI), string(p.Req.Host), p.Res.Status, ts})
	}
	return got
}

// TestSpreadAndSort: the requests of one second are spread evenly within
// it, whole seconds apart stay apart, and a log out of order is sorted
// stably; sub-second times ($msec) are kept as they are.
func TestSpreadAndSort(t *testing.T) {
	line := func(ts, path string) string {
		return `10.0.0.1 - - [` + ts + `] "GET ` + path + ` HTTP/1.1" 200 3 "-" "curl/8"` + "\n"
	}
	in := line("01/Nov/2026:10:00:00 +0000", "/a") +
		line("01/Nov/2026:10:00:00 +0000", "/b") +
		line("01/Nov/2026:10:00:02 +0000", "/d") +
		line("01/Nov/2026:10:00:01 +0100", "/early") + // an hour before: out of order
		line("01/Nov/2026:10:00:00 +0000", "/c") +
		line("01/Nov/2026:10:00:02 +0000", "/e")
	var out bytes.Buffer
	st, err := Convert(strings.NewReader(in), &out, Options{Host: "shop.example"}, func(n int, why string) { t.Errorf("line %d: %s", n, why) })
	if err != nil {
		t.Fatal(err)
	}
	got := decode(t, out.Bytes())
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	want := []struct {
		uri string
		at  time.Duration
	}{
		{"/early", -time.Hour + time.Second}, {"/a", 0}, {"/b", time.Second / 3}, {"/c", 2 * time.Second / 3},
		{"/d", 2 * time.Second}, {"/e", 2*time.Second + time.Second/2},
	}
	if !st.Sorted || len(got) != len(want) {
		t.Fatalf("stats %+v, %d pairs", st, len(got))
	}
	for i, w := range want {
		if got[i].uri != w.uri || !got[i].ts.Equal(base.Add(w.at)) || got[i].host != "shop.example" {
			t.Errorf("pair %d: %s at %v (%s), want %s at %v", i, got[i].uri, got[i].ts, got[i].host, w.uri, base.Add(w.at))
		}
	}

	f, err := ParseFormat(`$msec "$request" $status`)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	in = "1793527200.250 \"GET /x HTTP/1.1\" 200\n1793527200.100 \"GET /y HTTP/1.1\" 204\n"
	if _, err := Convert(strings.NewReader(in), &out, Options{Format: f}, func(n int, why string) { t.Errorf("line %d: %s", n, why) }); err != nil {
		t.Fatal(err)
	}
	got = decode(t, out.Bytes())
	if len(got) != 2 || got[0].uri != "/y" || got[0].ts.UnixMilli() != 1793527200100 || got[1].ts.UnixMilli() != 1793527200250 {
		t.Errorf("$msec: %+v", got)
	}
}

// TestLineKinds: what is skipped with a reason, what is counted as no
// request, and what is kept, in each format.
func TestLineKinds(t *testing.T) {
	ok := func(req string) string {
		return `1.2.3.4 - - [01/Nov/2026:10:00:00 +0000] "` + req + `" 200 3 "-" "-"`
	}
	for _, c := range []struct {
		name, format, line string
		want               string // "kept", "not HTTP", or a piece of the skip reason
	}{
		{"combined", "", ok("GET /a?b=c HTTP/1.1"), "kept"},
		{"common", "", `1.2.3.4 - - [01/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 3`, "kept"},
		{"combined with more fields", "", ok("GET /a HTTP/2.0") + ` "10.0.0.9" rt=0.003`, "kept"},
		{"Apache escapes", "", ok(`GET /a\"b\\c HTTP/1.1`), "kept"},
		{"HTTP/0.9", "", ok("GET /old"), "kept"},
		{"dash", "", ok("-"), "not HTTP"},
		{"empty request", "", ok(""), "not HTTP"},
		{"binary", "", ok(`\x16\x03\x01\x00\xA5`), "not HTTP"},
		{"CONNECT", "", ok("CONNECT a.test:443 HTTP/1.1"), "a tunnel"},
		{"bad target", "", ok("GET a/b HTTP/1.1"), "want a path"},
		{"space in target", "", ok("GET /a b HTTP/1.1"), "space"},
		{"not the format", "", `garbage`, "not a combined log line: column 1"},
		{"bad time", "", `1.2.3.4 - - [yesterday] "GET / HTTP/1.1" 200 3`, "time \"yesterday\""},
		{"json", "json", `{"time_iso8601":"2026-11-01T10:00:00+00:00","request_method":"PUT","request_uri":"/x?y","server_protocol":"HTTP/1.1","status":"201","host":"h"}`, "kept"},
		{"json nested", "json", `{"@timestamp":"2026-11-01T10:00:00.5Z","request":"GET / HTTP/1.1","status":200,"tags":["a",{"b":1}],"x":{"y":null}}`, "kept"},
		{"json dash", "json", `{"time_local":"01/Nov/2026:10:00:00 +0000","request":"-","status":"400"}`, "not HTTP"},
		{"json broken", "json", `{"time_local":"01/Nov/2026:10:00:00 +0000","request":"GET / HTTP/1.1`, "unterminated string"},
		{"json no time", "json", `{"request":"GET / HTTP/1.1","status":200}`, "no time"},
		{"json no request", "json", `{"time":"2026-11-01T10:00:00Z","status":200}`, "no request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opt Options
			if c.format != "" {
				opt.Format, _ = ParseFormat(c.format)
			}
			var out bytes.Buffer
			var why string
			st, err := Convert(strings.NewReader(c.line+"\n"), &out, opt, func(_ int, w string) { why = w })
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == "kept" && st.Written == 1:
				decode(t, out.Bytes())
			case c.want == "not HTTP" && st.NotHTTP == 1 && why == "":
			case c.want != "kept" && c.want != "not HTTP" && st.Written == 0 && strings.Contains(why, c.want):
			default:
				t.Errorf("stats %+v, skipped %q, want %s", st, why, c.want)
			}
		})
	}
}

// TestUnescape: nginx's \xHH (either case) and Apache's escapes.
func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/caf\xC3\xa9`: "/caf\xc3\xa9",
		`\x22q\x22`:    `"q"`,
		`a\"b\\c`:      `a"b\c`,
		`\x2`:          `\x2`,
		`\q\n`:         "\\q\n",
		`end\`:         `end\`,
	} {
		if got := string(unescape([]byte(in))); got != want {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
	}
}

// TestFormats: log_format strings are read, or refused saying why.
func TestFormats(t *testing.T) {
	for _, bad := range []string{"apache", `$remote_addr $status`, `$request$status`, `${request`} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	f, err := ParseFormat(`${request_method} ${request_uri} [$time_iso8601] $status "$scheme://$http_host"`)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st, err := Convert(strings.NewReader("DELETE /o/1?force=1 [2026-11-01T10:00:00+00:00] 204 \"https://api.test\"\nGET / [2026-11-01T10:00:00+00:00] 200 \"http://x\" extra\n"),
		&out, Options{Format: f}, func(n int, why string) {
			if n != 2 || !strings.Contains(why, "after the end of the format") {
				t.Errorf("line %d: %s", n, why)
			}
		})
	if err != nil || st.Written != 1 || !strings.Contains(out.String(), `"l7protocol":"https"`) || !strings.Contains(out.String(), `"uri":"/o/1?force=1","host":"api.test"`) {
		t.Errorf("stats %+v, %v:\n%s", st, err, out.String())
	}
	if err := f.SetJSONField("time=ts"); err == nil {
		t.Error("--json-field on a text format: accepted")
	}
	j, _ := ParseFormat("json")
	for _, bad := range []string{"when=ts", "time", "time="} {
		if err := j.SetJSONField(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if err := errorsJoin(j.SetJSONField("time=ts"), j.SetJSONField("request=req.line"), j.SetJSONField("status=res.code")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	st, err = Convert(strings.NewReader(`{"ts":"2026-11-01T10:00:00Z","req":{"line":"GET /n HTTP/1.1"},"res":{"code":302}}`+"\n"), &out, Options{Format: j}, func(n int, why string) { t.Errorf("line %d: %s", n, why) })
	if err != nil || st.Written != 1 || !strings.Contains(out.String(), `"statusCode":302`) {
		t.Errorf("named fields: %+v, %v: %s", st, err, out.String())
	}
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestGzipAndCut: a rotated, gzip-compressed log reads as it is; one cut
// short fails, whatever it read before.
func TestGzipAndCut(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "nginx-combined.log"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	var out bytes.Buffer
	st, err := Convert(bytes.NewReader(gz.Bytes()), &out, Options{}, func(int, string) {})
	if err != nil || st.Written != 8 {
		t.Errorf("gzip: %+v, %v", st, err)
	}
	if _, err := Convert(bytes.NewReader(gz.Bytes()[:gz.Len()-10]), &out, Options{}, func(int, string) {}); err == nil {
		t.Error("a cut gzip log converted without error")
	}
}

// TestLooks: inspect's hint tells access log lines from RRPair lines.
func TestLooks(t *testing.T) {
	for line, want := range map[string]string{
		`127.0.0.1 - - [23/Nov/2026:22:39:18 +0000] "GET /plain HTTP/1.1" 200 3 "-" "-"`:  "combined",
		`127.0.0.1 - - [23/Nov/2026:22:39:18 +0000] "GET /plain HTTP/1.1" 200 3`:          "common",
		`{"time_local":"x","request":"GET / HTTP/1.1","status":200}`:                      "json",
		`{"http":{"req":{"method":"GET","uri":"/"}},"status":200,"request":"x"}`:          "",
		`{"ts":"2026-11-01T10:00:00Z"}`:                                                   "",
		`1 8a2b0001 1793527200000000000 0`:                                                "",
		`127.0.0.1 [23/Nov/2026:22:39:18 +0000] "GET /plain HTTP/1.1" 200 0.000 "a.test"`: "custom",
	} {
		if got, _ := Looks([]byte(line)); got != want {
			t.Errorf("%s: got %q, want %q", line, got, want)
		}
	}
}

// FuzzLine feeds the converter anything, in each format: no panic, and
// what it writes opens as a traffic file.
func FuzzLine(f *testing.F) {
	for _, name := range []string{"nginx-combined.log", "nginx-json.log", "nginx-custom.log"} {
		data, _ := os.ReadFile(filepath.Join("testdata", name))
		for _, line := range bytes.Split(data, []byte("\n")) {
			f.Add(line)
		}
	}
	formats := []string{"combined", "json", customFormat, `%h %t "%r" %>s %{Host}i %D`}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, name := range formats {
			fm, _ := ParseFormat(name)
			var out bytes.Buffer
			st, err := Convert(bytes.NewReader(line), &out, Options{Format: fm}, func(int, string) {})
			if err != nil || st.Written == 0 {
				continue
			}
			file, err := rrpair.OpenReader(&out, "fuzz.jsonl", rrpair.Options{})
			if err != nil {
				t.Fatalf("%s: the output is not a valid traffic file: %v\n%q\n%s", name, err, line, out.Bytes())
			}
			file.Close()
		}
	})
}

// TestJSONLine: the small JSON reader keeps bytes, reaches into nested
// objects, skips arrays, and refuses what is not one object.
func TestJSONLine(t *testing.T) {
	obj := map[string][]byte{}
	err := parseJSONLine([]byte(`{"a":"x\u0016\"y\u00e9\ud83d\ude00`+"\xff"+`","n":{"m":1.5,"e":{},"l":[1,[2,{"z":3}],[]]},"nil":null,"t":true}`), obj)
	if err != nil || string(obj["a"]) != "x\x16\"yé😀\xff" || string(obj["n.m"]) != "1.5" || string(obj["t"]) != "true" || len(obj) != 3 {
		t.Errorf("%v: %q", err, obj)
	}
	for _, bad := range []string{`[]`, `{"a":1,}`, `{"a" 1}`, `{"a":1} x`, `{"a":"\q"}`, `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, `{"a":"\u12"}`} {
		if err := parseJSONLine([]byte(bad), map[string][]byte{}); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// TestApacheFormat: an Apache LogFormat string reads as the nginx
// log_format it means; %D is the duration in microseconds.
func TestApacheFormat(t *testing.T) {
	f, err := ParseFormat(`%h %l %u %t \"%r\" %>s %b "%{Referer}i" "%{User-Agent}i" %{Host}i %D`) // as in httpd.conf, or not
	if err != nil {
		t.Fatal(err)
	}
	line := `10.0.0.7 - frank [10/Oct/2026:13:55:36 -0700] "GET /a\"b?c=%20 HTTP/1.1" 304 - "-" "Mozilla/5.0 (X11)" shop.test:8443 2500` + "\n"
	var out bytes.Buffer
	st, err := Convert(strings.NewReader(line), &out, Options{Format: f}, func(n int, why string) { t.Errorf("line %d: %s", n, why) })
	want := `{"ts":"2026-10-10T20:55:36Z","duration":2.5,"http":{"req":{"method":"GET","uri":"/a\"b?c=%20","host":"shop.test:8443","version":"1.1"},"res":{"statusCode":304}}}` + "\n"
	if err != nil || st.Written != 1 || out.String() != want {
		t.Errorf("%v, %+v:\n got %s\nwant %s", err, st, out.String(), want)
	}
	for _, bad := range []string{`%h %{%d/%b}t "%r"`, `%h %U%q`, `%h "%r" %Z`, `%h "%r" %{Host`, `%h "%r" %`, `%h %s`} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
