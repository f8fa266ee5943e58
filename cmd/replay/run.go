package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
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
	load     loadOptions
	filter   filterOptions
	file     string
	keepHost bool
	noReuse  bool
	insecure bool
	timeout  time.Duration
	grace    time.Duration
	out      string
	quiet    bool
	cpuprof  string
	dryRun   int
	dumpFile string
	dumpMax  int
	hostMap  []string
	ca       string
	cert     string
	key      string
	sni      string
	maxConn  time.Duration
	follow   int
	timings  bool
	proxy    string
}

func (o *runOptions) addFlags(fs *pflag.FlagSet, vus int) {
	o.load.addFlags(fs, vus)
	o.filter.addFlags(fs)
	fs.BoolVar(&o.keepHost, "keep-host", false, "send the recorded Host header instead of the --target host")
	fs.BoolVar(&o.noReuse, "no-connection-reuse", false, "open a new connection for every request")
	fs.BoolVar(&o.insecure, "insecure", false, "skip TLS certificate verification")
	fs.DurationVar(&o.timeout, "timeout", vu.DefaultTimeout, "per-request timeout: connect, write and the whole answer")
	fs.DurationVar(&o.grace, "grace", vu.DefaultGrace, "after the stop, how long in-flight requests may finish")
	fs.StringVar(&o.out, "out", "", "write the summary JSON to `FILE`")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "do not print the text report")
	fs.IntVar(&o.dryRun, "dry-run", 0, "print the first `N` requests exactly as they would go on the wire, and send nothing")
	fs.StringVar(&o.dumpFile, "dump-failures", "", "write failed requests (request as sent, answer received) as JSON lines to `FILE`")
	fs.IntVar(&o.dumpMax, "dump-max", 5, "with --dump-failures: at most this many per endpoint and kind of failure")
	fs.StringArrayVar(&o.hostMap, "host-map", nil, "send a recorded host elsewhere: `HOST=URL` (repeatable), or @FILE of such lines; unmapped hosts go to --target")
	fs.StringVar(&o.ca, "ca", "", "trust the certificate authorities in this PEM `FILE` (instead of the system's)")
	fs.StringVar(&o.cert, "cert", "", "client certificate, PEM `FILE` (with --key)")
	fs.StringVar(&o.key, "key", "", "client certificate key, PEM `FILE` (with --cert)")
	fs.StringVar(&o.sni, "server-name", "", "TLS server `NAME` to send (SNI) and verify, instead of the host dialed")
	fs.StringVar(&o.proxy, "proxy", "", "carry connections through an HTTP CONNECT proxy: `URL` http://[user:password@]host:port")
	fs.BoolVar(&o.timings, "timings", false, "measure the phases of each request: connecting, tls, sending, waiting (first byte), receiving")
	fs.IntVar(&o.follow, "follow-redirects", 0, "follow up to `N` redirects of each request (each hop counted as a request); 0: a 3xx is the answer, as recorded")
	fs.DurationVar(&o.maxConn, "max-conn-duration", 0, "close and reopen a VU's connection once it is this old, to spread load over the pods behind a Service")
	fs.StringVar(&o.cpuprof, "cpuprofile", "", "write a Go CPU profile of the run to `FILE` (for developers)")
	fs.MarkHidden("cpuprofile")
}

// config turns the flags into the VUs' configuration, validated.
func (o *runOptions) config(log zerolog.Logger) (vu.Config, error) {
	walk, err := o.load.walk()
	if err != nil {
		return vu.Config{}, err
	}
	cfg := vu.Config{
		VUs: o.load.vus, Walk: walk, Duration: o.load.duration, Iterations: o.load.iterations,
		Target: o.load.target, KeepHost: o.keepHost, NoConnectionReuse: o.noReuse,
		Timeout: o.timeout, Grace: o.grace, Insecure: o.insecure, Log: log,
		CA: o.ca, Cert: o.cert, Key: o.key, ServerName: o.sni, MaxConnDuration: o.maxConn, FollowRedirects: o.follow, Timings: o.timings, Proxy: o.proxy,
	}
	if err := o.load.model(&cfg); err != nil {
		return cfg, err
	}
	hostMap, err := parseHostMap(o.hostMap)
	if err != nil {
		return cfg, err
	}
	cfg.HostMap = hostMap
	if o.dryRun < 0 {
		return cfg, fmt.Errorf("--dry-run: want a number of requests ≥ 1, got %d", o.dryRun)
	}
	if o.timeout <= 0 {
		return cfg, fmt.Errorf("--timeout: want a positive duration, got %v", o.timeout)
	}
	return cfg, cfg.Validate()
}

