// Command replay replays recorded HTTP traffic against a system under test
// and reports how it held up. See the README for a tour.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/replay-dev/replay/internal/outfile"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals...) // per platform: signal_unix.go, signal_windows.go
	go func() {
		first := <-sigs
		cancel(stopSignal{first}) // stop issuing, finish in flight, write reports
		second := <-sigs
		outfile.Exit()                         // a second signal exits at once, once the outputs under way are written (replay mock: its report)
		os.Exit(stopSignal{second}.ExitCode()) // and no temporary file is left
	}()
	os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
