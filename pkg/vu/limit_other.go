//go:build !unix && !windows

package vu

// OpenFileLimit returns this process's limit on open files; ok is false
// where the system has none to read, as here.
func OpenFileLimit() (soft, hard uint64, ok bool) { return 0, 0, false }

// localHint says how to give the generator what it ran out of.
func localHint() string {
	return "use fewer VUs, or spread the load over more processes or machines"
}
