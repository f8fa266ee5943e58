//go:build unix

package vu

import (
	"fmt"
	"syscall"
)

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

// localHint says how to give the generator what it ran out of: file
// descriptors (the open-file limit), local ports.
func localHint() string {
	soft, hard, ok := OpenFileLimit()
	if !ok {
		return "raise the open-file limit (ulimit -n, or the container's: docker run --ulimit nofile=N:N) or use fewer VUs; out of local ports, spread the load over more source addresses or processes"
	}
	return fmt.Sprintf("raise the open-file limit (RLIMIT_NOFILE %d, at most %d without privileges) with ulimit -n, or the container's (docker run --ulimit nofile=N:N), or use fewer VUs; out of local ports, spread the load over more processes", soft, hard)
}