func newRunCmd(io stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run -f FILE [flags]",
		Short: "Replay a traffic file against a target and report",
		Long: `Replay the RRPair JSON Lines in FILE ("-" for standard input). Every line is
validated before anything is sent. An iteration is a session (pairs sharing
tags.session, in order, each after the previous answer) or a pair alone.

Load models:
  closed (default)   --vus N: each VU runs iterations back to back.
  arrival rate       --rate R/s: iterations start on a clock whatever the SUT
                     does, each on a free VU; the pool grows from --vus up to
                     --max-vus, and an iteration with no VU free is dropped
                     and counted.
  recorded pacing    --pace recorded --speed X: each request is sent at its
                     recorded time (ts) divided by X, on one timeline; a
                     session's request still waits for the previous answer.
Under a rate or recorded pacing, latency runs from when a request was due
(no coordinated omission); service time, from its first byte written, is
reported beside it. A request begun more than --late-after past its due time
is late.

Stages (--stages): a comma-separated list, each item either
  DURATION:TARGET    ramp linearly from the previous target to TARGET (k6)
  TARGET@DURATION    step to TARGET and hold it (Knative's --pace 1000:60)
With --rate (or rate units such as 1000/s) the targets are rates; otherwise
they are VUs of the closed model. Without --duration the run lasts as long
as the stages.

File walks: without --duration or --iterations every iteration runs once
(--mode once); with them, the file is walked round and round (--mode loop).

The text report goes to standard output, logs to standard error, and --out
writes the summary JSON. SIGINT or SIGTERM stops issuing, lets in-flight
requests finish within --grace, writes the reports and exits 130 or 143.`,
		Example: `  replay run -f traffic.jsonl --target http://127.0.0.1:8080 --vus 50 --duration 1m
  replay run -f traffic.jsonl --target http://127.0.0.1:8080 --rate 2000/s --duration 5m --max-vus 500
  replay run -f traffic.jsonl --target http://127.0.0.1:8080 --rate 0/s --stages 30s:1000/s,2m:1000/s,30s:0/s
  replay run -f traffic.jsonl --target http://127.0.0.1:8080 --rate 1000/s --stages 1000@60s,1200@60s,1400@60s
  replay run -f traffic.jsonl --target http://127.0.0.1:8080 --stages 30s:100,1m:100,30s:0
  replay run -f last-hour.jsonl --target http://127.0.0.1:8080 --pace recorded --speed 10
  cat traffic.jsonl | replay run -f - --target https://staging.internal --insecure`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if o.file == "" {
				return fmt.Errorf("--file: required (a traffic file, or - for standard input)")
			}
			return execute(cmd.Context(), &o, func(opt rrpair.Options) (*rrpair.File, error) {
				return openTraffic(o.file, io, opt)
			}, io, log)
		},
	}
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "traffic `FILE` (RRPair JSON Lines; - for standard input)")
	o.addFlags(cmd.Flags(), 1)
	return cmd
}

// openTraffic opens path, or spools standard input for "-".
func openTraffic(path string, io stdio, opt rrpair.Options) (*rrpair.File, error) {
	if path == "-" {
		return rrpair.OpenReader(io.in, "<stdin>", opt)
	}
	return rrpair.Open(path, opt)
}

