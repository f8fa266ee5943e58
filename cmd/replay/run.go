package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/replay-dev/replay/cmd/replay/internal/progress"
	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/metrics"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/run"
	"github.com/replay-dev/replay/pkg/sniff"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newRunCmd(io stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	f := newRunFlags()
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
			markGiven(cmd.Flags(), &f.run.Load)
			f.run.Filter.SeedGiven = cmd.Flags().Changed("seed")
			if f.run.File == "" {
				return fmt.Errorf("--file: required (a traffic file, or - for standard input)")
			}
			return execute(cmd.Context(), f, io, log)
		},
	}
	cmd.Flags().StringVarP(&f.run.File, "file", "f", "", "traffic `FILE` (RRPair JSON Lines; - for standard input)")
	f.addFlags(cmd.Flags(), 1)
	return cmd
}

// execute runs the run the flags describe and writes its reports: the
// output files are created once the run is checked and before anything is
// sent, and written also when a signal or --abort-on-fail cut the run
// short.
func execute(ctx context.Context, f *runFlags, std stdio, log zerolog.Logger) error {
	if err := f.progress.Check(); err != nil {
		return err
	}
	if err := outfile.CheckDistinct(f.files()); err != nil {
		return fmt.Errorf("%w\nnothing was sent", err)
	}
	o := f.run
	o.Thresholds, o.Stdin, o.DryRunTo, o.Log = f.report.thresholds, std.in, std.out, log
	o.Shard.JobIndex = os.Getenv("JOB_COMPLETION_INDEX")
	var outs *outputs
	o.Ready = func(p run.Plan) error {
		var err error
		outs, err = f.report.open("--out")
		return err
	}
	var srv *metrics.Server
	o.Live = func(src run.LiveSources) (func(), error) {
		var err error
		if srv, err = serveMetrics(f.metrics, src, log); err != nil {
			return nil, err
		}
		return f.startProgress(ctx, std.err, src, log), nil
	}
	sum, err := run.Execute(ctx, o)
	defer stopMetrics(srv, f.linger) // after the reports: a last scrape sees what they say
	if outs != nil {
		defer outs.close()
	}
	if sum == nil {
		var le *rrpair.LineError
		var ve *rrpair.ValidationError
		if (errors.As(err, &le) || errors.As(err, &ve)) && o.File != "-" { // a HAR, a capture or a log given to run
			if hint := sniff.Hint(o.File, sniff.Head(o.File)); hint != "" {
				return errors.New(hint)
			}
		}
		return err
	}
	return writeReports(outs, std.out, sum, err)
}

// writeReports writes every report of a run that sent traffic, and
// returns what decides the exit code: the run's error, or the thresholds'
// verdict. A run cut short by a signal or --abort-on-fail is no error of
// its own: the signal's exit code comes from the context, the abort's
// from the failed threshold.
func writeReports(outs *outputs, w io.Writer, sum *report.Summary, runErr error) error {
	werr := outs.write(w, nil, sum)
	if errors.Is(runErr, run.ErrAborted) || errors.Is(runErr, run.ErrInterrupted) {
		return werr
	}
	if runErr != nil {
		return runErr
	}
	return werr
}

// serveMetrics serves the live counters at /metrics on addr, when given.
func serveMetrics(addr string, src run.LiveSources, log zerolog.Logger) (*metrics.Server, error) {
	if addr == "" {
		return nil, nil
	}
	srv, err := metrics.Listen(addr, metricSources(src, src.Target))
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	log.Info().Str("addr", srv.Addr()).Msg("serving metrics at /metrics")
	return srv, nil
}

// metricSources are the metrics of a run's live counters; target says the
// step and target rate.
func metricSources(src run.LiveSources, target func() (int, float64, bool)) metrics.Sources {
	return metrics.Sources{Recorder: src.Recorder, Buckets: src.Buckets, VUs: src.VUs, Dropped: src.Dropped, Late: src.Late,
		Target: target, PerIteration: src.PerIteration, Events: src.Events}
}

// stopMetrics closes the metrics server, after linger.
func stopMetrics(srv *metrics.Server, linger time.Duration) {
	if srv == nil {
		return
	}
	if linger > 0 {
		time.Sleep(linger)
	}
	srv.Close()
}

// startProgress shows the run while it goes, as --progress says.
func (f *runFlags) startProgress(ctx context.Context, w io.Writer, src run.LiveSources, log zerolog.Logger) (stop func()) {
	ps := progress.Sources{Live: src.Recorder.Live, VUs: src.VUs, Open: src.Model == "rate" || src.Model == "recorded", Dropped: src.Dropped, Target: src.Target,
		PerIteration: src.PerIteration}
	return f.progress.Show(ctx, w, isTerminal(w), src.Planned, ps, log)
}
