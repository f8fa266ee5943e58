// Package outfile writes output files whole or not at all: the reports,
// the summary, the failure dump and the converted files of every command
// go through it, so that a refused start, a failure or a crash never leaves
// a truncated file or destroys the previous one. It also holds the rule
// that keeps the user's files safe before any is opened: no output may be
// the same file as an input or as another output (CheckDistinct).
package outfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File is an output file written whole or not at all: a regular file
// (or one not there yet) is written to a temporary file beside it and
// renamed over it by commit, so that a refused start, a failure or a
// crash leaves the previous file as it was and never a truncated one.
// Anything else (/dev/stdout, a pipe) is written directly.
type File struct {
	*os.File
	path   string // the file asked for
	direct bool   // written in place: commit only closes
	done   bool   // committed or aborted
}

// Create opens the output at path, as File says. Write to it, then Commit
// (or Abort).
func Create(path string) (*File, error) {
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
		return &File{File: f, path: path, direct: true}, nil
	}
	mode := os.FileMode(0o644)
	if err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, unwrapPath(err))
	}
	if err := tmp.Chmod(mode); err != nil || !gate.track(tmp.Name()) {
		tmp.Close()
		os.Remove(tmp.Name())
		if err == nil {
			err = errExiting
		}
		return nil, err
	}
	return &File{File: tmp, path: path}, nil
}

// errExiting is a file created as the process exits (Exit): it is not.
var errExiting = errors.New("the process is exiting")

// unwrapPath drops the temporary file's name from err: the user named
// the file beside it.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Commit closes the file and puts it in place. It may be called again,
// and after Abort: then it does nothing.
func (f *File) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	_, release := gate.hold()
	defer release()
	if !f.direct {
		defer gate.untrack(f.File.Name())
	}
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

// Abort closes the file and, unless written in place, removes it: the
// file asked for stays as it was. It does nothing after Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	if !f.direct {
		os.Remove(f.File.Name())
		gate.untrack(f.File.Name())
	}
}

// Path is the file asked for (a symbolic link resolved), for messages.
func (f *File) Path() string { return f.path }
