package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/gor"
)

// gorRecord is one GoReplay record: header line, message, separator.
func gorRecord(head, msg string) string { return head + "\n" + msg + "\n" + gor.Separator + "\n" }

// TestImportGorGlob: a quoted glob is expanded by replay, the chunks and
// another instance's capture merge by timestamp in request order.
func TestImportGorGlob(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t.jsonl")
	r := runMain(t, context.Background(), "", "import", "gor", "../../pkg/gor/testdata/chunks/*.gor*", "-o", out, "--strict")
	if r.code != 0 || !strings.Contains(r.stderr, "3 files merged: 12 records, 6 pairs written") ||
		!strings.Contains(r.stderr, "1 without a Host header (replay them with --target)") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile("../../pkg/gor/testdata/chunks/../chunks.golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Named one by one, in another order: the same file.
	r = runMain(t, context.Background(), "", "import", "gor", "../../pkg/gor/testdata/chunks/other_0.gor",
		"-f", "../../pkg/gor/testdata/chunks/requests_1.gor.gz", "../../pkg/gor/testdata/chunks/requests_0.gor")
	if r.code != 0 || r.stdout != string(want) {
		t.Errorf("files one by one: exit %d, stderr:\n%s\nstdout:\n%s", r.code, r.stderr, r.stdout)
	}
	for _, bad := range [][]string{
		{"../../pkg/gor/testdata/chunks/*.nothing"},
		{"../../pkg/gor/testdata/chunks/requests_0.gor", "../../pkg/gor/testdata/chunks/requests_*.gor"},
		{"-", "../../pkg/gor/testdata/chunks/requests_0.gor"},
	} {
		r := runMain(t, context.Background(), "", append([]string{"import", "gor", "-o", out}, bad...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "no file matches") && !strings.Contains(r.stderr, "given twice") && !strings.Contains(r.stderr, "read alone") {
			t.Errorf("%q: exit %d, stderr:\n%s", bad, r.code, r.stderr)
		}
	}
}

// TestImportWholeOrNothing: an import that fails, early or late, that
// writes no pair, or that --strict refuses, leaves no -o file, and an -o
// file that was there stays as it was.
func TestImportWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	var capture strings.Builder
	for i := range 200 {
		capture.WriteString(gorRecord(fmt.Sprintf("1 r%d %d 0", i, 1000+i), fmt.Sprintf("GET /%d HTTP/1.1\r\nHost: h\r\n\r\n", i)))
		capture.WriteString(gorRecord(fmt.Sprintf("2 r%d %d 100", i, 1100+i), ok))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(capture.String()))
	zw.Close()
	cut := filepath.Join(dir, "cut.gor.gz") // fails at its end, after 199 good pairs
	os.WriteFile(cut, gz.Bytes()[:gz.Len()-12], 0o644)
	orphans := filepath.Join(dir, "orphans.gor") // nothing to write
	os.WriteFile(orphans, []byte(gorRecord("2 x 1 0", ok)+gorRecord("2 y 2 0", ok)), 0o644)
	mixed := filepath.Join(dir, "mixed.gor") // one good pair, one skip
	os.WriteFile(mixed, []byte(gorRecord("1 a 1 0", "GET / HTTP/1.1\r\nHost: h\r\n\r\n")+gorRecord("2 x 1 0", ok)), 0o644)

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"fails late", []string{cut}, "cut.gor.gz: unexpected EOF"},
		{"nothing written", []string{orphans}, "no pair written: 2 records skipped, and nothing else to write (see above)"},
		{"empty input", []string{os.DevNull}, "no pair written: the input holds none"},
		{"--strict", []string{mixed, "--strict"}, "--strict: 1 record could not be converted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, before := range []string{"", "the previous file\n"} {
				out := filepath.Join(t.TempDir(), "t.jsonl")
				if before != "" {
					os.WriteFile(out, []byte(before), 0o644)
				}
				r := runMain(t, context.Background(), "", append([]string{"import", "gor", "-o", out}, c.args...)...)
				if r.code != 1 || !strings.Contains(r.stderr, c.want) {
					t.Errorf("exit %d, stderr:\n%s\nwant %q", r.code, r.stderr, c.want)
				}
				got, err := os.ReadFile(out)
				if before == "" && !os.IsNotExist(err) || before != "" && string(got) != before {
					t.Errorf("-o after the failure: %q, %v (before: %q)", got, err, before)
				}
				if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*tmp")); len(left) > 0 {
					t.Errorf("temporary files left: %q", left)
				}
			}
		})
	}
}

