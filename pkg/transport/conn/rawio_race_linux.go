//go:build race

package conn

import "syscall"

// rawIO is rawio_linux.go's under the race detector: syscall.Read and
// Write, which tell it that a read follows the peer's write (as os.File's
// reads do), so that what a test's server wrote before it answered is
// seen as written before the answer was read.
func rawIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		var n int
		var err error
		if trap == syscall.SYS_WRITE {
			n, err = syscall.Write(int(fd), b)
		} else {
			n, err = syscall.Read(int(fd), b)
		}
		switch errno, _ := err.(syscall.Errno); {
		case err == nil:
			return n, 0
		case errno != syscall.EINTR:
			return 0, errno
		}
	}
}
