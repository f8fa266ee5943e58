//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// peakRSS is a process's high-water mark of resident memory, in bytes
// (getrusage's ru_maxrss: bytes on macOS, KiB elsewhere).
func peakRSS(ps *os.ProcessState) (int64, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss), true
	}
	return int64(ru.Maxrss) << 10, true
}
