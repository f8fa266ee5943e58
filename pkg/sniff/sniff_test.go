package sniff

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// gz is b gzip-compressed.
func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHint: each format an import reads is named with its import, word
// for word as inspect and run print it, from a real file of it written to
// a temporary directory (compressed, with a byte-order mark); a traffic
// file, or anything else, gets no hint.
func TestHint(t *testing.T) {
	combined := read(t, "../accesslog/testdata/nginx-combined.log")
	traffic := []byte(`{"http":{"req":{"method":"GET","uri":"/","host":"h"}}}` + "\n")
	for _, c := range []struct {
		name string
		data []byte
		want string // after the file's path; "" for no hint
	}{
		{"browser.har", read(t, "../har/testdata/browser.har"), " is a HAR file, not a traffic file (RRPair JSON Lines): convert it first: replay import har %s -o traffic.jsonl"},
		{"bom.har", read(t, "../har/testdata/bom.har"), " is a HAR file, not a traffic file"},
		{"capture.gor", read(t, "../gor/testdata/capture.gor"), " is a GoReplay capture, not a traffic file (RRPair JSON Lines): convert it first: replay import gor %s -o traffic.jsonl"},
		{"capture.gor.gz", read(t, "../gor/testdata/capture.gor.gz"), " is a GoReplay capture, not a traffic file"},
		{"access.log", combined, " is an access log (combined), not a traffic file (RRPair JSON Lines): convert it first: replay import access-log %s -o traffic.jsonl"},
		{"bom.log", append([]byte("\xef\xbb\xbf"), combined...), " is an access log (combined), not a traffic file"},
		{"access.log.gz", gz(t, combined), " is an access log (combined), not a traffic file"},
		{"access.json", read(t, "../accesslog/testdata/nginx-json.log"), " is an access log (json), not a traffic file (RRPair JSON Lines): convert it first: replay import access-log --format json %s -o traffic.jsonl"},
		{"custom.log", read(t, "../accesslog/testdata/nginx-custom.log"), " is an access log (a custom log_format), not a traffic file (RRPair JSON Lines): convert it first: replay import access-log --format 'its log_format string' %s -o traffic.jsonl"},
		{"capture.pcap", read(t, "../pcap/testdata/http1.pcap"), " is a packet capture (pcap), not a traffic file (RRPair JSON Lines): convert it first: replay import pcap %s -o traffic.jsonl"},
		{"capture.pcapng", read(t, "../pcap/testdata/h2c.pcapng"), " is a packet capture (pcapng), not a traffic file"},
		{"capture.pcap.gz", read(t, "../pcap/testdata/lossy.pcap.gz"), " is a packet capture (pcap), not a traffic file"},
		{"traffic.jsonl.gz", gz(t, traffic), " is gzip-compressed: replay reads traffic files uncompressed (gunzip it first); import gor, import access-log and import pcap read .gz files as they are"},
		{"browser.har.gz", gz(t, read(t, "../har/testdata/browser.har")), " is gzip-compressed: replay reads traffic files uncompressed"},
		{"traffic.jsonl", traffic, ""},
		{"empty", nil, ""},
		{"text", []byte("hello\n"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.name)
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			got := Hint(path, Head(path))
			want := strings.ReplaceAll(c.want, "%s", path)
			switch {
			case c.want == "" && got != "":
				t.Errorf("got %q, want no hint", got)
			case c.want != "" && !strings.HasPrefix(got, path+want):
				t.Errorf("got  %q\nwant %q", got, path+want)
			}
		})
	}
}

// TestSniff: the format, the import and its flags.
func TestSniff(t *testing.T) {
	for _, c := range []struct {
		head string
		want Format
	}{
		{`{"log":{"entries":[]}}`, Format{Import: "har", What: "a HAR file"}},
		{"1 8a2b0001 1793527200000000000 0\nGET / HTTP/1.1\r\n", Format{Import: "gor", What: "a GoReplay capture"}},
		{`{"time_local":"x","request":"GET / HTTP/1.1","status":200}`, Format{Import: "access-log", Flags: "--format json", What: "an access log (json)"}},
		{`127.0.0.1 - - [23/Nov/2026:22:39:18 +0000] "GET / HTTP/1.1" 200 3`, Format{Import: "access-log", What: "an access log (common)"}},
		{"\xd4\xc3\xb2\xa1\x02\x00\x04\x00", Format{Import: "pcap", What: "a packet capture (pcap)"}},
		{"\xa1\xb2\x3c\x4d\x00\x02\x00\x04", Format{Import: "pcap", What: "a packet capture (pcap)"}},
		{"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x4d\x3c\x2b\x1a", Format{Import: "pcap", What: "a packet capture (pcapng)"}},
		{`{"http":{"req":{"method":"GET","uri":"/"}}}`, Format{}},
		{"\x1f\x8b not really gzip", Format{}},
	} {
		got := Sniff([]byte(c.head))
		if got != c.want {
			t.Errorf("Sniff(%q) = %+v, want %+v", c.head, got, c.want)
		}
	}
	if got := (Format{Import: "access-log", Flags: "--format json"}).Command(); got != "import access-log --format json" {
		t.Errorf("Command() = %q", got)
	}
	if got := (Format{Import: "har"}).Command(); got != "import har" {
		t.Errorf("Command() = %q", got)
	}
}

// TestHeadOfNoFile: nothing to read is nil.
func TestHeadOfNoFile(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "missing"), dir} {
		if got := Head(path); got != nil {
			t.Errorf("Head(%s) = %q, want nil", path, got)
		}
	}
}

// TestKeep: the first bytes of what was read, whether the reader seeks
// (read again from where it stood) or not (kept as they passed, at most
// Size of them), after the reading consumed it all.
func TestKeep(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), Size/8) // twice Size
	for _, c := range []struct {
		name string
		r    io.Reader
		skip int // read before Keep
	}{
		{"seeker", bytes.NewReader(data), 0},
		{"seeker, read from 5", bytes.NewReader(data), 5},
		{"pipe", iotest.HalfReader(io.MultiReader(bytes.NewReader(data))), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			io.CopyN(io.Discard, c.r, int64(c.skip))
			through, head := Keep(c.r)
			all, err := io.ReadAll(through)
			if err != nil || !bytes.Equal(all, data[c.skip:]) {
				t.Fatalf("read %d bytes through (%v), want %d", len(all), err, len(data)-c.skip)
			}
			if got, want := head(), data[c.skip:c.skip+Size]; !bytes.Equal(got, want) {
				t.Errorf("head: %d bytes starting %q, want %d starting %q", len(got), got[:min(len(got), 8)], len(want), want[:8])
			}
		})
	}
	_, head := Keep(strings.NewReader("short"))
	if got := head(); string(got) != "short" {
		t.Errorf("head of a short reader unread = %q, want %q", got, "short")
	}
}
