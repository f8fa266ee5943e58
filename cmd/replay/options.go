package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/replay-dev/replay/internal/transport/http1"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// loadOptions are the load flags, shared by every command that describes a
// load (run, demo, and later export k6).
type loadOptions struct {
	target     string
	vus        int
	maxVUs     int
	duration   time.Duration
	iterations int64
	mode       string
	rate       string
	stages     string
	pace       string
	speed      float64
	think      string
	lateAfter  time.Duration
}

func (o *loadOptions) addFlags(fs *pflag.FlagSet, vus int) {
	fs.StringVar(&o.target, "target", "", "send every request to `URL` (scheme://host[:port]) instead of its recorded host")
	fs.IntVar(&o.vus, "vus", vus, "virtual users, each on its own connection: the closed model's users, an open model's starting pool")
	fs.IntVar(&o.maxVUs, "max-vus", 0, "with --rate or --pace recorded: the pool may grow to this many VUs; beyond, due iterations are dropped (default max(--vus, 1000))")
	fs.DurationVar(&o.duration, "duration", 0, "issue for this long, walking the file round and round (implies --mode loop, as --iterations and --stages do)")
	fs.Int64Var(&o.iterations, "iterations", 0, "stop after this many iterations in total (implies --mode loop)")
	fs.StringVar(&o.mode, "mode", "", "file walk: once (every iteration once, the default without --duration) or loop")
	fs.StringVar(&o.rate, "rate", "", "arrival rate: start iterations at `R`/s (or R/m) on a clock, whatever the SUT does")
	fs.StringVar(&o.stages, "stages", "", "ramp the --rate, or the --vus without --rate: `LIST` of DURATION:TARGET (ramp) and TARGET@DURATION (hold)")
	fs.StringVar(&o.pace, "pace", "", "recorded: send each request at its recorded time (ts) / --speed, on one timeline")
	fs.Float64Var(&o.speed, "speed", 1, "with --pace recorded or --think recorded: divide recorded times by this factor")
	fs.StringVar(&o.think, "think", "", "recorded: in the closed model, wait a session's recorded gaps between requests")
	fs.DurationVar(&o.lateAfter, "late-after", vu.DefaultLateAfter, "count a request begun more than this after it was due as late")
}

// model resolves the load model and its parameters from the flags.
func (o *loadOptions) model(cfg *vu.Config) error {
	switch o.pace {
	case "", "closed":
	case "recorded":
		cfg.Model = vu.Recorded
	default:
		return flagError("--pace", "recorded", o.pace)
	}
	switch o.think {
	case "", "none":
	case "recorded":
		cfg.Think = true
	default:
		return flagError("--think", "recorded or none", o.think)
	}
	if o.rate != "" || rateStages(o.stages) {
		if cfg.Model == vu.Recorded {
			return fmt.Errorf("--rate: choose an arrival rate or --pace recorded, not both")
		}
		cfg.Model = vu.Rate
		if o.rate != "" {
			r, err := vu.ParseRate(o.rate)
			if err != nil {
				return fmt.Errorf("--rate: %w", err)
			}
			cfg.Rate = r
		}
	}
	if o.stages != "" {
		st, err := vu.ParseStages(o.stages, cfg.Model == vu.Rate)
		if err != nil {
			return fmt.Errorf("--stages: %w", err)
		}
		cfg.Stages = st
	}
	if o.speed <= 0 {
		return fmt.Errorf("--speed: want a positive factor such as 2, got %v", o.speed)
	}
	cfg.Speed, cfg.MaxVUs, cfg.LateAfter = o.speed, o.maxVUs, o.lateAfter
	return nil
}

// rateStages reports whether a stage list speaks of rates (a "/" unit).
func rateStages(stages string) bool {
	return strings.Contains(stages, "/")
}

