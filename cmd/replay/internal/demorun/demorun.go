// Package demorun is replay demo's wiring. Start aims a run at the
// built-in demo: it starts the demo SUT on loopback and points the run's
// options at it, with the traffic that travels inside the binary, the
// demo's transforms (unless the user asks for the recorded traffic as it
// is, or for transforms of their own), and an HTTP sink for the
// deliveries of the demo's worker, so that the report shows end-to-end
// latency beside the API's. To take the demo apart, WriteTraffic writes
// its traffic and transforms as files and StartSUT runs the SUT alone,
// its worker delivering to a sink given. Nothing it starts listens or
// delivers beyond loopback.
package demorun

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	replay "github.com/replay-dev/replay"
	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/demo"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/run"
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
	// WorkerDelay is the least time from an event queued to delivered.
	WorkerDelay time.Duration
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
	opts.Log = log
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
		log.Info().Msg("replaying with the demo's transforms (timestamps shifted, JWT re-signed, order and event ids correlated); --raw to go without")
	}
	if o.Compare.Mode == "body" {
		o.Compare.Ignore = append(o.Compare.Ignore, demo.CompareIgnore...)
		log.Info().Strs("ignored", demo.CompareIgnore).Msg("--compare body: ignoring by name the fields the demo SUT adds to the recorded answers")
	}
	o.Open = func(opt rrpair.Options) (*rrpair.File, error) {
		return rrpair.OpenReader(bytes.NewReader(replay.DemoTraffic), "demo.jsonl", opt)
	}
	return srv, nil
}

// sink has the demo's worker deliver processed events to the run's HTTP
// sink (one on a free loopback port, unless NoSink or the user's own).
func sink(o *run.Events, d Options) (demo.Options, error) {
	opts := demo.Options{WorkerRate: d.WorkerRate, WorkerDelay: d.WorkerDelay}
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

// Traffic files written by WriteTraffic, under the directory given.
const (
	TrafficFile    = "demo.jsonl"
	TransformsFile = "demo-transforms.yaml"
)

// WriteTraffic writes the demo's traffic and transforms into dir (made if
// missing), each whole or not at all, so that every workflow of the docs
// can be tried by hand against the demo SUT (ServeSUT). It returns the
// paths written.
func WriteTraffic(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--write-traffic: %w", err)
	}
	var paths []string
	for _, f := range []struct {
		name string
		data []byte
	}{{TrafficFile, replay.DemoTraffic}, {TransformsFile, replay.DemoTransforms}} {
		path := filepath.Join(dir, f.name)
		out, err := outfile.Create(path)
		if err != nil {
			return nil, fmt.Errorf("--write-traffic: %w", err)
		}
		if _, err := out.Write(f.data); err != nil {
			out.Abort()
			return nil, fmt.Errorf("--write-traffic: %w", err)
		}
		if err := out.Commit(); err != nil {
			return nil, fmt.Errorf("--write-traffic: %w", err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// ServeOptions are the demo SUT's alone (replay demo --serve).
type ServeOptions struct {
	// Addr is where the SUT listens: a loopback address.
	Addr string
	// DeliverTo, when set, has the SUT's worker deliver the events it
	// processed to DeliverTo/stage/processed: a loopback replay sink
	// (replay sink --sink-http) or a run's --sink-http. "": no worker.
	DeliverTo string
	// WorkerRate is the events a second the worker processes.
	WorkerRate float64
	// WorkerDelay is the least time from an event queued to delivered.
	WorkerDelay time.Duration
}

// StartSUT checks o and starts the demo SUT alone, its server's messages
// going to log. Nothing it starts listens or delivers beyond loopback.
func StartSUT(o ServeOptions, log zerolog.Logger) (*demo.Server, error) {
	if err := loopback("--serve", o.Addr); err != nil {
		return nil, err
	}
	if o.DeliverTo != "" {
		u, err := url.Parse(o.DeliverTo)
		if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("--deliver-to: want http://HOST:PORT of a loopback sink (replay sink --sink-http, or a run's --sink-http), got %q", o.DeliverTo)
		}
		if err := loopback("--deliver-to", u.Host); err != nil {
			return nil, err
		}
		o.DeliverTo = strings.TrimSuffix(o.DeliverTo, "/")
	}
	srv, err := demo.StartWith(o.Addr, demo.Options{SinkURL: o.DeliverTo, WorkerRate: o.WorkerRate, WorkerDelay: o.WorkerDelay, Log: log})
	if err != nil {
		return nil, fmt.Errorf("--serve: %w", err)
	}
	return srv, nil
}

// loopback refuses an address (host:port) that is not on loopback: the
// demo contacts nothing beyond it.
func loopback(flag, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: want HOST:PORT on loopback (127.0.0.1:8080), got %q", flag, addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: the demo stays on loopback: want 127.0.0.1, ::1 or localhost, got %q", flag, host)
	}
	return nil
}

// AloneFlags are the flags replay demo takes with --serve or
// --write-traffic; the others are a run's.
var AloneFlags = []string{"serve", "deliver-to", "worker-rate", "worker-delay", "write-traffic", "log-level", "log-format"}

// CheckAlone refuses, with --serve or --write-traffic (mode, the flag
// given), any of the flags given that only a run uses: the run flags
// would otherwise be dropped without a word.
func CheckAlone(mode string, given []string) error {
	var unused []string
	for _, name := range given {
		if !slices.Contains(AloneFlags, name) {
			unused = append(unused, "--"+name)
		}
	}
	if len(unused) > 0 {
		return fmt.Errorf("%s: runs no replay, so %s would do nothing; leave them out (replay demo without %s replays)", mode, strings.Join(unused, ", "), mode)
	}
	return nil
}
