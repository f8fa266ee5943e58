//go:build unix

package main

import (
	"os"
	"syscall"
)

// stopSignals stop a run: SIGINT (Ctrl-C) and SIGTERM (kill, docker stop,
// a Kubernetes pod's end). The first stops issuing and lets in-flight
// requests finish within --grace, reports written; a second exits at once.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// signalExitCode is 128 + the signal's number: 130 for SIGINT, 143 for
// SIGTERM.
func signalExitCode(sig os.Signal) int {
	if n, ok := sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
}
