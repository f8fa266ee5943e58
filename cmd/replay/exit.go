package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes (docs/design.md).
const (
	exitOK        = 0
	exitFailed    = 1 // could not start, or failed: bad input, bad flags
	exitThreshold = 99
)

// stopSignal is the cause of the run's context when a signal stopped it.
type stopSignal struct{ sig os.Signal }

func (s stopSignal) Error() string { return "stopped by " + s.sig.String() }

// ExitCode is 130 for SIGINT and 143 for SIGTERM (128 + the signal
// number; Windows' console events map to the same: signalExitCode).
func (s stopSignal) ExitCode() int { return signalExitCode(s.sig) }

// exitCoder is an error that carries its own exit code (a failed
// threshold, say).
type exitCoder interface {
	error
	ExitCode() int
}

// Main runs the command line args and returns the process exit code. The
// reports of an interrupted run are written before it returns.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var sig stopSignal
	if errors.As(context.Cause(ctx), &sig) {
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "replay: %v\n", err)
		}
		return sig.ExitCode()
	}
	if err == nil {
		return exitOK
	}
	var code exitCoder
	if errors.As(err, &code) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(stderr, "replay: %s\n", msg)
		}
		return code.ExitCode()
	}
	fmt.Fprintf(stderr, "replay: %v\n", err)
	return exitFailed
}
