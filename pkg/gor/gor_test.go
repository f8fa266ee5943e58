package gor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/replay-dev/replay/internal/testutil/golden"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func TestConvertGolden(t *testing.T) {
	for _, name := range []string{"capture.gor", "capture.gor.gz"} {
		t.Run(name, func(t *testing.T) {
			in, err := os.Open(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			var out bytes.Buffer
			var skipped []string
			st, err := Convert(in, &out, func(n int, why string) { skipped = append(skipped, why) })
			if err != nil {
				t.Fatal(err)
			}
			if st.Records != 8 || st.Written != 3 || st.Replayed != 1 || len(skipped) != 2 ||
				!strings.Contains(skipped[0], "no captured request") || !strings.Contains(skipped[1], "timestamp") {
				t.Errorf("stats %+v, skipped %q", st, skipped)
			}
			golden.Check(t, "capture.golden.jsonl", out.Bytes())
			f, err := rrpair.OpenReader(&out, "capture.jsonl", rrpair.Options{RequireHost: true})
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		})
	}
}

// FuzzGor feeds the converter anything: no panic, and what it writes is a
// valid traffic file.
func FuzzGor(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "capture.gor"))
	f.Add(seed)
	f.Add([]byte("1 a 1 0\nGET / HTTP/1.1\r\nHost: h\r\n\r\n\n" + Separator + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		st, err := Convert(bytes.NewReader(in), &out, func(int, string) {})
		if err != nil || st.Written == 0 {
			return
		}
		file, err := rrpair.OpenReader(&out, "fuzz.jsonl", rrpair.Options{})
		if err != nil {
			t.Fatalf("the output is not a valid traffic file: %v\n%q\n%s", err, in, out.Bytes())
		}
		file.Close()
	})
}

// TestReusedID: an id used again after its response was written starts a
// new exchange; without a response, that request is written once; pairs
// come out in request order, answered or not.
func TestReusedID(t *testing.T) {
	rec := func(head, msg string) string { return head + "\n" + msg + "\n" + Separator + "\n" }
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: h\r\n\r\n" }
	in := rec("1 b 1000", get("/first-b")) +
		rec("1 a 2000", get("/a1")) +
		rec("2 a 3000 500", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") +
		rec("1 a 4000", get("/a2"))
	var out bytes.Buffer
	st, err := Convert(strings.NewReader(in), &out, func(n int, why string) { t.Errorf("record %d skipped: %s", n, why) })
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if st.Written != 3 || len(lines) != 3 || !strings.Contains(lines[0], `"/first-b"`) ||
		!strings.Contains(lines[1], `"/a1"`) || !strings.Contains(lines[2], `"/a2"`) {
		t.Errorf("stats %+v, wrote:\n%s", st, out.String())
	}
}

// TestRecordsAnyReads: records come out the same however the reads cut
// the input (a separator split across reads, a record over many reads).
func TestRecordsAnyReads(t *testing.T) {
	var in strings.Builder
	var want []string
	for i, size := range []int{0, 1, 70 << 10, 5, 200 << 10, 3} {
		rec := fmt.Sprintf("1 id%d 1000\n", i) + strings.Repeat("x", size)
		want = append(want, rec)
		in.WriteString(rec + "\n" + Separator + "\n")
	}
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in.String()) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in.String())) },
		"halves":   func() io.Reader { return iotest.HalfReader(strings.NewReader(in.String())) },
	} {
		got, err := readAll(r())
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %d records, want %d", name, err, len(got), len(want))
		}
	}
}

// BenchmarkBigRecord: a record of many reads is not scanned again at each.
func BenchmarkBigRecord(b *testing.B) {
	in := []byte("1 a 1000\n" + strings.Repeat("x", 16<<20) + "\n" + Separator + "\n")
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		readAll(bytes.NewReader(in))
	}
}

// readAll reads every record of a capture.
func readAll(in io.Reader) ([]string, error) {
	rr, err := newRecordReader(in)
	if err != nil {
		return nil, err
	}
	var got []string
	for {
		rec, err := rr.next()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, string(rec))
	}
}

