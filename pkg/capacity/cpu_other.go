//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package capacity

import (
	"runtime"
	"time"
)

// processCPU says the process's CPU time is unknown here: no getrusage.
func processCPU() (time.Duration, string) {
	return 0, "no process CPU time on " + runtime.GOOS
}
