package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Output says where a recording goes (-o): a file written whole or not at
// all, or standard output.
//
// A file is written to a temporary file beside it (".NAME.*.tmp", mode
// 0600: a recording holds what clients sent) and renamed over it when the
// recorder stops; a refused start, a failure to write or a crash leaves
// the file asked for as it was. An existing file is refused unless Force
// (replaced) or Append (its lines kept, the new ones after them). What is
// not a regular file (/dev/stdout, a pipe) is written directly.
type Output struct {
	Path          string    // -o; "" or "-": Stdout
	Force, Append bool      // --force, --append
	Stdout        io.Writer // where "" and "-" write
}

// check refuses, before anything is opened or bound, an output that
// cannot be: a directory, or an existing file without Force or Append.
func (o Output) check() error {
	if o.Force && o.Append {
		return errors.New("--force and --append: give one, to replace -o's file or to add to it")
	}
	if o.Path == "" || o.Path == "-" {
		if o.Force || o.Append {
			return errors.New("--force and --append are about -o FILE: give -o")
		}
		return nil
	}
	st, err := os.Stat(o.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat(filepath.Dir(o.Path)); err != nil {
			return fmt.Errorf("-o %s: %w", o.Path, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("-o: %w", err)
	case st.IsDir():
		return fmt.Errorf("-o %s: is a directory", o.Path)
	case !st.Mode().IsRegular():
		return nil
	case !o.Force && !o.Append:
		return fmt.Errorf("-o %s: the file exists (%d bytes): give --force to replace it or --append to add to it, or another name", o.Path, st.Size())
	}
	return nil
}

// openOutput is the output opened: w to write to, commit to put it in
// place (after the last write), abort to drop it.
type openOutput struct {
	w      io.Writer
	commit func() error
	abort  func()
}

// open opens the output checked by check.
func (o Output) open() (*openOutput, error) {
	if o.Path == "" || o.Path == "-" {
		return &openOutput{w: o.Stdout, commit: func() error { return nil }, abort: func() {}}, nil
	}
	path := o.Path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // replace what a symbolic link points to, not the link
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, fmt.Errorf("-o: %w", err)
		}
		return &openOutput{w: f, commit: f.Close, abort: func() { f.Close() }}, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp") // 0600
	if err != nil {
		return nil, fmt.Errorf("-o %s: %w", o.Path, unwrapPath(err))
	}
	abort := func() { tmp.Close(); os.Remove(tmp.Name()) }
	if o.Append {
		if err := copyLines(tmp, path); err != nil {
			abort()
			return nil, fmt.Errorf("--append %s: %w", o.Path, err)
		}
	}
	commit := func() error {
		if err := tmp.Sync(); err != nil {
			abort()
			return fmt.Errorf("write %s: %w", o.Path, err)
		}
		if err := tmp.Close(); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", o.Path, err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", o.Path, unwrapPath(err))
		}
		return nil
	}
	return &openOutput{w: tmp, commit: commit, abort: abort}, nil
}

// copyLines copies the file at path into w, ending it with a newline if
// its last line has none. A file not there copies nothing.
func copyLines(w io.Writer, path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, f)
	if err != nil || n == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, n-1); err != nil {
		return err
	}
	if last[0] != '\n' {
		_, err = w.Write([]byte{'\n'})
	}
	return err
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
