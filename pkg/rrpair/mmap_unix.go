//go:build unix

package rrpair

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// mmap maps the first size bytes of fd read-only and shared: the file's
// pages in the page cache are the bytes every cursor reads, not a copy.
func mmap(fd *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(fd.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
}

// munmap unmaps what mmap mapped.
func munmap(b []byte) error { return unix.Munmap(b) }

// adviseSequential tells the kernel that b is about to be read in order
// (on: read ahead, drop behind), or no longer (off).
func adviseSequential(b []byte, on bool) {
	advice := unix.MADV_NORMAL
	if on {
		advice = unix.MADV_SEQUENTIAL
	}
	_ = unix.Madvise(b, advice)
}

// newSpool creates the spool of standard input: a temporary file, unlinked
// at once, so that no exit leaves it behind.
func newSpool() (*os.File, error) {
	tmp, err := os.CreateTemp("", "replay-spool-*.jsonl")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(tmp.Name()); err != nil {
		tmp.Close()
		return nil, err
	}
	return tmp, nil
}

// noSpace reports a write that failed for want of room on the file
// system.
func noSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }
