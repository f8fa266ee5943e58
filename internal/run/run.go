// Package run builds and runs one whole replay from plain options, the
// engine behind replay run and replay demo. It owns the order of a run:
// every option checked before anything is sent (parse, then the files the
// options name, then the VUs' configuration), the shard's share of the
// load, the traffic file opened and validated, the transform chain, the
// VUs, the recorder, the comparer, the failure dump, the end-to-end
// tracker and its sinks, the threshold watcher of --abort-on-fail, the
// drain of events, and the summary. What becomes of the summary (reports,
// thresholds' verdict, exit codes), progress and metrics are the
// caller's: it is handed the run's plan and live counters through hooks.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/replay-dev/replay/pkg/transport/negotiate"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// ErrAborted is the cause of a run stopped by Options.AbortOnFail: a
// threshold could no longer pass. The error Execute returns wraps it and
// names the threshold.
var ErrAborted = errors.New("aborted: a threshold can no longer pass")

// ErrInterrupted is the cause of a run cut short by its context. The
// error Execute returns wraps it and the context's cause (a signal).
var ErrInterrupted = errors.New("interrupted")

// Execute checks o, builds the run and runs it: the VUs replay the file
// into the recorder until the file, the duration or the iteration limit
// is done, or ctx is cancelled; then the events still on their way are
// drained, and the summary returned. It returns after every goroutine it
// started has exited.
//
// A nil summary means that nothing was sent: a bad option or input (the
// error names the flag, or the file and line), a hook's error, or a dry
// run. A run cut short still returns its full summary, with an error
// saying why: ErrAborted, or ErrInterrupted with ctx's cause; an error of
// the VUs after traffic began comes with the summary too.
func Execute(ctx context.Context, o Options) (*report.Summary, error) {
	r, err := prepare(ctx, &o)
	if err != nil {
		return nil, nothingSent(err)
	}
	defer r.close()
	if o.DryRun > 0 {
		return nil, r.pool.DryRun(o.DryRunTo, o.DryRun)
	}
	runCtx, err := r.start(ctx)
	if err != nil {
		return nil, nothingSent(err)
	}
	return r.run(ctx, runCtx)
}

// nothingSent says of an error before the first request that nothing was
// sent.
func nothingSent(err error) error {
	return fmt.Errorf("%w\nnothing was sent", err)
}

// runner is one run, built. Its methods are called from one goroutine, in
// order: prepare, start, run, close.
type runner struct {
	o        *Options
	p        *parsed
	file     *rrpair.File
	opened   time.Duration // how long opening the file took
	pool     *vu.Pool
	chain    *transform.Chain // nil without transforms
	track    *tracking        // nil unless requests are stamped
	comparer *report.Comparer // nil without Compare
	rec      *report.Recorder
	dump     *report.FailureDump // nil without DumpFailures
	dumpFile *outfile.File       // the dump's file, until put in place
	guard    *faultGuard         // the transport, guarded against a truncated file
	runVUs   int                 // the most VUs of the whole run, before the shard's share

	stopWatch func() // the threshold watcher's, or nil
	stopLive  func() // Options.Live's, or nil
	undo      []func()
}

// prepare checks the options, reads the files they name, configures the
// VUs, divides the load for the shard, opens the traffic and builds what
// works on it. Nothing is started.
func prepare(ctx context.Context, o *Options) (*runner, error) {
	p, err := parse(o)
	if err != nil {
		return nil, err
	}
	if err := p.loadFiles(o); err != nil {
		return nil, err
	}
	cfg, topt, err := configure(o, p)
	if err != nil {
		return nil, err
	}
	runVUs := cfg.MostVUs() // before the shard's share: fresh values number every VU of the run
	divide(&cfg, p.shard)
	if err := report.CheckSteps(p.thresholds, len(stepEnds(&cfg))); err != nil {
		return nil, fmt.Errorf("--threshold: %w", err)
	}
	if o.DryRun == 0 { // a dry run opens no connection
		if err := checkOpenFiles(&cfg, o.Load.MaxVUs, vu.OpenFileLimit, o.Log); err != nil {
			return nil, err
		}
	}
	opening := time.Now()
	f, err := openTraffic(ctx, o, p)
	if err != nil {
		return nil, err
	}
	r := &runner{o: o, p: p, file: f, opened: time.Since(opening), pool: &vu.Pool{File: f, Config: cfg}, runVUs: runVUs}
	r.onClose(func() { f.Close() })
	if err := r.build(); err != nil {
		r.close()
		return nil, err
	}
	// When nothing reads the answers' bodies they are dropped as they
	// arrive, so that memory is bounded by the VUs, not by the answers.
	topt.Answer.DiscardBodies = !r.readsBodies()
	tr, err := negotiate.New(topt)
	if err != nil {
		r.close()
		return nil, err
	}
	r.guard = &faultGuard{Transport: tr, file: f}
	r.pool.Transport = r.guard
	return r, nil
}

// readsBodies says whether anything reads the answers' bodies: the
// comparer of --compare body, a transform that learns from answers
// (correlate, cookies), the failure dump.
func (r *runner) readsBodies() bool {
	return r.o.Compare.Mode == "body" || (r.chain != nil && r.chain.Learns()) || r.o.DumpFailures != ""
}

// openTraffic opens the traffic of o; ctx stops the spooling of
// standard input.
func openTraffic(ctx context.Context, o *Options, p *parsed) (*rrpair.File, error) {
	opt := rrpair.Options{RequireHost: o.Load.Target == "", Filter: p.filter, Shard: p.shard}
	if o.Open != nil {
		return o.Open(opt)
	}
	if o.File == "" {
		return nil, errors.New("--file: required (a traffic file, or - for standard input)")
	}
	return OpenFileContext(ctx, o.File, o.Stdin, opt)
}

// OpenFile opens traffic as a run does: the file at path, or for "-"
// stdin, spooled to a temporary file so that it can be mapped.
func OpenFile(path string, stdin io.Reader, opt rrpair.Options) (*rrpair.File, error) {
	return OpenFileContext(context.Background(), path, stdin, opt)
}

// OpenFileContext is OpenFile, whose spooling of stdin stops at once when
// ctx is done.
func OpenFileContext(ctx context.Context, path string, stdin io.Reader, opt rrpair.Options) (*rrpair.File, error) {
	if path != "-" {
		return rrpair.Open(path, opt)
	}
	if stdin == nil {
		return nil, errors.New("--file -: no standard input to read")
	}
	return rrpair.OpenReaderContext(ctx, stdin, "<stdin>", opt)
}

// build makes what works on the file: the thresholds' endpoints checked,
// the end-to-end tracker, the transform chain and the comparer.
func (r *runner) build() error {
	if err := report.CheckEndpoints(r.p.thresholds, r.file.Endpoints()); err != nil {
		return fmt.Errorf("--threshold: %w", err)
	}
	r.track = newTracking(r.p.stamp, r.p.sinks, r.p.shard.Index, r.pool.Config.MostVUs())
	sh := r.p.shard
	topt := transform.Options{Stamp: r.p.stamp, Shard: sh.Index, Shards: max(sh.Count, 1), RunVUs: r.runVUs}
	if r.p.spec.NeedsSeed() {
		var err error
		if topt.Seed, err = freshSeed(&r.o.Filter, sh, r.p.startAt); err != nil {
			return err
		}
	}
	chain, err := installTransforms(r.p.spec, r.file, r.pool, topt)
	if err != nil {
		return err
	}
	r.chain = chain
	if c := r.o.Compare; c.Mode != "" {
		r.comparer = report.NewComparer(r.file.Endpoints(), c.Mode == "body", c.Ignore, c.Headers)
		r.pool.Observers = append(r.pool.Observers, r.comparer)
		r.pool.DecodeResponses = true
	}
	return nil
}

// start tells the caller the plan, opens the failure dump, waits for the
// start time, and starts the profile, the sinks, the recorder, the
// threshold watcher and the caller's live view. It returns the context
// of the VUs: ctx, also cancelled by the watcher.
func (r *runner) start(ctx context.Context) (context.Context, error) {
	if r.o.Ready != nil {
		plan := Plan{Endpoints: r.file.Endpoints(), Settings: settings(r.file, &r.pool.Config, r.o), Empty: r.empty()}
		if err := r.o.Ready(plan); err != nil {
			return nil, err
		}
	}
	if err := r.openDump(); err != nil {
		return nil, err
	}
	r.logStart()
	if err := waitStart(ctx, r.p.startAt, r.o.Log); err != nil {
		return nil, err
	}
	if err := r.startProfile(); err != nil {
		return nil, err
	}
	if r.track != nil {
		r.onClose(r.track.close)
		if err := r.track.start(r.o.Log); err != nil {
			return nil, err
		}
	}
	if r.chain != nil {
		r.o.Log.Info().Strs("transforms", r.chain.Names()).Msg("rewriting requests")
	}
	r.rec = report.NewRecorder(r.file.Endpoints())
	r.startSteps()
	r.pool.Sink = r.rec
	r.onClose(r.rec.Close)
	return r.startLive(ctx)
}

// openDump creates the failure dump's file through outfile: written
// beside it and put in place once the VUs have stopped (commitDump), so
// that a run refused or crashed before leaves the previous dump as it
// was; anything else (/dev/stderr) is written directly.
func (r *runner) openDump() error {
	if r.o.DumpFailures == "" {
		return nil
	}
	f, err := outfile.Create(r.o.DumpFailures)
	if err != nil {
		return fmt.Errorf("--dump-failures: %w", err)
	}
	r.dumpFile = f
	r.onClose(f.Abort) // after commitDump, it does nothing
	r.dump = report.NewFailureDump(f, r.file.Endpoints(), r.o.DumpMax)
	r.pool.Failures = r.dump
	return nil
}

// commitDump puts the failure dump in place, once the VUs have stopped.
func (r *runner) commitDump() error {
	return r.dumpFile.Commit()
}

// logStart says what is about to run.
func (r *runner) logStart() {
	f, cfg, log := r.file, &r.pool.Config, r.o.Log
	log.Info().Str("model", cfg.Model.String()).Str("file", f.Name()).Float64("opened_ms", float64(r.opened.Microseconds())/1000).
		Int("pairs", f.Len()).Int("filtered_out", f.Filtered()).Int("iterations", f.Iterations()).
		Int("vus", cfg.VUs).Str("walk", cfg.Walk.String()).Dur("duration", cfg.Duration).
		Str("target", r.o.Load.Target).Msg("replaying")
	if sh := r.p.shard; sh.Count > 1 {
		log.Info().Int("shard", sh.Index).Int("shards", sh.Count).Int("vus", cfg.VUs).Float64("rate", cfg.Rate).Msg("sharded")
	}
	logSkipped(log, f)
}

// logSkipped says, in one line, which valid lines of the file are not
// replayed and how many of each kind: {"skipped":29,"protocol":{"postgres":12},
// "response_only":3,"direction_out":7}.
func logSkipped(log zerolog.Logger, f *rrpair.File) {
	sk := f.Skipped()
	n := sk.Total()
	if n == 0 {
		return
	}
	e := log.Info().Int("skipped", n)
	if len(sk.Protocol) > 0 {
		protos := zerolog.Dict()
		for _, name := range slices.Sorted(maps.Keys(sk.Protocol)) {
			protos.Int(name, sk.Protocol[name])
		}
		e.Dict("protocol", protos)
	}
	for _, k := range []struct {
		name string
		n    int
	}{{"response_only", sk.ResponseOnly}, {"direction_out", sk.DirectionOut}} {
		if k.n > 0 {
			e.Int(k.name, k.n)
		}
	}
	msg := "lines of the file skipped: not HTTP requests to replay"
	if sk.DirectionOut > 0 {
		msg += " (OUT pairs: --keep direction=IN,OUT replays them too)"
	}
	e.Msg(msg)
}

// startProfile starts the CPU profile, when asked for.
func (r *runner) startProfile() error {
	if r.o.CPUProfile == "" {
		return nil
	}
	f, err := outfile.Create(r.o.CPUProfile)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Abort()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	r.onClose(func() {
		pprof.StopCPUProfile()
		if err := f.Commit(); err != nil {
			r.o.Log.Error().Err(err).Msg("--cpuprofile")
		}
	})
	return nil
}

// startLive starts the threshold watcher and the caller's live view, the
// readers of the live counters.
func (r *runner) startLive(ctx context.Context) (context.Context, error) {
	cfg := &r.pool.Config
	src := LiveSources{Recorder: r.rec, VUs: r.pool.Live, Dropped: r.pool.Dropped, Late: r.pool.Late, Planned: planned(cfg),
		Model: cfg.Model.String(), Buckets: r.rec.LiveBuckets, Target: targetNow(cfg, time.Now())}
	if r.track != nil {
		src.Events = r.track.tracker.LiveStages
	}
	runCtx := ctx
	if r.o.AbortOnFail {
		runCtx, r.stopWatch = watchThresholds(ctx, r.p.thresholds, src, r.o.Log)
		r.onClose(r.stopWatch)
	}
	if r.o.Live != nil {
		stop, err := r.o.Live(src)
		if err != nil {
			return nil, err
		}
		r.stopLive = stop
	}
	return runCtx, nil
}

// empty says that the run has no iteration to issue: a shard that got
// none of the file (more shards than iterations).
func (r *runner) empty() bool {
	return r.file.Iterations() == 0
}

// runPool runs the VUs under runCtx; a run with no iteration runs none,
// and its counters say it started and ended at once.
func (r *runner) runPool(runCtx context.Context) (result.Counters, error) {
	if !r.empty() {
		return r.pool.Run(runCtx)
	}
	sh := r.file.Shard()
	r.o.Log.Warn().Int("shard", sh.Index).Int("shards", sh.Count).Int("pairs_in_file", r.file.Len()).
		Msg("this shard got no iterations (more shards than iterations): nothing sent, an empty summary written, thresholds skipped")
	now := time.Now()
	return result.Counters{Started: now, Stopped: now, Ended: now}, nil
}

// run runs the VUs under runCtx, then makes the summary; ctx is the
// caller's, for the drain of events.
func (r *runner) run(ctx, runCtx context.Context) (*report.Summary, error) {
	st, runErr := r.runPool(runCtx)
	// The readers of the live counters and the recorder stop here, before
	// the summary is read. close stops them too (both are idempotent), for
	// a run that fails between start and here.
	if r.stopWatch != nil {
		r.stopWatch()
	}
	if r.stopLive != nil {
		r.stopLive()
	}
	r.rec.Close()
	if runErr != nil && st.Started.IsZero() { // refused before the first request
		return nil, nothingSent(runErr)
	}
	if r.guard.faulted.Load() && !errors.Is(runErr, rrpair.ErrFileChanged) {
		runErr = errors.Join(runErr, fmt.Errorf("%s: %w", r.file.Name(), rrpair.ErrFileChanged))
	}
	cause := r.stopCause(ctx, runCtx, st)
	if r.dump != nil {
		if err := errors.Join(r.dump.Err(), r.commitDump()); err != nil {
			r.o.Log.Error().Err(err).Msg("failure dump incomplete")
		}
		r.o.Log.Info().Int("failures", r.dump.Dumped()).Str("file", r.o.DumpFailures).Msg("failures dumped")
	}
	return r.summary(ctx, st), errors.Join(runErr, cause)
}

// stopCause says why the VUs stopped before their time, or nil.
func (r *runner) stopCause(ctx, runCtx context.Context, st result.Counters) error {
	if !st.Interrupted {
		return nil
	}
	if cause := context.Cause(runCtx); errors.Is(cause, ErrAborted) {
		r.o.Log.Warn().Msg("aborted by --abort-on-fail: reports cover the requests sent so far")
		return cause
	}
	r.o.Log.Warn().Msg("stopped by signal: reports cover the requests sent so far")
	return fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
}

// summary is the run's summary: the recorder's, with the comparison, the
// transforms' counts and the end-to-end section, after the drain.
func (r *runner) summary(ctx context.Context, st result.Counters) *report.Summary {
	cfg := &r.pool.Config
	sum := r.rec.Summary(report.Meta{Run: st, Model: cfg.Model.String(), TargetRate: targetRate(cfg, st), LateAfter: cfg.LateAfter,
		Steps: stepPlans(cfg, r.pool.Steps())})
	if r.comparer != nil {
		sum.Compare = r.comparer.Result()
	}
	sum.Transforms = transformCounts(r.chain)
	if sk := r.file.Skipped(); sk.Total() > 0 {
		sum.Skipped = &sk
	}
	if r.track != nil {
		sum.E2E = r.track.drain(ctx, r.o.Log)
		sum.SetStepE2E(r.track.tracker.StepStages())
	}
	return sum
}

// onClose has close call f; the last registered is called first.
func (r *runner) onClose(f func()) {
	r.undo = append(r.undo, f)
}

// close releases what the run holds, last acquired first.
func (r *runner) close() {
	for i := len(r.undo) - 1; i >= 0; i-- {
		r.undo[i]()
	}
	r.undo = nil
}
