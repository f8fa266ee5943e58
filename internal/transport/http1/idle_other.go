//go:build !linux

package http1

import (
	"net"
	"syscall"
)

// rawConn: no probe here; probeIdle falls back on readIdle.
func rawConn(net.Conn) syscall.RawConn { return nil }

func (c *Client) peek(uintptr) {}
