package har

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/golden"
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
	if st.Entries != 4 || st.Written != 3 || st.Downgraded != 2 || len(skipped) != 1 || !strings.Contains(skipped[0], "chrome-extension") {
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
	for _, in := range []string{`[]`, `{"x":1}`, `{"log":{"entries":{}}}`, `{"log":{"entries":[{"request":1}]}}`, ``} {
		if _, err := Convert(strings.NewReader(in), &bytes.Buffer{}, func(int, string) {}); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// FuzzHAR feeds the converter anything: it errs or skips, never panics,
// and what it writes is a valid traffic file.
func FuzzHAR(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "browser.har"))
	f.Add(seed)
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
	if err1 != nil || err2 != nil || st1 != st2 || !bytes.Equal(fromFile.Bytes(), fromStream.Bytes()) {
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
