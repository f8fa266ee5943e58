package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// outFile is an output file written whole or not at all: a regular file
// (or one not there yet) is written to a temporary file beside it and
// renamed over it by commit, so that a refused start, a failure or a
// crash leaves the previous file as it was and never a truncated one.
// Anything else (/dev/stdout, a pipe) is written directly.
type outFile struct {
	*os.File
	path   string // the file asked for
	direct bool   // written in place: commit only closes
	done   bool   // committed or aborted
}

// createOut opens the output at path, as outFile says.
func createOut(path string) (*outFile, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // replace what a symbolic link points to, not the link
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("%s: is a directory", path)
	case err == nil && !st.Mode().IsRegular():
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			return nil, err
		}
		return &outFile{File: f, path: path, direct: true}, nil
	}
	mode := os.FileMode(0o644)
	if err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, unwrapPath(err))
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return &outFile{File: tmp, path: path}, nil
}

// unwrapPath drops the temporary file's name from err: the user named
// the file beside it.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// commit closes the file and puts it in place.
func (f *outFile) commit() error {
	if f.done {
		return nil
	}
	f.done = true
	if err := f.File.Close(); err != nil {
		if !f.direct {
			os.Remove(f.File.Name())
		}
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	if f.direct {
		return nil
	}
	if err := os.Rename(f.File.Name(), f.path); err != nil {
		os.Remove(f.File.Name())
		return fmt.Errorf("write %s: %w", f.path, unwrapPath(err))
	}
	return nil
}

// abort closes the file and, unless written in place, removes it: the
// file asked for stays as it was.
func (f *outFile) abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	if !f.direct {
		os.Remove(f.File.Name())
	}
}

// namedPath is a file a flag names; out says that the command writes it.
type namedPath struct {
	flag, path string
	out        bool
}

// checkDistinct refuses an output that is the same file as an input or
// as another output: the same inode for files that exist (a link, another
// spelling), else the same cleaned absolute path. Empty paths and "-"
// (standard input or output) are not files.
func checkDistinct(files []namedPath) error {
	for i, a := range files {
		if !a.out || a.path == "" || a.path == "-" {
			continue
		}
		for j, b := range files {
			if j == i || (b.out && j > i) || b.path == "" || b.path == "-" {
				continue
			}
			if sameFile(a.path, b.path) {
				return fmt.Errorf("%s %s: the same file as %s %s: give each output its own file", a.flag, a.path, b.flag, b.path)
			}
		}
	}
	return nil
}

// sameFile says whether a and b name one file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	return absPath(a) == absPath(b)
}

// absPath is path made absolute and clean, its directory's symbolic links
// resolved when it exists.
func absPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}
