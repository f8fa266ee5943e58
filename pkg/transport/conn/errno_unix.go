//go:build unix

package conn

import "syscall"

// resetErrnos say the SUT reset the connection (or it broke under a
// write).
var resetErrnos = []error{syscall.ECONNRESET, syscall.EPIPE, syscall.ECONNABORTED}

// localErrnos are this machine's limits: file descriptors (the process's,
// the system's), local ports, socket buffers.
var localErrnos = []error{syscall.EMFILE, syscall.ENFILE, syscall.EADDRNOTAVAIL, syscall.ENOBUFS}
