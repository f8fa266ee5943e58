//go:build windows

package rrpair

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// mmap maps the first size bytes of fd read-only (a file mapping object
// and a view of it, CreateFileMapping and MapViewOfFile): the file's pages
// in the system cache are the bytes every cursor reads, not a copy, as
// with mmap on Unix. The view keeps the mapping object, and the file,
// alive once their handles are closed.
func mmap(fd *os.File, size int) ([]byte, error) {
	h, err := windows.CreateFileMapping(windows.Handle(fd.Fd()), nil, windows.PAGE_READONLY, uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, os.NewSyscallError("CreateFileMapping", err)
	}
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ, 0, 0, uintptr(size))
	windows.CloseHandle(h)
	if err != nil {
		return nil, os.NewSyscallError("MapViewOfFile", err)
	}
	// addr is the view's address, outside Go's heap, valid until
	// UnmapViewOfFile (munmap).
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), size), nil
}

// munmap unmaps the view mmap mapped.
func munmap(b []byte) error {
	return os.NewSyscallError("UnmapViewOfFile", windows.UnmapViewOfFile(uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
}

// adviseSequential does nothing on Windows: the system cache reads ahead
// on its own.
func adviseSequential([]byte, bool) {}

// newSpool creates the spool of standard input: a temporary file deleted
// when its last handle closes (FILE_FLAG_DELETE_ON_CLOSE; the mapping of
// it holds one), so that no exit leaves it behind. Windows does not remove
// an open file as Unix unlinks one.
func newSpool() (*os.File, error) {
	name := filepath.Join(os.TempDir(), fmt.Sprintf("replay-spool-%d-%d.jsonl", os.Getpid(), time.Now().UnixNano()))
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.CREATE_NEW, windows.FILE_ATTRIBUTE_TEMPORARY|windows.FILE_FLAG_DELETE_ON_CLOSE, 0)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: name, Err: err}
	}
	return os.NewFile(uintptr(h), name), nil
}

// noSpace reports a write that failed for want of room on the file
// system.
func noSpace(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL)
}
