package main

import (
	"bytes"
	"fmt"
	"net"
	"strings"
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
	var raw, noSink bool
	var workerRate float64
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
			if raw && o.transforms.file != "" {
				return fmt.Errorf("--raw and --transforms: --raw replays the traffic as recorded, --transforms rewrites it; give one or the other")
			}
			// The demo's worker delivers processed events to replay's HTTP
			// sink, so the report shows end-to-end latency beside the API's.
			if o.sinks.http == "" && !noSink {
				addr, err := freeLoopbackAddr()
				if err != nil {
					return err
				}
				o.sinks.http = addr
			}
			opts := demo.Options{WorkerRate: workerRate}
			if o.sinks.http != "" {
				opts.SinkURL = "http://" + o.sinks.http
				if strings.HasPrefix(o.sinks.http, ":") { // all interfaces: the worker uses loopback
					opts.SinkURL = "http://127.0.0.1" + o.sinks.http
				}
				if len(o.sinks.only) == 0 {
					o.sinks.only = []string{"POST /events"} // what the worker processes
				}
			}
			srv, err := demo.StartWith("127.0.0.1:0", opts)
			if err != nil {
				return err
			}
			defer srv.Close()
			o.load.target = srv.URL()
			log.Info().Str("url", srv.URL()).Msg("demo SUT started")
			switch {
			case raw:
				log.Info().Msg("--raw: replaying the traffic as recorded; expect 401s: the recorded token expired (past it, stale events get 422 and unknown orders 404)")
			case o.transforms.file == "":
				o.transforms.builtin, o.transforms.builtinName = replay.DemoTransforms, "demo-transforms.yaml"
				log.Info().Msg("replaying with the demo's transforms (timestamps shifted, JWT re-signed, order ids correlated); --raw to go without")
			}
			return execute(cmd.Context(), &o, func(opt rrpair.Options) (*rrpair.File, error) {
				return rrpair.OpenReader(bytes.NewReader(replay.DemoTraffic), "demo.jsonl", opt)
			}, io, log)
		},
	}
	o.addFlags(cmd.Flags(), 20)
	cmd.Flags().Lookup("duration").DefValue = "5s"
	o.load.duration = 5 * time.Second
	cmd.Flags().StringVar(&serve, "serve", "", "only serve the demo SUT on `ADDR` (loopback) until interrupted")
	cmd.Flags().BoolVar(&raw, "raw", false, "replay without the demo's transforms, to see the recorded traffic fail")
	cmd.Flags().BoolVar(&noSink, "no-sink", false, "do not follow events to the demo's worker (no end-to-end section)")
	cmd.Flags().Float64Var(&workerRate, "worker-rate", demo.DefaultWorkerRate, "events a second the demo SUT's worker processes; above it, a backlog grows")
	return cmd
}

// freeLoopbackAddr finds a free loopback address ("127.0.0.1:PORT").
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
