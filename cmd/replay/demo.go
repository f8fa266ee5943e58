package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/replay-dev/replay/cmd/replay/internal/demorun"
	"github.com/replay-dev/replay/pkg/demo"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newDemoCmd(io stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	f := newRunFlags()
	var d demorun.Options
	var sut demorun.ServeOptions
	var write string
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
inside the binary): timestamps shifted, the token re-signed, order and
event ids learned from the live answers. --raw replays without them, to
show the traffic failing; --transforms FILE uses yours instead.

To take it apart: --write-traffic DIR writes the demo's traffic and
transforms as files; --serve ADDR only runs the demo SUT on ADDR (loopback)
until interrupted, to aim replay run or another tool at it, its worker
delivering the events it processed to --deliver-to (a loopback sink).`,
		Example: `  replay demo
  replay demo --raw                  # the same traffic without transforms: 401s
  replay demo --vus 50 --duration 10s --out demo.json
  replay demo --write-traffic ./demo
  replay demo --serve 127.0.0.1:8080 --deliver-to http://127.0.0.1:9090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if sut.Addr != "" || write != "" {
				sut.WorkerRate, sut.WorkerDelay = d.WorkerRate, d.WorkerDelay
				return demoAlone(cmd, sut, write, log)
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
	cmd.Flags().StringVar(&sut.Addr, "serve", "", "only serve the demo SUT on `ADDR` (loopback) until interrupted")
	cmd.Flags().StringVar(&sut.DeliverTo, "deliver-to", "", "with --serve: the worker delivers processed events to this loopback sink `URL` (replay sink --sink-http, a run's --sink-http)")
	cmd.Flags().StringVar(&write, "write-traffic", "", "write the demo's traffic and transforms into `DIR` as files, and replay nothing")
	cmd.Flags().BoolVar(&d.Raw, "raw", false, "replay without the demo's transforms, to see the recorded traffic fail")
	cmd.Flags().BoolVar(&d.NoSink, "no-sink", false, "do not follow events to the demo's worker (no end-to-end section)")
	cmd.Flags().Float64Var(&d.WorkerRate, "worker-rate", demo.DefaultWorkerRate, "events a second the demo SUT's worker processes; above it, a backlog grows")
	cmd.Flags().DurationVar(&d.WorkerDelay, "worker-delay", 0, "the demo SUT's worker delivers no event sooner than this after it was queued (a slow pipeline, not a full one)")
	return cmd
}

// demoAlone writes the demo's traffic (--write-traffic), or serves its SUT
// alone (--serve) until interrupted; run flags are refused.
func demoAlone(cmd *cobra.Command, sut demorun.ServeOptions, write string, log zerolog.Logger) error {
	var given []string
	cmd.Flags().Visit(func(f *pflag.Flag) { given = append(given, f.Name) })
	mode := map[bool]string{true: "--write-traffic", false: "--serve"}[write != ""]
	if err := demorun.CheckAlone(mode, given); err != nil {
		return err
	}
	if write != "" {
		paths, err := demorun.WriteTraffic(write)
		if err == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", strings.Join(paths, " and "))
		}
		return err
	}
	srv, err := demorun.StartSUT(sut, log)
	if err != nil {
		return err
	}
	log.Info().Str("url", srv.URL()).Str("deliver_to", sut.DeliverTo).Msg("demo SUT listening; stop with Ctrl-C")
	<-cmd.Context().Done()
	return srv.Close()
}
