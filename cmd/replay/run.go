package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/metrics"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

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
	cfg, tr, err := o.config(log)
	if err != nil {
		return err
	}
	filter, err := o.filter.filter()
	if err != nil {
		return err
	}
	ts, err := o.report.parseThresholds()
	if err != nil {
		return err
	}
	switch o.compare {
	case "", "status", "body":
	default:
		return flagError("--compare", "status or body", o.compare)
	}
	if report.NeedsCompare(ts) && o.compare == "" {
		return fmt.Errorf("--threshold: match needs --compare status or --compare body")
	}
	if len(o.ignore) > 0 && o.compare != "body" {
		return fmt.Errorf("--compare-ignore: only with --compare body")
	}
	if len(o.cmpHdrs) > 0 && o.compare == "" {
		return fmt.Errorf("--compare-header: only with --compare status or body")
	}
	switch o.progress {
	case "auto", "bar", "log", "off":
	default:
		return flagError("--progress", "auto, bar, log or off", o.progress)
	}
	shard, err := o.shard.parse()
	if err != nil {
		return err
	}
	spec, err := o.transforms.spec()
	if err != nil {
		return fmt.Errorf("%w\nnothing was sent", err)
	}
	stamp, sinkList, err := o.sinks.parse()
	if err != nil {
		return fmt.Errorf("%w\nnothing was sent", err)
	}
	divide(&cfg, shard)
	opening := time.Now()
	f, err := open(rrpair.Options{RequireHost: o.load.target == "", Filter: filter, Shard: shard})
	if err != nil {
		return fmt.Errorf("%w\nnothing was sent", err)
	}
	defer f.Close()
	pool := &vu.Pool{File: f, Config: cfg, Transport: tr}
	var tracker *e2e.Tracker
	if stamp != nil {
		tracker = e2e.NewTracker(e2e.NewNonce(), cfg.MostVUs(), time.Now(), nil)
		stamp.To, stamp.Shard = tracker, shard.Index
	}
	chain, err := installTransforms(spec, f, &cfg, pool, stamp)
	if err != nil {
		return fmt.Errorf("%w\nnothing was sent", err)
	}
	if o.dryRun > 0 {
		return pool.DryRun(io.out, o.dryRun)
	}
	outs, err := o.report.open(f.Endpoints(), "--out")
	if err != nil {
		return fmt.Errorf("%w (nothing was sent)", err)
	}
	defer outs.close()
	outs.config = runSettings(f, &cfg, o)
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
		Str("target", o.load.target).Msg("replaying")
	if shard.Count > 1 {
		log.Info().Int("shard", shard.Index).Int("shards", shard.Count).Int("vus", cfg.VUs).Float64("rate", cfg.Rate).Msg("sharded")
	}
	if err := o.shard.waitStart(ctx, log); err != nil {
		return fmt.Errorf("%w\nnothing was sent", err)
	}
	if o.cpuprof != "" {
		stop, err := startCPUProfile(o.cpuprof)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer stop()
	}
	var sk *sinks
	if tracker != nil {
		if sk, err = startSinks(&o.sinks, sinkList, tracker, log); err != nil {
			return fmt.Errorf("%w\nnothing was sent", err)
		}
		defer sk.close()
	}
	if chain != nil {
		log.Info().Strs("transforms", chain.Names()).Msg("rewriting requests")
	}
	rec := report.NewRecorder(f.Endpoints())
	pool.Sink = rec
	if dump != nil {
		pool.Failures = dump
	}
	var comparer *report.Comparer
	if o.compare != "" {
		comparer = report.NewComparer(f.Endpoints(), o.compare == "body", o.ignore, o.cmpHdrs)
		pool.Observers = append(pool.Observers, comparer)
		pool.DecodeResponses = true
	}
	if o.metrics != "" {
		srv, err := metrics.Listen(o.metrics, metrics.Sources{Recorder: rec, VUs: pool.Live})
		if err != nil {
			rec.Close()
			return fmt.Errorf("--metrics: %w (nothing was sent)", err)
		}
		log.Info().Str("addr", srv.Addr()).Msg("serving metrics at /metrics")
		defer func() {
			if o.linger > 0 {
				time.Sleep(o.linger)
			}
			srv.Close()
		}()
	}
	runCtx := ctx
	if o.abort {
		var stopWatch func()
		runCtx, stopWatch = watchThresholds(ctx, ts, rec, pool, log)
		defer stopWatch()
	}
	stopProgress := func() {}
	if o.progress != "off" {
		tty := o.progress == "bar" || (o.progress == "auto" && isTerminal(io.err))
		every := o.every
		if every <= 0 {
			every = map[bool]time.Duration{true: time.Second, false: 5 * time.Second}[tty]
		}
		total := cfg.Duration
		if total == 0 && len(cfg.Stages) > 0 {
			total = vu.StagesDuration(cfg.Stages)
		}
		stopProgress = startProgress(ctx, tty, io.err, every, total, progressSources{live: rec.Live, vus: pool.Live}, log)
	}
	st, runErr := pool.Run(runCtx)
	stopProgress()
	rec.Close()
	if runErr != nil && st.Started.IsZero() { // refused before the first request
		return fmt.Errorf("%w\nnothing was sent", runErr)
	}
	switch {
	case errors.Is(context.Cause(runCtx), errAborted):
		log.Warn().Msg("aborted by --abort-on-fail: reports cover the requests sent so far")
	case st.Interrupted:
		log.Warn().Msg("stopped by signal: reports cover the requests sent so far")
	}
	if dump != nil {
		if err := dump.Err(); err != nil {
			log.Error().Err(err).Msg("failure dump incomplete")
		}
		log.Info().Int("failures", dump.Dumped()).Str("file", o.dumpFile).Msg("failures dumped")
	}
	sum := rec.Summary(report.Meta{Run: st, Model: cfg.Model.String(), TargetRate: targetRate(&cfg, st), LateAfter: cfg.LateAfter})
	if comparer != nil {
		sum.Compare = comparer.Result()
	}
	sum.Transforms = transformCounts(chain)
	if tracker != nil {
		sum.E2E = drainEvents(ctx, &o.sinks, tracker, sk, log)
	}
	if err := outs.write(io.out, nil, sum); err != nil {
		if runErr != nil {
			return runErr
		}
		return err
	}
	return runErr
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
func targetRate(cfg *vu.Config, st result.Counters) *float64 {
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

// runSettings is the run's configuration for the HTML report.
func runSettings(f *rrpair.File, cfg *vu.Config, o *runOptions) []report.Setting {
	set := []report.Setting{
		{Name: "file", Value: fmt.Sprintf("%s (%d pairs, %d iterations, %d filtered out)", f.Name(), f.Len(), f.Iterations(), f.Filtered())},
		{Name: "target", Value: o.load.target},
		{Name: "model", Value: cfg.Model.String()},
		{Name: "walk", Value: cfg.Walk.String()},
		{Name: "VUs", Value: fmt.Sprintf("%d (max %d)", cfg.VUs, cfg.MaxVUs)},
		{Name: "duration", Value: cfg.Duration.String()},
		{Name: "timeout · grace", Value: o.timeout.String() + " · " + cfg.Grace.String()},
	}
	if cfg.Model == vu.Rate {
		set = append(set, report.Setting{Name: "rate", Value: fmt.Sprintf("%.2f/s, stages %q", cfg.Rate, o.load.stages)})
	}
	if cfg.Model == vu.Recorded {
		set = append(set, report.Setting{Name: "speed", Value: fmt.Sprint(cfg.Speed)})
	}
	if sh := f.Shard(); sh.Count > 1 {
		set = append(set, report.Setting{Name: "shard", Value: fmt.Sprintf("%d/%d", sh.Index, sh.Count)})
	}
	return set
}

// errAborted is the cause of a run stopped by --abort-on-fail.
var errAborted = errors.New("a threshold can no longer pass")

// watchThresholds cancels the returned context once a threshold can no
// longer pass (checked every 100ms); the run then stops and writes its
// reports, and the failed threshold exits 99.
func watchThresholds(ctx context.Context, ts []report.Threshold, rec *report.Recorder, pool *vu.Pool, log zerolog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				failed := rec.Live().Failed
				for _, th := range ts {
					if th.Hopeless(failed, pool.Dropped(), pool.Late()) {
						log.Warn().Str("threshold", th.Text).Msg("--abort-on-fail: the threshold can no longer pass; stopping")
						cancel(errAborted)
						return
					}
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}
