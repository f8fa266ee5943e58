package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/loopback"
)

// TestImportPcap: replay import pcap on captures (merged when several),
// then replay run: the summary on stderr, the pairs in request order, the
// requests on the wire as the capture's clients sent them.
func TestImportPcap(t *testing.T) {
	dir := t.TempDir()
	traffic := filepath.Join(dir, "traffic.jsonl")
	r := runMain(t, context.Background(), "", "import", "pcap", "../../pkg/pcap/testdata/http1.pcap", "-o", traffic)
	want := "replay: 104 packets, 7 connections, 12 pairs written (HTTP/1.1 IN 11, HTTP/1.0 IN 1); 3 segments retransmitted\n"
	if r.code != 0 || r.stderr != want {
		t.Fatalf("import: exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
	golden, err := os.ReadFile("../../pkg/pcap/testdata/http1.golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(traffic); string(got) != string(golden) {
		t.Errorf("the pairs differ from the package's golden file")
	}
	srv := loopback.NewRaw(t, nil)
	r = runMain(t, context.Background(), "", "run", "-f", traffic, "--target", srv.URL(), "--progress", "off", "-q")
	srv.Close()
	if r.code != 0 || srv.Count() != 12 {
		t.Fatalf("run: exit %d, %d requests arrived, stderr:\n%s", r.code, srv.Count(), r.stderr)
	}
	first := string(srv.Requests()[0])
	if want := "POST /upload HTTP/1.1\r\nHost: " + srv.Addr() + "\r\nContent-Type: text/plain\r\nContent-Length: 300\r\n\r\n0123456789"; !strings.HasPrefix(first, want) {
		t.Errorf("first request on the wire:\n%q\nwant it to start\n%q", first, want)
	}

	capture, err := os.ReadFile("../../pkg/pcap/testdata/h2c.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	r = runMain(t, context.Background(), string(capture), "import", "pcap", "-") // tcpdump -w - | replay import pcap -
	if r.code != 0 || !strings.HasPrefix(r.stdout, `{"ts":"2026-11-25T10:00:01.008Z"`) || strings.Count(r.stdout, "\n") != 9 {
		t.Errorf("from standard input: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runMain(t, context.Background(), "", "import", "pcap", "../../pkg/pcap/testdata/h2c.pcapng", "../../pkg/pcap/testdata/http1.pcap", "-o", filepath.Join(dir, "both.jsonl"))
	if r.code != 0 || !strings.HasPrefix(r.stderr, "replay: 2 files merged: 164 packets, 10 connections, 21 pairs written") {
		t.Errorf("two captures: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestImportPcapSkips: a capture that lost traffic: the summary counts
// every kind of skip, the first five are listed with their packet,
// --skipped gets them all, --strict fails on those that lost traffic and
// not on connections that were never HTTP, and -o is then not written.
func TestImportPcapSkips(t *testing.T) {
	dir := t.TempDir()
	out, skipped := filepath.Join(dir, "traffic.jsonl"), filepath.Join(dir, "skipped.jsonl")
	r := runMain(t, context.Background(), "", "import", "pcap", "../../pkg/pcap/testdata/lossy.pcap.gz", "-o", out, "--skipped", skipped, "--websocket=false")
	for _, want := range []string{
		"replay: 246 packets, 19 connections, 20 pairs written (HTTP/1.1 IN 16, HTTP/2 IN 4), 8 without an answer (3 lost in the capture); skipped 16: tls 1 (TLS connections not decrypted, port 443), gap 3",
		"replay: skipped 16 items:\n  packet 4: gap: POST /cut to 10.0.0.2:8080: its body is missing 60 bytes the capture lost, before packet 6\n",
		"  ... and 11 more\n",
	} {
		if r.code != 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr:\n%s\nwant it to hold %q", r.code, r.stderr, want)
		}
	}
	lines, _ := os.ReadFile(skipped)
	if n := strings.Count(string(lines), "\n"); n != 16 || !strings.HasPrefix(string(lines), `{"index":4,"reason":"gap: POST /cut`) {
		t.Errorf("--skipped: %d lines:\n%s", n, lines)
	}
	os.Remove(out)
	r = runMain(t, context.Background(), "", "import", "pcap", "../../pkg/pcap/testdata/lossy.pcap.gz", "-o", out, "--strict", "--websocket=false")
	if r.code != 1 || !strings.Contains(r.stderr, "--strict: 12 items could not be converted") {
		t.Errorf("--strict: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("--strict refused the import, and -o was written")
	}
}

// TestImportPcapRefuses: bad flags are refused before anything is read,
// each naming its flag (--keylog: the key log's file and line); a file that is not a
// capture names its first bytes, and the import its format takes.
func TestImportPcapRefuses(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "keys.log")
	os.WriteFile(bad, []byte("# SSL/TLS secrets log file\nCLIENT_RANDOM 00112233 44556677\n"), 0o600)
	r := runMain(t, context.Background(), "", "import", "pcap", "../../pkg/pcap/testdata/http1.pcap", "--keylog", bad, "--service", "svc:80", "--session", "query:q", "--max-buffer", "1000")
	for _, want := range []string{
		"--keylog: " + bad + ":2: CLIENT_RANDOM: want a client random of 64 hex digits, got 8",
		`--service: want IP:PORT (10.0.0.5:8080, [2001:db8::5]:443), got "svc:80"`,
		`--session: want connection, header:NAME, cookie:NAME or none, got "query:q"`,
		"--max-buffer: want at least 1048576 bytes (1 MiB), got 1000",
	} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr:\n%s\nwant it to hold %q", r.code, r.stderr, want)
		}
	}
	r = runMain(t, context.Background(), "", "import", "pcap", "../../pkg/gor/testdata/capture.gor")
	if r.code != 1 || !strings.Contains(r.stderr, `capture.gor: not a packet capture: it starts with 31 20 38 61 ("1 8a")`) ||
		!strings.Contains(r.stderr, "capture.gor is a GoReplay capture: use replay import gor") {
		t.Errorf("a GoReplay capture: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	empty := filepath.Join(t.TempDir(), "empty.pcap")
	head, _ := os.ReadFile("../../pkg/pcap/testdata/http1.pcap")
	os.WriteFile(empty, head[:24], 0o644) // a header and no packet
	r = runMain(t, context.Background(), "", "import", "pcap", empty, "-o", empty+".jsonl")
	if r.code != 1 || !strings.Contains(r.stderr, "no pair written: the capture holds no packet") {
		t.Errorf("a capture of nothing: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = runMain(t, context.Background(), "", "import", "gor", "../../pkg/pcap/testdata/http1.pcap")
	if r.code != 1 || !strings.Contains(r.stderr, "http1.pcap is a packet capture (pcap): use replay import pcap") {
		t.Errorf("import gor given a capture: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