// walk resolves --mode: explicit, else loop when a duration, an iteration
// count or stages say how long to run, else once.
func (o *loadOptions) walk() (vu.Walk, error) {
	if o.mode != "" {
		w, err := vu.ParseWalk(o.mode)
		if err != nil {
			return w, fmt.Errorf("--mode: %w", err)
		}
		return w, nil
	}
	if o.duration > 0 || o.iterations > 0 || o.stages != "" {
		return vu.Loop, nil
	}
	return vu.Once, nil
}

// runOptions are the flags of `replay run`.
type runOptions struct {
	load       loadOptions
	transforms transformOptions
	sinks      sinkOptions
	filter     filterOptions
	shard      shardOptions
	file       string
	keepHost   bool
	noReuse    bool
	insecure   bool
	timeout    time.Duration
	grace      time.Duration
	report     reportOptions
	cpuprof    string
	dryRun     int
	dumpFile   string
	dumpMax    int
	hostMap    []string
	ca         string
	cert       string
	key        string
	sni        string
	maxConn    time.Duration
	follow     int
	timings    bool
	proxy      string
	metrics    string
	linger     time.Duration
	compare    string
	ignore     []string
	cmpHdrs    []string
	progress   string
	every      time.Duration
	abort      bool
}

func (o *runOptions) addFlags(fs *pflag.FlagSet, vus int) {
	o.load.addFlags(fs, vus)
	o.transforms.addFlags(fs)
	o.sinks.addFlags(fs)
	o.filter.addFlags(fs)
	o.shard.addFlags(fs)
	fs.BoolVar(&o.keepHost, "keep-host", false, "send the recorded Host header instead of the --target host")
	fs.BoolVar(&o.noReuse, "no-connection-reuse", false, "open a new connection for every request")
	fs.BoolVar(&o.insecure, "insecure", false, "skip TLS certificate verification")
	fs.DurationVar(&o.timeout, "timeout", http1.DefaultTimeout, "per-request timeout: connect, write and the whole answer")
	fs.DurationVar(&o.grace, "grace", vu.DefaultGrace, "after the stop, how long in-flight requests may finish")
	o.report.addFlags(fs, "out")
	fs.IntVar(&o.dryRun, "dry-run", 0, "print the first `N` requests exactly as they would go on the wire, and send nothing")
	fs.StringVar(&o.dumpFile, "dump-failures", "", "write failed requests (request as sent, answer received) as JSON lines to `FILE`")
	fs.IntVar(&o.dumpMax, "dump-max", 5, "with --dump-failures: at most this many per endpoint and kind of failure")
	fs.StringArrayVar(&o.hostMap, "host-map", nil, "send a recorded host elsewhere: `HOST=URL` (repeatable), or @FILE of such lines; unmapped hosts go to --target")
	fs.StringVar(&o.ca, "ca", "", "trust the certificate authorities in this PEM `FILE` (instead of the system's)")
	fs.StringVar(&o.cert, "cert", "", "client certificate, PEM `FILE` (with --key)")
	fs.StringVar(&o.key, "key", "", "client certificate key, PEM `FILE` (with --cert)")
	fs.StringVar(&o.sni, "server-name", "", "TLS server `NAME` to send (SNI) and verify, instead of the host dialed")
	fs.StringVar(&o.compare, "compare", "", "compare each answer with the recorded one: `status`, or body (status and body, JSON-aware)")
	fs.StringArrayVar(&o.cmpHdrs, "compare-header", nil, "with --compare: also compare this response header `NAME` with the recorded one (repeatable)")
	fs.StringArrayVar(&o.ignore, "compare-ignore", nil, "with --compare body: ignore this JSON `PATH` (id, data.created_at, items.*.ts; repeatable)")
	fs.BoolVar(&o.abort, "abort-on-fail", false, "stop the run (and write the reports) as soon as a threshold can no longer pass: errors<N, dropped<N, late<N")
	fs.StringVar(&o.progress, "progress", "auto", "live progress: auto (a bar on a terminal, log lines otherwise), bar, log or off")
	fs.DurationVar(&o.every, "progress-every", 0, "how often progress updates (default 1s for the bar, 5s for log lines)")
	fs.MarkHidden("progress-every")
	fs.StringVar(&o.metrics, "metrics", "", "serve live Prometheus metrics on `ADDR` (such as :9090) at /metrics during the run")
	fs.DurationVar(&o.linger, "metrics-linger", 0, "with --metrics: keep serving this long after the run, for a last scrape")
	fs.StringVar(&o.proxy, "proxy", "", "carry connections through an HTTP CONNECT proxy: `URL` http://[user:password@]host:port")
	fs.BoolVar(&o.timings, "timings", false, "measure the phases of each request: connecting, tls, sending, waiting (first byte), receiving")
	fs.IntVar(&o.follow, "follow-redirects", 0, "follow up to `N` redirects of each request (each hop counted as a request); 0: a 3xx is the answer, as recorded")
	fs.DurationVar(&o.maxConn, "max-conn-duration", 0, "close and reopen a VU's connection once it is this old, to spread load over the pods behind a Service")
	fs.StringVar(&o.cpuprof, "cpuprofile", "", "write a Go CPU profile of the run to `FILE` (for developers)")
	fs.MarkHidden("cpuprofile")
}

