package rrpair

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestByteOrderMarkSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bom.jsonl")
	if err := os.WriteFile(path, []byte("\xEF\xBB\xBF"+goodLine+"\n"+goodLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("got %v, want the BOM skipped", err)
	}
	defer f.Close()
	if f.Len() != 2 {
		t.Fatalf("pairs: got %d, want 2", f.Len())
	}
	var p Pair
	if err := f.NewCursor().Decode(0, &p); err != nil || p.Line != 1 {
		t.Fatalf("pair 0: line %d, err %v; want line 1, no error", p.Line, err)
	}
}

// TestSpoolNamesStdin: errors about standard input name it, not the spool.
func TestSpoolNamesStdin(t *testing.T) {
	for name, in := range map[string]string{"empty": "", "bad line": "{}\n"} {
		t.Run(name, func(t *testing.T) {
			_, err := OpenReader(strings.NewReader(in), "<stdin>", Options{})
			if err == nil || !strings.HasPrefix(err.Error(), "<stdin>") || strings.Contains(err.Error(), "spool") {
				t.Fatalf("got %v, want an error naming <stdin> and not the spool", err)
			}
		})
	}
}

// TestSpoolLeavesNothing: the spool is gone from the temporary directory
// while the file is open, and after a failure.
func TestSpoolLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	f, err := OpenReader(strings.NewReader(goodLine+"\n"), "<stdin>", Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertEmptyDir(t, dir)
	if f.Len() != 1 {
		t.Errorf("pairs: got %d, want 1", f.Len())
	}
	f.Close()
	if _, err := OpenReader(strings.NewReader("nope\n"), "<stdin>", Options{}); err == nil {
		t.Fatal("want an error")
	}
	assertEmptyDir(t, dir)
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("%s holds %v, want nothing", dir, ents)
	}
}

// TestSpoolStopsOnCancel: a stream that never ends (a pipe whose writer
// stays open) is abandoned at once when the context is cancelled, and the
// spool does not stay behind.
func TestSpoolStopsOnCancel(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if _, err := pw.Write([]byte(goodLine + "\n")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("interrupt")
	time.AfterFunc(100*time.Millisecond, func() { cancel(stop) })
	start := time.Now()
	_, err = OpenReaderContext(ctx, pr, "<stdin>", Options{})
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "<stdin>") {
		t.Fatalf("got %v, want the cancel's cause, naming <stdin>", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v, want at once after the cancel", d)
	}
	assertEmptyDir(t, dir)
}

// TestSpoolNoSpace: a spool that runs out of room says so.
func TestSpoolNoSpace(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_RDWR, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	saved := createSpool
	createSpool = func() (*os.File, error) { return full, nil }
	defer func() { createSpool = saved }()
	_, err = OpenReader(strings.NewReader(strings.Repeat(goodLine+"\n", 1000)), "<stdin>", Options{})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left in") || !strings.Contains(err.Error(), "<stdin>") {
		t.Fatalf("got %v, want ENOSPC said plainly, naming <stdin>", err)
	}
}

// TestDecodeTruncatedFile: a file truncated under its mapping makes
// Decode return ErrFileChanged, naming the file and line, not crash.
func TestDecodeTruncatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(strings.Repeat(goodLine+"\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var p Pair
	err = f.NewCursor().Decode(99, &p)
	if !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), path+":100:") {
		t.Fatalf("got %v, want ErrFileChanged at %s:100", err, path)
	}
	if f.Faulted("not a fault") {
		t.Error("Faulted took a string for a fault")
	}
}
