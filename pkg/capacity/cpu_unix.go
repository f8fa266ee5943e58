//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package capacity

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used so
// far, from getrusage(RUSAGE_SELF); "" or why it is unknown.
func processCPU() (time.Duration, string) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, "getrusage: " + err.Error()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ""
}