// TestNoHostKept: a request without a Host header is written (it replays
// with --target, as an RRPair without host does) and counted.
func TestNoHostKept(t *testing.T) {
	in := "1 a 1000 0\nGET /health HTTP/1.1\r\nUser-Agent: probe\r\n\r\n\n" + Separator + "\n"
	var out bytes.Buffer
	st, err := Convert(strings.NewReader(in), &out, func(n int, why string) { t.Errorf("record %d skipped: %s", n, why) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Written != 1 || st.NoHost != 1 || strings.Contains(out.String(), `"host"`) {
		t.Fatalf("stats %+v, wrote %s", st, out.String())
	}
	f, err := rrpair.OpenReader(bytes.NewReader(out.Bytes()), "t.jsonl", rrpair.Options{})
	if err != nil {
		t.Fatalf("the pair does not open: %v", err)
	}
	f.Close()
	if _, err := rrpair.OpenReader(bytes.NewReader(out.Bytes()), "t.jsonl", rrpair.Options{RequireHost: true}); err == nil {
		t.Error("a pair without host opened without --target")
	}
}

// TestRequestOrder: pairs come out by their request's timestamp, however
// the answers (or the requests themselves) lie in the capture.
func TestRequestOrder(t *testing.T) {
	rec := func(head, msg string) string { return head + "\n" + msg + "\n" + Separator + "\n" }
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: h\r\n\r\n" }
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	in := rec("1 slow 1000", get("/slow")) +
		rec("1 fast 2000", get("/fast")) +
		rec("2 fast 2500 500", ok) +
		rec("1 late 4000", get("/late")) + // written before an earlier request
		rec("1 early 3000", get("/early")) +
		rec("2 early 3100 100", ok) +
		rec("2 slow 9000 8000", ok) +
		rec("2 late 9500 5500", ok) +
		rec("1 tie-a 10000", get("/tie-a")) + // the same time: capture order
		rec("1 tie-b 10000", get("/tie-b")) +
		rec("2 tie-b 10100 100", ok) +
		rec("2 tie-a 10200 200", ok)
	var out bytes.Buffer
	st, err := Convert(strings.NewReader(in), &out, func(n int, why string) { t.Errorf("record %d skipped: %s", n, why) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/slow", "/fast", "/early", "/late", "/tie-a", "/tie-b"}
	if got := uris(t, out.Bytes()); st.Written != 6 || !slices.Equal(got, want) {
		t.Errorf("stats %+v, order %q, want %q", st, got, want)
	}
}

// TestMergeChunks: a capture in chunks (one gzip-compressed), with an
// answer in the chunk after its request, and another instance's capture
// over the same time, merge into one file in request order, whatever the
// order the files are given in.
func TestMergeChunks(t *testing.T) {
	names := []string{"requests_0.gor", "requests_1.gor.gz", "other_0.gor"}
	want := []string{"/orders", "/orders?page=1", "/b/first", "/health", "/b/second", "/orders/1"}
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}} {
		var srcs []Source
		for _, i := range order {
			f, err := os.Open(filepath.Join("testdata", "chunks", names[i]))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			srcs = append(srcs, Source{Name: names[i], R: f})
		}
		var out bytes.Buffer
		st, err := Merge(srcs, &out, func(src string, n int, why string) { t.Errorf("%s record %d skipped: %s", src, n, why) })
		if err != nil {
			t.Fatal(err)
		}
		got := uris(t, out.Bytes())
		if st.Records != 12 || st.Written != 6 || st.NoHost != 1 || !slices.Equal(got, want) {
			t.Errorf("files %v: stats %+v, order %q, want %q", order, st, got, want)
		}
		// Every request found its answer across the chunks.
		if n := strings.Count(out.String(), `"statusCode"`); n != 6 {
			t.Errorf("files %v: %d pairs with an answer, want 6:\n%s", order, n, out.String())
		}
		if order[0] == 0 {
			golden.Check(t, "chunks.golden.jsonl", out.Bytes())
		}
	}
}

// TestMergeNamesSource: a skipped record is named by its file and its
// number there; a file that ends mid-way fails the merge with its name.
func TestMergeNamesSource(t *testing.T) {
	good := "1 a 1000 0\nGET / HTTP/1.1\r\nHost: h\r\n\r\n\n" + Separator + "\n"
	bad := "2 zz 500 0\nHTTP/1.1 200 OK\r\n\r\n\n" + Separator + "\n"
	var skipped []string
	_, err := Merge([]Source{{"a.gor", strings.NewReader(good)}, {"b.gor", strings.NewReader(good[:0] + bad)}}, io.Discard,
		func(src string, n int, why string) { skipped = append(skipped, fmt.Sprintf("%s %d %s", src, n, why)) })
	if err != nil || len(skipped) != 1 || !strings.HasPrefix(skipped[0], "b.gor 1 a response to no captured request") {
		t.Errorf("err %v, skipped %q", err, skipped)
	}
	gz, err := os.ReadFile(filepath.Join("testdata", "capture.gor.gz"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Merge([]Source{{"a.gor", strings.NewReader(good)}, {"cut.gor.gz", bytes.NewReader(gz[:len(gz)-20])}}, io.Discard,
		func(string, int, string) {})
	if err == nil || !strings.HasPrefix(err.Error(), "cut.gor.gz: ") {
		t.Errorf("a cut gzip file: err %v", err)
	}
}

// uris opens a converted file as a run would and lists its request URIs.
func uris(t *testing.T, jsonl []byte) []string {
	t.Helper()
	f, err := rrpair.OpenReader(bytes.NewReader(jsonl), "out.jsonl", rrpair.Options{})
	if err != nil {
		t.Fatalf("the output does not open: %v\n%s", err, jsonl)
	}
	defer f.Close()
	var got []string
	c := f.NewCursor()
	var p rrpair.Pair
	for i := range f.Len() {
		if err := c.Decode(i, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(p.Req.URI))
	}
	return got
}

// TestLooks: a capture, plain or gzip-compressed, is told from other files.
func TestLooks(t *testing.T) {
	for name, want := range map[string]bool{"capture.gor": true, "capture.gor.gz": true, "capture.golden.jsonl": false} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := Looks(data[:min(len(data), 300)]); got != want {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	if Looks([]byte("1 a b\n")) || Looks([]byte("4 a 1\n")) || Looks([]byte("127.0.0.1 - - [x]")) {
		t.Error("a line that is no record header looks like one")
	}
}

// TestBareLineEnds: older GoReplay versions write a three-field header
// (no latency) and keep the request's bare LF line ends as captured; such
// a capture converts, one pair a request.
func TestBareLineEnds(t *testing.T) {
	in := "1 b33c9c1a2bae6636d5389a1a47035170c58d367e 1568139746437296000\nGET / HTTP/1.1\nHost: localhost:3000\nConnection: keep-alive\nAccept: */*\n\n\n" + Separator + "\n" +
		"1 56c731dc4647ecc5f44b00c8f9553fff209da918 1568139754038038000\nGET /products?utf8=%E2%9C%93&keywords=t+shirt HTTP/1.1\nHost: localhost:3000\n\n\n" + Separator + "\n"
	var out bytes.Buffer
	st, err := Convert(strings.NewReader(in), &out, func(n int, why string) { t.Errorf("record %d skipped: %s", n, why) })
	if err != nil {
		t.Fatal(err)
	}
	if got := uris(t, out.Bytes()); st.Written != 2 || !slices.Equal(got, []string{"/", "/products?utf8=%E2%9C%93&keywords=t+shirt"}) {
		t.Errorf("stats %+v, uris %q", st, got)
	}
	if strings.Contains(out.String(), "Connection") {
		t.Errorf("a connection header was kept:\n%s", out.String())
	}
}
