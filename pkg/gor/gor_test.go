package gor

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/replay-dev/replay/internal/golden"
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
// new exchange; without a response, that request is written once, and
// requests left without one come out in capture order.
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
	if st.Written != 3 || len(lines) != 3 || !strings.Contains(lines[0], `"/a1"`) ||
		!strings.Contains(lines[1], `"/first-b"`) || !strings.Contains(lines[2], `"/a2"`) {
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
		var got []string
		err := records(bufio.NewReaderSize(r(), 64<<10), func(n int, rec []byte) error {
			got = append(got, string(rec))
			return nil
		})
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
		records(bufio.NewReaderSize(bytes.NewReader(in), 64<<10), func(int, []byte) error { return nil })
	}
}
