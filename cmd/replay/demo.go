package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	replay "github.com/replay-dev/replay"
	"github.com/replay-dev/replay/internal/run"
	"github.com/replay-dev/replay/pkg/demo"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newDemoCmd(io stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	f := newRunFlags()
	var d demoFlags
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
			srv, err := d.start(f, log)
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
	cmd.Flags().BoolVar(&d.raw, "raw", false, "replay without the demo's transforms, to see the recorded traffic fail")
	cmd.Flags().BoolVar(&d.noSink, "no-sink", false, "do not follow events to the demo's worker (no end-to-end section)")
	cmd.Flags().Float64Var(&d.workerRate, "worker-rate", demo.DefaultWorkerRate, "events a second the demo SUT's worker processes; above it, a backlog grows")
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

// demoFlags are the flags of replay demo beside those of run.
type demoFlags struct {
	raw, noSink bool
	workerRate  float64
}

// start checks the flags, starts the demo SUT on loopback and aims the
// run at it: the built-in traffic, the demo's transforms unless --raw or
// --transforms, and an HTTP sink for the worker's deliveries unless
// --no-sink.
func (d *demoFlags) start(f *runFlags, log zerolog.Logger) (*demo.Server, error) {
	o := &f.run
	if o.Load.Target != "" {
		return nil, fmt.Errorf("--target: the demo replays against its own SUT; use replay run to aim elsewhere")
	}
	if d.raw && o.Transforms.File != "" {
		return nil, fmt.Errorf("--raw and --transforms: --raw replays the traffic as recorded, --transforms rewrites it; give one or the other")
	}
	opts, err := d.sink(&o.Events)
	if err != nil {
		return nil, err
	}
	srv, err := demo.StartWith("127.0.0.1:0", opts)
	if err != nil {
		return nil, err
	}
	o.Load.Target = srv.URL()
	log.Info().Str("url", srv.URL()).Msg("demo SUT started")
	switch {
	case d.raw:
		log.Info().Msg("--raw: replaying the traffic as recorded; expect 401s: the recorded token expired (past it, stale events get 422 and unknown orders 404)")
	case o.Transforms.File == "":
		o.Transforms.Builtin, o.Transforms.BuiltinName = replay.DemoTransforms, "demo-transforms.yaml"
		log.Info().Msg("replaying with the demo's transforms (timestamps shifted, JWT re-signed, order ids correlated); --raw to go without")
	}
	o.Open = func(opt rrpair.Options) (*rrpair.File, error) {
		return rrpair.OpenReader(bytes.NewReader(replay.DemoTraffic), "demo.jsonl", opt)
	}
	return srv, nil
}

// sink has the demo's worker deliver processed events to replay's HTTP
// sink, so that the report shows end-to-end latency beside the API's.
func (d *demoFlags) sink(o *run.Events) (demo.Options, error) {
	opts := demo.Options{WorkerRate: d.workerRate}
	if o.HTTP == "" && !d.noSink {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return opts, err
		}
		o.HTTP = addr
	}
	if o.HTTP == "" {
		return opts, nil
	}
	opts.SinkURL = "http://" + o.HTTP
	if strings.HasPrefix(o.HTTP, ":") { // all interfaces: the worker uses loopback
		opts.SinkURL = "http://127.0.0.1" + o.HTTP
	}
	if len(o.Only) == 0 {
		o.Only = []string{"POST /events"} // what the worker processes
	}
	return opts, nil
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
