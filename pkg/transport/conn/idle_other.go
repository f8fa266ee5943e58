//go:build !linux

package conn

import (
	"net"
	"syscall"
)

// rawConn: no probe here; probeIdle falls back on readIdle.
func rawConn(net.Conn) syscall.RawConn { return nil }

func (l *Line) peek(uintptr) {}
