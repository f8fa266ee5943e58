//go:build !linux

package capacity

import "time"

// runQueueWait is unknown outside Linux: false.
func runQueueWait() (time.Duration, bool) { return 0, false }
