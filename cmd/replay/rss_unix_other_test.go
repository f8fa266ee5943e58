//go:build unix && !linux

package main

import (
	"os/exec"
	"runtime"
	"syscall"
)

// runPeakRSS runs cmd and returns its high-water mark of resident
// memory, in bytes (getrusage's ru_maxrss: bytes on macOS, KiB
// elsewhere).
func runPeakRSS(cmd *exec.Cmd) (int64, bool) {
	cmd.Run()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss), true
	}
	return int64(ru.Maxrss) << 10, true
}
