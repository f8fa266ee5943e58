// Package demorun aims a run at the built-in demo (replay demo): it starts
// the demo SUT on loopback and points the run's options at it, with the
// traffic that travels inside the binary, the demo's transforms (unless
// the user asks for the recorded traffic as it is, or for transforms of
// their own), and an HTTP sink for the deliveries of the demo's worker, so
// that the report shows end-to-end latency beside the API's. Nothing it
// starts listens beyond loopback.
package demorun

import (
	"bytes"
	"errors"
	"net"
	"strings"

	replay "github.com/replay-dev/replay"
	"github.com/replay-dev/replay/internal/run"
	"github.com/replay-dev/replay/pkg/demo"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/rs/zerolog"
)

// Options are the demo's own flags, beside those of a run.
type Options struct {
	// Raw replays the traffic as recorded, without the demo's transforms.
	Raw bool
	// NoSink follows no event to the demo's worker.
	NoSink bool
	// WorkerRate is the events a second the demo's worker processes.
	WorkerRate float64
}

// Start checks d against the run's options o, starts the demo SUT on a
// loopback port and aims o at it. Close the server after the run.
func Start(o *run.Options, d Options, log zerolog.Logger) (*demo.Server, error) {
	if o.Load.Target != "" {
		return nil, errors.New("--target: the demo replays against its own SUT; use replay run to aim elsewhere")
	}
	if d.Raw && o.Transforms.File != "" {
		return nil, errors.New("--raw and --transforms: --raw replays the traffic as recorded, --transforms rewrites it; give one or the other")
	}
	opts, err := sink(&o.Events, d)
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
	case d.Raw:
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

// sink has the demo's worker deliver processed events to the run's HTTP
// sink (one on a free loopback port, unless NoSink or the user's own).
func sink(o *run.Events, d Options) (demo.Options, error) {
	opts := demo.Options{WorkerRate: d.WorkerRate}
	if o.HTTP == "" && !d.NoSink {
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
