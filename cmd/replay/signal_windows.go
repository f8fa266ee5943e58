//go:build windows

package main

import (
	"os"
	"syscall"
)

// stopSignals stop a run. Windows has no SIGTERM to send a process: Ctrl-C
// and Ctrl-Break come as os.Interrupt, and closing the console window,
// logging off or shutting down (CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT,
// CTRL_SHUTDOWN_EVENT) as syscall.SIGTERM, after which Windows ends the
// process within a few seconds (5 s for a close), reports written or not.
// taskkill without /F reaches no console program; with /F it ends it
// without a word, as SIGKILL does.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// signalExitCode is the Unix code of the signal it stands for, so that a
// script reads the same codes everywhere: 130 for Ctrl-C or Ctrl-Break,
// 143 for a console close, a log-off or a shutdown.
func signalExitCode(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return 143
	}
	return 130
}
