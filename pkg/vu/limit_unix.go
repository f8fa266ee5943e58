//go:build unix

package vu

import "syscall"

// OpenFileLimit returns this process's limit on open files
// (RLIMIT_NOFILE): the soft limit that applies, and the hard limit it may
// be raised to. ok is false where the system has none to read.
func OpenFileLimit() (soft, hard uint64, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	return uint64(rl.Cur), uint64(rl.Max), true
}
