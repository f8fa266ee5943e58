package main

import (
	"bytes"
	"fmt"
	"time"

	replay "github.com/replay-dev/replay"
	"github.com/replay-dev/replay/pkg/demo"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newDemoCmd(io stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	var o runOptions
	var serve string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Replay built-in traffic against a built-in demo SUT on loopback",
		Long: `Start the built-in demo system under test (an event-ingest API: POST /events
answers 202, a few GET endpoints, a small random service time) on a loopback
port, replay the recorded traffic that travels inside the binary against it,
and print the report. Works from any directory; nothing leaves loopback.

With --serve ADDR, only run the demo SUT on ADDR (a loopback address) until
interrupted, to aim replay run or another tool at it.`,
		Example: `  replay demo
  replay demo --vus 50 --duration 10s --out demo.json
  replay demo --serve 127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if serve != "" {
				srv, err := demo.Start(serve)
				if err != nil {
					return fmt.Errorf("--serve: %w", err)
				}
				log.Info().Str("url", srv.URL()).Msg("demo SUT listening; stop with Ctrl-C")
				<-cmd.Context().Done()
				return srv.Close()
			}
			if o.load.target != "" {
				return fmt.Errorf("--target: the demo replays against its own SUT; use replay run to aim elsewhere")
			}
			srv, err := demo.Start("127.0.0.1:0")
			if err != nil {
				return err
			}
			defer srv.Close()
			o.load.target = srv.URL()
			log.Info().Str("url", srv.URL()).Msg("demo SUT started")
			return execute(cmd.Context(), &o, func(opt rrpair.Options) (*rrpair.File, error) {
				return rrpair.OpenReader(bytes.NewReader(replay.DemoTraffic), "demo.jsonl", opt)
			}, io, log)
		},
	}
	o.addFlags(cmd.Flags(), 20)
	cmd.Flags().Lookup("duration").DefValue = "5s"
	o.load.duration = 5 * time.Second
	cmd.Flags().StringVar(&serve, "serve", "", "only serve the demo SUT on `ADDR` (loopback) until interrupted")
	return cmd
}
