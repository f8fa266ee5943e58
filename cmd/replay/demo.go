package main

import (
	"context"
	"fmt"
	"time"

	"github.com/replay-dev/replay/internal/demorun"
	"github.com/replay-dev/replay/pkg/demo"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newDemoCmd(io stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	f := newRunFlags()
	var d demorun.Options
	var serve string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Replay built-in traffic against a built-in demo SUT on loopback",
		Long: `Start the built-in demo system under test (an event-ingest API: POST /events
answers 202, a few GET endpoints, a small random service time) on a loopback
port, replay the recorded traffic that travels inside the binary against it,
and print the report. Works from any directory; nothing leaves loopback.

The demo SUT checks what goes stale in recorded traffic: it verifies JWTs
(the recorded token expired an hour after the recording), refuses events
older than five minutes, and knows only the orders it created. The demo
therefore replays with its transforms file (testdata/demo-transforms.yaml,
inside the binary): timestamps shifted, the token re-signed, order ids
learned from the live answers. --raw replays without them, to show the
traffic failing; --transforms FILE uses yours instead.

With --serve ADDR, only run the demo SUT on ADDR (a loopback address) until
interrupted, to aim replay run or another tool at it.`,
		Example: `  replay demo
  replay demo --raw                  # the same traffic without transforms: 401s
  replay demo --vus 50 --duration 10s --out demo.json
  replay demo --serve 127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if serve != "" {
				return serveDemo(cmd.Context(), serve, log)
			}
			markGiven(cmd.Flags(), &f.run.Load)
			f.run.Filter.SeedGiven = cmd.Flags().Changed("seed")
			srv, err := demorun.Start(&f.run, d, log)
			if err != nil {
				return err
			}
			defer srv.Close()
			return execute(cmd.Context(), f, io, log)
		},
	}
	f.run.Load.Duration = 5 * time.Second
	f.addFlags(cmd.Flags(), 20)
	cmd.Flags().StringVar(&serve, "serve", "", "only serve the demo SUT on `ADDR` (loopback) until interrupted")
	cmd.Flags().BoolVar(&d.Raw, "raw", false, "replay without the demo's transforms, to see the recorded traffic fail")
	cmd.Flags().BoolVar(&d.NoSink, "no-sink", false, "do not follow events to the demo's worker (no end-to-end section)")
	cmd.Flags().Float64Var(&d.WorkerRate, "worker-rate", demo.DefaultWorkerRate, "events a second the demo SUT's worker processes; above it, a backlog grows")
	return cmd
}

// serveDemo only serves the demo SUT on addr, until ctx is done.
func serveDemo(ctx context.Context, addr string, log zerolog.Logger) error {
	srv, err := demo.Start(addr)
	if err != nil {
		return fmt.Errorf("--serve: %w", err)
	}
	log.Info().Str("url", srv.URL()).Msg("demo SUT listening; stop with Ctrl-C")
	<-ctx.Done()
	return srv.Close()
}
