package har

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/replay-dev/replay/internal/testutil/golden"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func TestConvertGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "browser.har"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var skipped []string
	st, err := Convert(bytes.NewReader(in), &out, func(entry int, why string) { skipped = append(skipped, why) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != 4 || st.Written != 3 || st.HTTP2 != 2 || len(skipped) != 1 || !strings.HasPrefix(skipped[0], "url: ") || !strings.Contains(skipped[0], "chrome-extension") {
		t.Errorf("stats %+v, skipped %v", st, skipped)
	}
	golden.Check(t, "browser.golden.jsonl", out.Bytes())
	// The output is a valid traffic file.
	f, err := rrpair.OpenReader(&out, "browser.jsonl", rrpair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Len() != 3 || f.Sessions() != 1 {
		t.Errorf("%d pairs, %d sessions", f.Len(), f.Sessions())
	}
}

func TestNotHAR(t *testing.T) {
	for _, in := range []string{`[]`, `{"x":1}`, `{"log":{"entries":{}}}`, `{"log":{"entries":[{"request":1}]`, ``, "\xef\xbb\xbf"} {
		if _, err := Convert(strings.NewReader(in), &bytes.Buffer{}, func(int, string) {}); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// FuzzHAR feeds the converter anything: it errs or skips, never panics,
// and what it writes is a valid traffic file.
func FuzzHAR(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.har"))
	for _, name := range seeds {
		seed, _ := os.ReadFile(name)
		f.Add(seed)
	}
	f.Add([]byte(`{"log":{"entries":[{"request":{"method":"GET","url":"http://h/"},"response":{"status":0}}]}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		st, err := Convert(bytes.NewReader(in), &out, func(int, string) {})
		if err != nil || st.Written == 0 {
			return
		}
		file, err := rrpair.OpenReader(&out, "fuzz.jsonl", rrpair.Options{})
		if err != nil {
			t.Fatalf("the output is not a valid traffic file: %v\n%s", err, out.Bytes())
		}
		file.Close()
	})
}

// TestSeekingMatchesBuffered: a file (seekable, two passes) and a stream
// (buffered) convert the same.
func TestSeekingMatchesBuffered(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "browser.har"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fromFile, fromStream bytes.Buffer
	st1, err1 := Convert(f, &fromFile, func(int, string) {})
	in, _ := os.ReadFile(filepath.Join("testdata", "browser.har"))
	st2, err2 := Convert(io.MultiReader(bytes.NewReader(in)), &fromStream, func(int, string) {})
	if err1 != nil || err2 != nil || !reflect.DeepEqual(st1, st2) || !bytes.Equal(fromFile.Bytes(), fromStream.Bytes()) {
		t.Errorf("file: %+v %v\n%s\nstream: %+v %v\n%s", st1, err1, fromFile.Bytes(), st2, err2, fromStream.Bytes())
	}
}

// TestPipeFile: an *os.File that cannot seek (a pipe) converts as a
// stream does.
func TestPipeFile(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "browser.har"))
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { w.Write(in); w.Close() }()
	var out bytes.Buffer
	st, err := Convert(r, &out, func(int, string) {})
	if err != nil || st.Written != 3 {
		t.Fatalf("%+v, %v", st, err)
	}
	golden.Check(t, "browser.golden.jsonl", out.Bytes())
}

// TestRefSize: the first pass keeps 24 bytes an entry, as documented.
func TestRefSize(t *testing.T) {
	if n := unsafe.Sizeof(ref{}); n != 24 {
		t.Errorf("a ref is %d bytes", n)
	}
}

// TestOrder: entries come out in time order, to the nanosecond, before
// 1970 and without a time (first) alike, from a file as from a stream.
func TestOrder(t *testing.T) {
	entry := func(path, at string) string {
		return `{"startedDateTime":"` + at + `","request":{"method":"GET","url":"http://h` + path + `"},"response":{"status":200}}`
	}
	in := `{"log":{"entries":[` + strings.Join([]string{
		entry("/c", "2026-01-01T00:00:00.000000002Z"),
		entry("/b", "2026-01-01T00:00:00.000000001Z"),
		`{"request":{"method":"GET","url":"http://h/none"},"response":{"status":200}}`,
		entry("/old", "1969-12-31T23:59:59.5Z"),
		entry("/d", "2026-01-01T01:00:00+01:00"),
	}, ",") + `]}}`
	for name, r := range map[string]io.Reader{"file": strings.NewReader(in), "stream": io.MultiReader(strings.NewReader(in))} {
		var out bytes.Buffer
		if _, err := Convert(r, &out, func(n int, why string) { t.Errorf("%s: entry %d skipped: %s", name, n, why) }); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			_, uri, _ := strings.Cut(line, `"uri":"`)
			uri, _, _ = strings.Cut(uri, `"`)
			got = append(got, uri)
		}
		if strings.Join(got, " ") != "/none /old /d /b /c" {
			t.Errorf("%s: order %v", name, got)
		}
	}
}