// config turns the flags into the VUs' configuration, validated and with
// its defaults, and the HTTP/1.1 transport.
func (o *runOptions) config(log zerolog.Logger) (vu.Config, *http1.Transport, error) {
	walk, err := o.load.walk()
	if err != nil {
		return vu.Config{}, nil, err
	}
	cfg := vu.Config{
		VUs: o.load.vus, Walk: walk, Duration: o.load.duration, Iterations: o.load.iterations,
		Grace: o.grace, Log: log, FollowRedirects: o.follow,
	}
	topt := http1.Options{
		Target: o.load.target, KeepHost: o.keepHost, NoConnectionReuse: o.noReuse,
		Timeout: o.timeout, Insecure: o.insecure,
		CA: o.ca, Cert: o.cert, Key: o.key, ServerName: o.sni, MaxConnDuration: o.maxConn, Timings: o.timings, Proxy: o.proxy,
	}
	if err := o.load.model(&cfg); err != nil {
		return cfg, nil, err
	}
	hostMap, err := parseHostMap(o.hostMap)
	if err != nil {
		return cfg, nil, err
	}
	topt.HostMap = hostMap
	if o.dryRun < 0 {
		return cfg, nil, fmt.Errorf("--dry-run: want a number of requests ≥ 1, got %d", o.dryRun)
	}
	if o.timeout <= 0 {
		return cfg, nil, fmt.Errorf("--timeout: want a positive duration, got %v", o.timeout)
	}
	if err := errors.Join(cfg.Validate(), topt.Validate()); err != nil {
		return cfg, nil, err
	}
	cfg.SetDefaults()
	tr, err := http1.New(topt)
	return cfg, tr, err
}

// flagError is the error for a flag value that is not one of the allowed.
func flagError(flag, want, got string) error {
	return fmt.Errorf("%s: want %s, got %q", flag, want, got)
}

// parseHostMap reads --host-map values: HOST=URL, or @FILE holding such
// lines (blank lines and # comments skipped).
func parseHostMap(values []string) (map[string]string, error) {
	m := map[string]string{}
	add := func(where, entry string) error {
		host, url, ok := strings.Cut(entry, "=")
		if !ok || host == "" || url == "" {
			return fmt.Errorf("--host-map %s: want HOST=URL such as api.prod:443=http://127.0.0.1:8080, got %q", where, entry)
		}
		m[host] = url
		return nil
	}
	for _, v := range values {
		if !strings.HasPrefix(v, "@") {
			if err := add("", v); err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(v[1:])
		if err != nil {
			return nil, fmt.Errorf("--host-map: %w", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if err := add(fmt.Sprintf("%s:%d", v[1:], i+1), line); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
