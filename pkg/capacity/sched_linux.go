package capacity

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runQueueWait is how long the process's threads have waited on a run
// queue for a CPU so far (the second field of each thread's
// /proc/self/task/TID/schedstat): time it was ready to run and the machine
// gave it none. false when the kernel does not say.
func runQueueWait() (time.Duration, bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, false
	}
	var wait time.Duration
	read := false
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "schedstat"))
		if err != nil {
			continue // a thread that has exited
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			wait += time.Duration(ns)
			read = true
		}
	}
	return wait, read
}
