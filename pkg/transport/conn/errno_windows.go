//go:build windows

package conn

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// resetErrnos say the SUT reset the connection (or it broke under a
// write). Winsock's codes are its own: syscall.ECONNRESET is a value Go
// invents on Windows, which no socket returns.
var resetErrnos = []error{windows.WSAECONNRESET, windows.WSAECONNABORTED, windows.ERROR_NETNAME_DELETED, syscall.ECONNRESET, syscall.EPIPE}

// localErrnos are this machine's limits: handles, local (ephemeral) ports
// — 16,384 by default, netsh int ipv4 show dynamicport tcp —, socket
// buffers.
var localErrnos = []error{windows.WSAEMFILE, windows.ERROR_TOO_MANY_OPEN_FILES, windows.WSAEADDRNOTAVAIL, windows.WSAEADDRINUSE, windows.WSAENOBUFS}
