//go:build !race

package conn

import (
	"syscall"
	"unsafe"
)

// rawIO is one read (trap SYS_READ) or write (SYS_WRITE) of b on the
// non-blocking fd, retried on EINTR. A raw system call: one on a
// non-blocking socket never blocks, so the runtime's bookkeeping of one
// that might (entersyscall, and with one processor the hand-off sysmon
// makes of it when a call lasts, a thread woken) is not needed. It costs
// about a tenth of the CPU of a keep-alive request (issue 27). Under the
// race detector, rawio_race_linux.go goes through syscall.Read and Write,
// which tell it that a read follows the peer's write.
func rawIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		n, _, errno := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if errno != syscall.EINTR {
			if errno != 0 {
				n = 0
			}
			return int(n), errno
		}
	}
}
