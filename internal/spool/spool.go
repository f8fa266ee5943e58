// Package spool sorts a stream of records by a time key without holding
// the records in memory: the importers write pairs in request order while
// the recorder wrote them in another (GoReplay as answers completed, a log
// as lines were written). Records stay in memory up to a limit, then go to
// an unlinked temporary file; memory keeps 32 bytes a record.
package spool

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"slices"
)

// memLimit is how many bytes of records stay in memory before the spool
// moves them to a temporary file.
const memLimit = 8 << 20

// Sorter holds records with their keys; Sort orders them by key, then by
// sequence number (the order the records had at their source). Use it
// from one goroutine.
type Sorter struct {
	index []entry
	mem   []byte        // the records, until they outgrow limit
	file  *os.File      // then the records, mem's first
	w     *bufio.Writer // writes to file
	size  int64         // bytes of records added
	limit int
}

type entry struct {
	key, seq int64
	off      int64
	n        int
}

// New returns an empty Sorter.
func New() *Sorter { return &Sorter{limit: memLimit} }

// Add appends a record (copied) with its key and sequence number.
func (s *Sorter) Add(key, seq int64, rec []byte) error {
	s.index = append(s.index, entry{key, seq, s.size, len(rec)})
	s.size += int64(len(rec))
	if s.file == nil && len(s.mem)+len(rec) <= s.limit {
		s.mem = append(s.mem, rec...)
		return nil
	}
	if s.file == nil {
		if err := s.spill(); err != nil {
			return err
		}
	}
	_, err := s.w.Write(rec)
	return err
}

// spill moves the records to a temporary file, unlinked at once where the
// system allows, so that nothing is left behind whatever happens.
func (s *Sorter) spill() error {
	f, err := os.CreateTemp("", "replay-spool-*")
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	os.Remove(f.Name()) // on systems that refuse, Close removes it
	s.file, s.w = f, bufio.NewWriterSize(f, 64<<10)
	_, err = s.w.Write(s.mem)
	s.mem = nil
	return err
}

// Sort orders the records by key and sequence number, and makes them
// readable.
func (s *Sorter) Sort() error {
	slices.SortFunc(s.index, func(a, b entry) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.seq, b.seq)) })
	if s.w != nil {
		return s.w.Flush()
	}
	return nil
}

// Len is the number of records.
func (s *Sorter) Len() int { return len(s.index) }

// Key is the key of the i-th record (in sorted order after Sort).
func (s *Sorter) Key(i int) int64 { return s.index[i].key }

// Record returns the i-th record, in buf when it is on file (buf is grown
// as needed; the result is valid until the next call with the same buf).
func (s *Sorter) Record(i int, buf []byte) ([]byte, error) {
	e := s.index[i]
	if s.file == nil {
		return s.mem[e.off : e.off+int64(e.n)], nil
	}
	buf = slices.Grow(buf[:0], e.n)[:e.n]
	if _, err := s.file.ReadAt(buf, e.off); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return buf, nil
}

// Close releases the temporary file, if any.
func (s *Sorter) Close() error {
	if s.file == nil {
		return nil
	}
	name := s.file.Name()
	err := s.file.Close()
	os.Remove(name)
	s.file = nil
	return err
}
