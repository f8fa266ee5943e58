//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// runPeakRSS runs cmd and returns its high-water mark of resident
// memory, in bytes: VmHWM of /proc/PID/status, read until it exits. Not
// getrusage's ru_maxrss: os/exec starts a child sharing the parent's
// memory until exec (CLONE_VM), and at exec Linux records the old
// memory's peak — the parent's — as the child's maxrss, so a test binary
// grown large would fail a bound the child itself keeps.
func runPeakRSS(cmd *exec.Cmd) (int64, bool) { return runPeakRSSStarted(cmd, nil) }

// runPeakRSSStarted is runPeakRSS that says on started (when not nil)
// that cmd started, or why not.
func runPeakRSSStarted(cmd *exec.Cmd, started chan<- error) (int64, bool) {
	err := cmd.Start()
	if started != nil {
		started <- err
	}
	if err != nil {
		return 0, false
	}
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		var max int64
		for {
			if v, ok := vmHWM(status); ok && v > max {
				max = v
			}
			select {
			case <-done:
				peak <- max
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	cmd.Wait()
	close(done)
	max := <-peak
	return max, max > 0
}

// vmHWM reads the VmHWM line of a /proc status file, in bytes.
func vmHWM(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	_, rest, ok := bytes.Cut(b, []byte("VmHWM:"))
	if !ok {
		return 0, false // a zombie has no memory left to tell
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	f := bytes.Fields(line) // "1234", "kB"
	if len(f) != 2 {
		return 0, false
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	return kb << 10, err == nil
}