// execute is the one path of a replay: flags checked, file opened and
// validated, outputs opened — all before the first request — then the VUs
// run into the recorder, and the reports are written, also when a signal
// cut the run short.
func execute(ctx context.Context, o *runOptions, open func(rrpair.Options) (*rrpair.File, error), io stdio, log zerolog.Logger) error {
	cfg, err := o.config(log)
	if err != nil {
		return err
	}
	filter, err := o.filter.filter()
	if err != nil {
		return err
	}
	opening := time.Now()
	f, err := open(rrpair.Options{RequireHost: o.load.target == "", Filter: filter})
	if err != nil {
		return fmt.Errorf("%w\nnothing was sent", err)
	}
	defer f.Close()
	if o.dryRun > 0 {
		pool := &vu.Pool{File: f, Config: cfg}
		return pool.DryRun(io.out, o.dryRun)
	}
	var out *os.File
	if o.out != "" {
		if out, err = os.Create(o.out); err != nil {
			return fmt.Errorf("--out: %w (nothing was sent)", err)
		}
		defer out.Close()
	}
	var dump *report.FailureDump
	if o.dumpFile != "" {
		if o.dumpMax < 1 {
			return fmt.Errorf("--dump-max: want at least 1, got %d (nothing was sent)", o.dumpMax)
		}
		df, err := os.Create(o.dumpFile)
		if err != nil {
			return fmt.Errorf("--dump-failures: %w (nothing was sent)", err)
		}
		defer df.Close()
		dump = report.NewFailureDump(df, f.Endpoints(), o.dumpMax)
	}

	log.Info().Str("model", cfg.Model.String()).Str("file", f.Name()).Float64("opened_ms", float64(time.Since(opening).Microseconds())/1000).Int("pairs", f.Len()).Int("filtered_out", f.Filtered()).Int("iterations", f.Iterations()).
		Int("vus", cfg.VUs).Str("walk", cfg.Walk.String()).Dur("duration", cfg.Duration).
		Str("target", cfg.Target).Msg("replaying")
	if o.cpuprof != "" {
		stop, err := startCPUProfile(o.cpuprof)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer stop()
	}
	rec := report.NewRecorder(f.Endpoints())
	pool := &vu.Pool{File: f, Config: cfg, Sink: rec}
	if dump != nil {
		pool.Failures = dump
	}
	st, runErr := pool.Run(ctx)
	rec.Close()
	if runErr != nil && st.Started.IsZero() { // refused before the first request
		return fmt.Errorf("%w\nnothing was sent", runErr)
	}
	if st.Interrupted {
		log.Warn().Msg("stopped by signal: reports cover the requests sent so far")
	}
	if dump != nil {
		if err := dump.Err(); err != nil {
			log.Error().Err(err).Msg("failure dump incomplete")
		}
		log.Info().Int("failures", dump.Dumped()).Str("file", o.dumpFile).Msg("failures dumped")
	}
	sum := rec.Summary(report.Meta{
		Started: st.Started, Model: cfg.Model.String(), TargetRate: targetRate(&cfg, st), VUsMax: st.VUs,
		Iterations: st.Iterations, Dropped: st.Dropped, Late: st.Late, LateAfter: cfg.LateAfter,
		Scheduled: st.Scheduled, LagMean: st.LagMean, LagMax: st.LagMax, OutOfOrder: st.OutOfOrder,
	})

	if !o.quiet {
		if err := report.WriteText(io.out, sum); err != nil {
			return err
		}
	}
	if out != nil {
		if err := report.WriteJSON(out, sum); err != nil {
			return fmt.Errorf("--out %s: %w", o.out, err)
		}
		if err := out.Close(); err != nil {
			return fmt.Errorf("--out %s: %w", o.out, err)
		}
		log.Info().Str("file", o.out).Msg("summary written")
	}
	return runErr
}

// flagError is the error for a flag value that is not one of the allowed.
func flagError(flag, want, got string) error {
	return fmt.Errorf("%s: want %s, got %q", flag, want, got)
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// targetRate is the rate an arrival-rate run asked for: --rate, or with
// stages the iterations due per second of the schedule. Other models have
// none.
func targetRate(cfg *vu.Config, st vu.Stats) *float64 {
	if cfg.Model != vu.Rate {
		return nil
	}
	r := cfg.Rate
	if len(cfg.Stages) > 0 {
		span := vu.StagesDuration(cfg.Stages)
		if cfg.Duration > 0 {
			span = min(span, cfg.Duration)
		}
		r = float64(st.Scheduled) / span.Seconds()
	}
	return &r
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
