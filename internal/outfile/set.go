package outfile

import (
	"fmt"
	"io"
)

// Output is one output file a command may write: the flag that names it,
// its path ("" when not asked for), and what writes a T into it.
type Output[T any] struct {
	Flag, Path string
	Write      func(io.Writer, T) error
}

// Set is a command's output files of one T (a run's summary, a search's
// result): created together before anything is done, so that a bad path
// fails first, and written and put in place together, so that a command
// that ends before its reports leaves the previous files as they were.
type Set[T any] struct {
	files  []*File
	writes []func(io.Writer, T) error
}

// CreateSet creates the files of outs that have a path (Create). On an
// error, those created are dropped and the error names the flag.
func CreateSet[T any](outs ...Output[T]) (*Set[T], error) {
	s := &Set[T]{}
	for _, o := range outs {
		if o.Path == "" {
			continue
		}
		f, err := Create(o.Path)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: %w", o.Flag, err)
		}
		s.files, s.writes = append(s.files, f), append(s.writes, o.Write)
	}
	return s, nil
}

// Write writes v into every file and puts them all in place; the error
// names the file that failed, or is the first commit's.
func (s *Set[T]) Write(v T) error {
	_, release := gate.hold() // a second signal's exit waits for the files
	defer release()
	for i, f := range s.files {
		if err := s.writes[i](f, v); err != nil {
			return fmt.Errorf("write %s: %w", f.Path(), err)
		}
	}
	var first error
	for _, f := range s.files {
		if err := f.Commit(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}

// Close drops the files not put in place: the files asked for stay as
// they were. It may be called more than once, and after Write.
func (s *Set[T]) Close() {
	for _, f := range s.files {
		f.Abort()
	}
	s.files = nil
}