// TestImportSkippedFile: --skipped gets every skip, beyond the five on
// the terminal, as JSON lines, written whole; it may name neither the
// input nor -o.
func TestImportSkippedFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "c.gor")
	var capture strings.Builder
	capture.WriteString(gorRecord("1 a 1 0", "GET /ok HTTP/1.1\r\nHost: h\r\n\r\n"))
	for i := range 7 {
		capture.WriteString(gorRecord(fmt.Sprintf("2 orphan%d 2 0", i), "HTTP/1.1 200 OK\r\n\r\n"))
	}
	os.WriteFile(in, []byte(capture.String()), 0o644)
	out, sk := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "skipped.jsonl")
	r := runMain(t, context.Background(), "", "import", "gor", in, "-o", out, "--skipped", sk)
	if r.code != 0 || !strings.Contains(r.stderr, "skipped 7 records") || !strings.Contains(r.stderr, "... and 2 more") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(sk)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("--skipped has %d lines, want 7:\n%s", len(lines), data)
	}
	for i, line := range lines {
		var s struct {
			Index  int
			Reason string
		}
		if err := json.Unmarshal([]byte(line), &s); err != nil || s.Index != i+2 || s.Reason != fmt.Sprintf("a response to no captured request (id orphan%d)", i) {
			t.Errorf("line %d: %s (%v)", i+1, line, err)
		}
	}
	// Several files: each skip names its file.
	r = runMain(t, context.Background(), "", "import", "gor", in, "../../pkg/gor/testdata/chunks/other_0.gor", "-o", out, "--skipped", sk)
	data, _ = os.ReadFile(sk)
	if r.code != 0 || !strings.HasPrefix(string(data), `{"file":"`+in+`","index":2,"reason":"a response to no captured request (id orphan0)"}`) ||
		!strings.Contains(r.stderr, in+" record 2: a response") {
		t.Errorf("several files: exit %d, stderr:\n%s\n--skipped:\n%s", r.code, r.stderr, data)
	}
	for _, bad := range []string{in, out} {
		r := runMain(t, context.Background(), "", "import", "gor", in, "-o", out, "--skipped", bad)
		if r.code != 1 || !strings.Contains(r.stderr, "the same file as") {
			t.Errorf("--skipped %s: exit %d, stderr:\n%s", bad, r.code, r.stderr)
		}
	}
	if r := runMain(t, context.Background(), "", "import", "gor", in, "--skipped", "-"); r.code != 1 || !strings.Contains(r.stderr, "standard output carries the pairs") {
		t.Errorf("--skipped - without -o: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestInspectImportHint: inspect on a file that an import converts says
// which import, instead of a JSON error on line 1; a traffic file with a
// bad line still gets its error.
func TestInspectImportHint(t *testing.T) {
	for file, want := range map[string]string{
		"../../pkg/har/testdata/browser.har":              "is a HAR file, not a traffic file (RRPair JSON Lines): convert it first: replay import har ../../pkg/har/testdata/browser.har -o traffic.jsonl",
		"../../pkg/gor/testdata/capture.gor":              "is a GoReplay capture, not a traffic file",
		"../../pkg/gor/testdata/capture.gor.gz":           "replay import gor ",
		"../../pkg/accesslog/testdata/nginx-combined.log": "is an access log (combined), not a traffic file",
		"../../pkg/accesslog/testdata/nginx-json.log":     "replay import access-log --format json ",
		"../../pkg/accesslog/testdata/nginx-custom.log":   "replay import access-log --format 'its log_format string' ",
		"../../pkg/pcap/testdata/http1.pcap":              "is a packet capture (pcap), not a traffic file (RRPair JSON Lines): convert it first: replay import pcap ../../pkg/pcap/testdata/http1.pcap -o traffic.jsonl",
		"../../pkg/pcap/testdata/h2c.pcapng":              "is a packet capture (pcapng), not a traffic file",
		"../../pkg/pcap/testdata/lossy.pcap.gz":           "replay import pcap ",
	} {
		r := runMain(t, context.Background(), "", "inspect", file)
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant %q", file, r.code, r.stderr, want)
		}
		r = runMain(t, context.Background(), "", "run", "-f", file, "--target", "http://127.0.0.1:1")
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("run -f %s: exit %d, stderr:\n%s\nwant %q", file, r.code, r.stderr, want)
		}
	}
	har, err := os.ReadFile("../../pkg/har/testdata/browser.har")
	if err != nil {
		t.Fatal(err)
	}
	if r := runMain(t, context.Background(), string(har), "inspect", "-"); r.code != 1 || !strings.Contains(r.stderr, "- is a HAR file") {
		t.Errorf("a HAR on standard input: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	bad := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(bad, []byte(`{"http":{"req":{"method":"GET","uri":"/","host":"h"}}}`+"\n{\n"), 0o644)
	if r := runMain(t, context.Background(), "", "inspect", bad); r.code != 1 || !strings.Contains(r.stderr, "t.jsonl:2") || strings.Contains(r.stderr, "import") {
		t.Errorf("a bad traffic file: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
