//go:build windows

package vu

// OpenFileLimit returns this process's limit on open files: Windows has
// none to read (a process may hold millions of handles), so ok is false
// and no run is refused for its VU count. What bounds the connections
// there is the local (ephemeral) ports: 16,384 by default.
func OpenFileLimit() (soft, hard uint64, ok bool) { return 0, 0, false }

// localHint says how to give the generator what it ran out of: on
// Windows, local ports and socket buffers, not file descriptors.
func localHint() string {
	return "Windows has no open-file limit to raise: out of local ports (16,384 by default), widen the dynamic port range (netsh int ipv4 set dynamicport tcp start=10000 num=55535, as administrator) or spread the load over more processes or machines; or use fewer VUs"
}
