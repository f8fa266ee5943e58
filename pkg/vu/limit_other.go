//go:build !unix

package vu

// OpenFileLimit returns this process's limit on open files; ok is false
// where the system has none to read, as here.
func OpenFileLimit() (soft, hard uint64, ok bool) { return 0, 0, false }
