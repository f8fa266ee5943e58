package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/replay-dev/replay/cmd/replay/internal/progress"
	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/capacity"
	"github.com/replay-dev/replay/pkg/metrics"
	"github.com/replay-dev/replay/pkg/recording"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// findMaxFlags are the flags of replay find-max: the search's options,
// and what the command makes of the search: reports, progress, metrics.
type findMaxFlags struct {
	capacity.Options
	out, html string
	quiet     bool
	progress  progress.Mode
	metrics   string
	linger    time.Duration
}

// findMaxLoadFlags are the load flags find-max takes; the search sets the
// rate and the duration of every step.
var findMaxLoadFlags = []string{"target", "vus", "max-vus", "late-after", "precise-pacing"}

func newFindMaxCmd(std stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	f := &findMaxFlags{Options: capacity.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "find-max -f FILE --target URL --threshold EXPR [flags]",
		Short: "Search the highest arrival rate the SUT sustains within thresholds",
		Long: `Hold arrival rates against the SUT, from --start-rate up by --step-factor,
until a hold fails the thresholds (--threshold, as replay run takes them) or
achieves less than the target; then bisect between the last rate held and the
first that failed down to --precision, and confirm the best rate with a final
hold. Each step is a warm-up run (--warmup, not judged) then a hold run
(--hold, judged alone); connections are made again at the hold's start.
When holds contradict each other (the confirmation fails a rate that
passed: the SUT's capacity flaps), the search says "unstable" with both
holds and reports no rate: hold longer than the SUT's own period.
--budget counts each step at its longest (its runs, each with --grace or
--timeout, and --drain): no step starts that could end past it.

The result is the highest rate a hold sustained — never a rate not held —,
the step where the SUT broke and by which threshold, and the curve of
achieved rate against latency (text, --out JSON, --html chart). When the
generator cannot offer a rate (every --max-vus VU busy while the SUT answers
in time, local errors, or short of CPU: over 5% late, lag p99 over 50 ms, its
CPU at half its cores), it says "generator limit at R", not the SUT's capacity;
a hold that looks so, or failed late, is held again after a pause first.
Reaching --max-rate or --budget says "at least R".

Exit codes: 0 found (or at least R, or unstable), 99 when even the start
rate fails, 1 for errors. A search cannot be sharded: one process decides every step.`,
		Example: `  replay find-max -f traffic.jsonl --target http://127.0.0.1:8080 --threshold 'p99<200ms' --threshold 'errors<1%'
  replay find-max -f traffic.jsonl --target http://sut:8080 --start-rate 500/s --step-factor 1.5 --hold 1m --warmup 15s \
    --max-rate 20000/s --budget 45m --sut-cpus 4 --threshold 'p99<100ms' --out knee.json --html knee.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			markGiven(cmd.Flags(), &f.Run.Load)
			return findMax(cmd.Context(), f, std, log)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.Run.File, "file", "f", "", "traffic `FILE` (RRPair JSON Lines), replayed at every step")
	load := pflag.NewFlagSet("load", pflag.ContinueOnError)
	addLoadFlags(load, &f.Run.Load, 1)
	for _, name := range findMaxLoadFlags {
		fs.AddFlag(load.Lookup(name))
	}
	addTransformFlags(fs, &f.Run.Transforms)
	addEventFlags(fs, &f.Run.Events)
	addFilterFlags(fs, &f.Run.Filter)
	addShardFlags(fs, &f.Run.Shard) // only to refuse them, saying why
	for _, name := range []string{"shard", "shards", "start-at"} {
		fs.MarkHidden(name)
	}
	addHTTPFlags(fs, &f.Run.HTTP)
	fs.DurationVar(&f.Run.Grace, "grace", f.Run.Grace, "after each run's stop, how long in-flight requests may finish")
	fs.StringVar(&f.StartRate, "start-rate", f.StartRate, "the first `RATE` held: iterations a second (100/s, or /m), or requests (600req/s)")
	fs.Float64Var(&f.Search.StepFactor, "step-factor", f.Search.StepFactor, "each ramp step multiplies the rate by this `FACTOR` (such as 1.5 or 2)")
	fs.DurationVar(&f.Hold, "hold", f.Hold, "how long each rate is held and judged, after its warm-up")
	fs.DurationVar(&f.Warmup, "warmup", f.Warmup, "how long each rate runs before its hold, not judged (0: none)")
	fs.Float64Var(&f.Search.Precision, "precision", f.Search.Precision, "bisect until the rate that failed is within this `FRACTION` above the best rate held")
	fs.StringVar(&f.MaxRate, "max-rate", "", "never hold a `RATE` above this (in --start-rate's unit); reaching it reports \"at least\" it")
	fs.DurationVar(&f.Search.Budget, "budget", f.Search.Budget, "start no step that could end past this time from the start, counting each step at its longest (0: no budget); a search cut short reports \"at least\" its best rate")
	fs.Float64Var(&f.Tolerance, "tolerance", f.Tolerance, "a hold keeps up when it achieves at least (1 − `FRACTION`) of its target rate")
	fs.Float64Var(&f.SUTCPUs, "sut-cpus", 0, "the SUT's vCPUs: also report the sustainable rate per vCPU, in iterations and requests")
	fs.StringArrayVar(&f.Thresholds, "threshold", nil, "a hold passes only if `EXPR` holds, as replay run's: p99<200ms, errors<1%, e2e.p99<2s, 'POST /events: p95<50ms' (repeatable; at least one)")
	fs.StringVar(&f.out, "out", "", "write the search (steps, curve, result) as JSON to `FILE`")
	fs.StringVar(&f.html, "html", "", "write the search as one self-contained HTML `FILE`: the achieved rate against latency chart and the steps")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "do not print the text report")
	fs.StringVar(&f.progress.Name, "progress", "auto", "live progress of each run: auto (a bar on a terminal, log lines otherwise), bar, log or off")
	fs.StringVar(&f.metrics, "metrics", "", "serve live Prometheus metrics on `ADDR` at /metrics during the search (replay_step and replay_target_rate say where it is)")
	fs.DurationVar(&f.linger, "metrics-linger", 0, "with --metrics: keep serving this long after the search, for a last scrape")
	return cmd
}

// findMax runs the search the flags describe and writes its reports.
func findMax(ctx context.Context, f *findMaxFlags, std stdio, log zerolog.Logger) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("%w\nnothing was sent", err)
	}
	type out = outfile.Output[*capacity.Result]
	files, err := outfile.CreateSet(out{Flag: "--out", Path: f.out, Write: capacity.WriteJSON}, out{Flag: "--html", Path: f.html, Write: capacity.WriteHTML})
	if err != nil {
		return fmt.Errorf("%w\nnothing was sent", err)
	}
	defer files.Close()
	var srv *metrics.Server
	if f.metrics != "" {
		if srv, err = metrics.Listen(f.metrics, recording.LiveView{}); err != nil {
			return fmt.Errorf("--metrics: %w\nnothing was sent", err)
		}
		log.Info().Str("addr", srv.Addr()).Msg("serving metrics at /metrics")
		defer stopMetrics(srv, f.linger)
	}
	f.Log = log
	f.Live = func(sl capacity.StepLive) (func(), error) {
		if srv != nil {
			srv.Set(sl.View)
		}
		return f.stepProgress(ctx, std.err, sl, log), nil
	}
	f.Search.OnStep = func(st capacity.Step) { st.Log(log.Info()).Msg("step held") }
	log.Info().Str("file", f.Run.File).Str("target", f.Run.Load.Target).Strs("thresholds", f.Thresholds).Str("start_rate", f.StartRate).
		Dur("hold", f.Hold).Dur("warmup", f.Warmup).Msg("searching the highest sustainable rate")
	res, err := capacity.Find(ctx, f.Options)
	if res == nil {
		return err
	}
	if werr := writeSearch(files, std.out, f.quiet, res); werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		return err
	}
	switch res.Outcome {
	case capacity.StartFailed:
		return searchFailed{res.Headline()}
	case capacity.GeneratorLimited:
		return fmt.Errorf("%s (%s): lower --start-rate, or give the generator what it lacked (--max-vus, CPU, file descriptors)", res.Headline(), res.Steps[len(res.Steps)-1].Reason)
	}
	return nil
}

// check checks the command's own flags and the search's options, before
// any file is created.
func (f *findMaxFlags) check() error {
	if err := f.progress.Check(); err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return err
	}
	return outfile.CheckDistinct([]outfile.Named{outfile.In("--file", f.Run.File), outfile.In("--transforms", f.Run.Transforms.File), outfile.Out("--out", f.out), outfile.Out("--html", f.html)})
}

// writeSearch writes the text report and the files, and puts them in
// place.
func writeSearch(files *outfile.Set[*capacity.Result], text io.Writer, quiet bool, res *capacity.Result) error {
	if !quiet {
		if err := capacity.WriteText(text, res); err != nil {
			return err
		}
	}
	return files.Write(res)
}

// stepProgress shows one run of a step as --progress says.
func (f *findMaxFlags) stepProgress(ctx context.Context, w io.Writer, sl capacity.StepLive, log zerolog.Logger) (stop func()) {
	return f.progress.Show(ctx, w, isTerminal(w), sl.View.Planned, sl.View, log.With().Int("step", sl.Step).Str("part", sl.Part).Logger())
}

// searchFailed is the error of a search whose start rate already failed:
// it exits 99, as a failed threshold does.
type searchFailed struct{ msg string }

func (e searchFailed) Error() string { return e.msg }

func (searchFailed) ExitCode() int { return exitThreshold }
