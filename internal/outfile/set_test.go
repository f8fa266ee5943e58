package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSet: a set's files are created together (a bad path names its flag
// and leaves nothing behind), written and put in place together; a set
// closed before or after a failed write leaves the previous files as they
// were.
func TestSet(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.html")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("previous"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(w io.Writer, v string) error { _, err := io.WriteString(w, v); return err }
	fail := func(io.Writer, string) error { return errors.New("disk full") }

	if _, err := CreateSet(Output[string]{Flag: "--out", Path: a, Write: write}, Output[string]{Flag: "--html", Path: filepath.Join(dir, "no", "such", "dir.html"), Write: write}); err == nil || !strings.HasPrefix(err.Error(), "--html: ") {
		t.Fatalf("a bad path: got %v, want an error naming --html", err)
	}
	s, err := CreateSet(Output[string]{Flag: "--out", Path: a, Write: write}, Output[string]{Flag: "--none", Write: fail}, Output[string]{Flag: "--html", Path: b, Write: fail})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write("new"); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("a failed write: got %v", err)
	}
	s.Close()
	for _, p := range []string{a, b} {
		if got, _ := os.ReadFile(p); string(got) != "previous" {
			t.Errorf("%s: got %q after a failed write, want the previous file", p, got)
		}
	}
	s, err = CreateSet(Output[string]{Flag: "--out", Path: a, Write: write}, Output[string]{Flag: "--html", Path: b, Write: write})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write("new"); err != nil {
		t.Fatal(err)
	}
	s.Close() // after Write: nothing to drop
	for _, p := range []string{a, b} {
		if got, _ := os.ReadFile(p); string(got) != "new" {
			t.Errorf("%s: got %q, want the new file", p, got)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
