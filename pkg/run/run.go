// Package run is the engine behind replay run, replay demo and replay
// find-max: it prepares a run once from plain options (Prepare: every
// option checked before anything is sent — parse, then the files the
// options name, then the VUs' configuration —, the traffic file opened
// and validated, the transforms compiled, the transport built) and runs
// it as often as asked (Prepared.Run), each time with a typed load and
// everything a run owns made fresh: the shard's share of the load, the
// transform chain, the VUs, the recorder, the comparer, the failure dump,
// the end-to-end tracker and its sinks, the threshold watcher of
// --abort-on-fail, the drain of events, and the summary with its verdict
// (Summary.Thresholds). Execute is Prepare and one Run. What becomes of
// the summary (reports, exit codes), progress and metrics are the
// caller's: it is handed the run's plan and live counters through hooks.
//
// A Go program uses it as replay run does: options from DefaultOptions
// (the zero Options is not a run: its fields mean what a flag's zero
// means), Prepare once, Run with a typed load as often as needed, then
// read the summary and its verdict:
//
//	o := run.DefaultOptions()
//	o.File = "traffic.jsonl"                // one RRPair a line
//	o.Load.Target = "http://127.0.0.1:8080" // every recorded host goes here
//	o.Load.VUs, o.Load.Mode, o.Load.Iterations = 2, "loop", 1000
//	o.Thresholds = []string{"p99<200ms", "errors<1%"}
//	p, err := run.Prepare(ctx, o) // options checked, file mapped, transport built
//	if err != nil {
//		return err // names the flag, or the file and line
//	}
//	defer p.Close()
//	l := p.Load() // the options' load, typed (schedule.Load): change it per run
//	s, err := p.Run(ctx, run.Pass{Load: l, Judge: true})
//	if err != nil {
//		return err // a summary may come with it: ErrAborted, ErrInterrupted
//	}
//	fmt.Println(s.Requests, s.Succeeded, s.Failed, s.FailedThresholds())
//
// The summary (report.Summary) is what replay run --out writes; the
// renderers of pkg/report print it. Execute is Prepare and one Run of the
// options' own load, judged.
package run

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// ErrAborted is the cause of a run stopped by Pass.AbortOnFail: a
// threshold could no longer pass. The error Run returns wraps it and
// names the threshold.
var ErrAborted = errors.New("aborted: a threshold can no longer pass")

// ErrInterrupted is the cause of a run cut short by its context. The
// error Run returns wraps it and the context's cause (a signal).
var ErrInterrupted = errors.New("interrupted")

// Execute prepares the run o describes and runs it once, with o's load,
// its thresholds judged (Summary.Thresholds: the verdict) and, with
// AbortOnFail, watched: the VUs replay the file into the recorder until
// the file, the duration or the iteration limit is done, or ctx is
// cancelled; then the events still on their way are drained, and the
// summary returned. It returns after every goroutine it started has
// exited.
//
// A nil summary means that nothing was sent: a bad option or input (the
// error names the flag, or the file and line), a hook's error, or a dry
// run. A run cut short still returns its full summary, with an error
// saying why: ErrAborted, or ErrInterrupted with ctx's cause; an error of
// the VUs after traffic began comes with the summary too.
func Execute(ctx context.Context, o Options) (*report.Summary, error) {
	p, err := Prepare(ctx, o)
	if err != nil {
		return nil, nothingSent(err)
	}
	defer p.Close()
	if o.DryRun > 0 {
		return nil, p.DryRun(o.DryRunTo, o.DryRun, p.Load())
	}
	return p.Run(ctx, Pass{Load: p.Load(), Judge: true, AbortOnFail: o.AbortOnFail, Ready: o.Ready, Live: o.Live})
}

// nothingSent says of an error before the first request that nothing was
// sent.
func nothingSent(err error) error {
	return fmt.Errorf("%w\nnothing was sent", err)
}

// Pass is one run of a prepared run: its load, and what the caller asks
// of this run beside the prepared options.
type Pass struct {
	// Load is the run's load (Prepared.Load, or one of the caller's). A
	// shard runs its share of it. Rates written in requests (Unit) are
	// converted to iterations by the mean number of requests an iteration
	// holds (Prepared.PerIteration).
	Load schedule.Load
	// Judge checks the options' thresholds against the summary: its
	// verdict, in Summary.Thresholds. AbortOnFail also stops the run once
	// one of them can no longer pass (errors<N, dropped<N, late<N).
	Judge, AbortOnFail bool
	// NoDrain ends the run without waiting for the events still on their
	// way (a warm-up whose events are not judged).
	NoDrain bool
	// Ready, when set, is called once the run is checked and built,
	// before anything is started or sent: the caller creates its output
	// files there. An error ends the run with nothing sent.
	Ready func(Plan) error
	// Live, when set, is called just before the first request with the
	// counters of the run under way (progress, metrics). An error ends
	// the run with nothing sent. The stop it returns, when not nil, is
	// called once the VUs have stopped, before events are drained.
	Live func(recording.LiveView) (stop func(), err error)
	// Log, when set, receives this run's messages instead of the options'
	// logger.
	Log *zerolog.Logger
}

// Run runs the prepared run once with pass: its own VUs, connections,
// transform chain, recorder and end-to-end tracking, none of them kept
// from an earlier run. It returns as Execute does, and after every
// goroutine it started has exited.
func (pr *Prepared) Run(ctx context.Context, pass Pass) (*report.Summary, error) {
	r, err := pr.newRunner(pass, false)
	if err != nil {
		return nil, nothingSent(err)
	}
	defer r.close()
	runCtx, err := r.start(ctx)
	if err != nil {
		return nil, nothingSent(err)
	}
	return r.run(ctx, runCtx)
}

// runner is one run of a prepared run, built. Its methods are called from
// one goroutine, in order: newRunner, start, run, close.
type runner struct {
	pr       *Prepared
	o        *Options
	pass     Pass
	log      zerolog.Logger
	file     *rrpair.File
	plan     *schedule.Schedule
	pool     *vu.Pool
	chain    *transform.Chain    // nil without transforms
	track    *tracking           // nil unless requests are stamped
	comparer *recording.Comparer // nil without Compare
	rec      *recording.Recorder
	dump     *recording.FailureDump // nil without DumpFailures
	dumpFile *outfile.File          // the dump's file, until put in place
	guard    *faultGuard            // the transport, guarded against a truncated file
	runVUs   int                    // the most VUs of the whole run, before the shard's share

	stopWatch func() // the threshold watcher's, or nil
	stopLive  func() // Pass.Live's, or nil
	undo      []func()
}

// newRunner checks the pass's load, divides it for the shard, and builds
// what the run owns: the VUs' pool, the transform chain, the end-to-end
// tracker, the comparer. Nothing is started. A dry run opens no
// connection, so its load is not held against the open-file limit.
func (pr *Prepared) newRunner(pass Pass, dry bool) (*runner, error) {
	o, p := &pr.o, pr.p
	log := o.Log
	if pass.Log != nil {
		log = *pass.Log
	}
	userMaxVUs := pass.Load.MaxVUs
	cfg, err := configure(o, pass.Load.InIterations(pr.PerIteration()), log)
	if err != nil {
		return nil, err
	}
	runVUs := cfg.MostVUs() // before the shard's share: fresh values number every VU of the run
	cfg.Load = cfg.Load.Share(p.shard.Index, p.shard.Count)
	plan := schedule.New(cfg.Load)
	if pass.Judge {
		if err := report.CheckSteps(p.thresholds, len(plan.Ends())); err != nil {
			return nil, fmt.Errorf("--threshold: %w", err)
		}
	}
	if !dry {
		if err := checkOpenFiles(&cfg, o.HTTP.Streams, userMaxVUs, vu.OpenFileLimit, log); err != nil {
			return nil, err
		}
	}
	r := &runner{pr: pr, o: o, pass: pass, log: log, file: pr.file, plan: plan, runVUs: runVUs,
		guard: &faultGuard{Transport: pr.tr, file: pr.file}}
	r.pool = &vu.Pool{File: pr.file, Config: cfg, Schedule: plan, Transport: r.guard}
	if err := r.build(); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// build makes what the run owns that works on the file: the end-to-end
// tracker, the transform chain and the comparer.
func (r *runner) build() error {
	p := r.pr.p
	r.track = newTracking(p.stamp, p.sinks, p.shard.Index, r.pool.Config.MostVUs(), r.pass.NoDrain)
	if r.pr.prog != nil {
		if err := r.installTransforms(); err != nil {
			return err
		}
	}
	if c := r.o.Compare; c.Mode != "" {
		r.comparer = recording.NewComparer(r.file.Endpoints(), c.Mode == "body", c.Ignore, c.Headers)
		if r.chain != nil {
			r.comparer.Learned = r.chain // observed before: it learns, then the comparer maps
		}
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
	if r.pass.Ready != nil {
		plan := Plan{Endpoints: r.file.Endpoints(), Settings: settings(r.file, &r.pool.Config, r.o), Empty: r.empty()}
		if err := r.pass.Ready(plan); err != nil {
			return nil, err
		}
	}
	if err := r.openDump(); err != nil {
		return nil, err
	}
	r.logStart()
	if err := waitStart(ctx, r.pr.p.startAt, r.log); err != nil {
		return nil, err
	}
	if err := r.startProfile(); err != nil {
		return nil, err
	}
	if r.track != nil {
		r.onClose(r.track.close)
		if err := r.track.start(r.log); err != nil {
			return nil, err
		}
	}
	if r.chain != nil {
		r.log.Info().Strs("transforms", r.chain.Names()).Msg("rewriting requests")
	}
	r.rec = recording.NewRecorder(r.file.Endpoints())
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
	r.dump = recording.NewFailureDump(f, r.file.Endpoints(), r.o.DumpMax)
	r.pool.Failures = r.dump
	return nil
}

// commitDump puts the failure dump in place, once the VUs have stopped.
func (r *runner) commitDump() error {
	return r.dumpFile.Commit()
}

// logStart says what is about to run.
func (r *runner) logStart() {
	f, cfg, log := r.file, &r.pool.Config, r.log
	log.Info().Str("model", cfg.Model.String()).Str("file", f.Name()).Float64("opened_ms", float64(r.pr.opened.Microseconds())/1000).
		Int("pairs", f.Len()).Int("filtered_out", f.Filtered()).Int("iterations", f.Iterations()).
		Int("vus", cfg.VUs).Str("walk", cfg.Walk.String()).Dur("duration", cfg.Duration).
		Str("target", r.o.Load.Target).Msg("replaying")
	if n := r.o.HTTP.Streams; n > 1 {
		log.Info().Int("vus", cfg.VUs).Int("streams", n).Int("connections", (cfg.VUs+n-1)/n).
			Msg("VUs share HTTP/2 connections (--streams): each VU's request in flight is a stream of its group's connection")
	}
	if sh := r.pr.p.shard; sh.Count > 1 {
		log.Info().Int("shard", sh.Index).Int("shards", sh.Count).Int("vus", cfg.VUs).Float64("rate", cfg.Rate).Msg("sharded")
	}
	logSkipped(log, f)
	logBodyCache(log, f)
}

// logBodyCache says which path the request bodies with JSON escapes take:
// unescaped once at open, or at each request because they did not fit
// in --decode-cache. Nothing when the file has none.
func logBodyCache(log zerolog.Logger, f *rrpair.File) {
	bc := f.BodyCache()
	switch {
	case bc.Escaped == 0:
	case bc.Cached:
		log.Info().Int("bodies", bc.Escaped).Int64("bytes", bc.Bytes).
			Msg("request bodies with JSON escapes unescaped once, at open (--decode-cache)")
	case bc.Limit == 0:
		log.Info().Int("bodies", bc.Escaped).Msg("request bodies with JSON escapes unescaped at each request (--decode-cache 0)")
	default:
		log.Info().Int("bodies", bc.Escaped).Int64("bytes", bc.Bytes).Int64("decode_cache_bytes", bc.Limit).
			Msg("request bodies with JSON escapes unescaped at each request: they do not fit in --decode-cache")
	}
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
	}{{"signature", sk.Signature}, {"response_only", sk.ResponseOnly}, {"direction_out", sk.DirectionOut}} {
		if k.n > 0 {
			e.Int(k.name, k.n)
		}
	}
	msg := "lines of the file skipped: not HTTP requests to replay"
	if sk.DirectionOut > 0 {
		msg += " (OUT pairs: --keep direction=IN,OUT replays them too)"
	}
	if sk.Signature > 0 {
		msg += " (signature lines: answers without their request, which replay mock serves)"
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
			r.log.Error().Err(err).Msg("--cpuprofile")
		}
	})
	return nil
}

// startLive starts the threshold watcher and the caller's live view, the
// readers of the live counters.
func (r *runner) startLive(ctx context.Context) (context.Context, error) {
	src := recording.LiveView{Now: r.liveNow(time.Now()), Buckets: r.rec.LiveBuckets, Planned: r.plan.End(), Model: r.pool.Config.Model.String()}
	runCtx := ctx
	if r.pass.AbortOnFail {
		runCtx, r.stopWatch = watchThresholds(ctx, r.pr.p.thresholds, src, r.log)
		r.onClose(r.stopWatch)
	}
	if r.pass.Live != nil {
		stop, err := r.pass.Live(src)
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
	r.log.Warn().Int("shard", sh.Index).Int("shards", sh.Count).Int("pairs_in_file", r.file.Len()).
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
			r.log.Error().Err(err).Msg("failure dump incomplete")
		}
		r.log.Info().Int("failures", r.dump.Dumped()).Str("file", r.o.DumpFailures).Msg("failures dumped")
	}
	return r.summary(ctx, st), errors.Join(runErr, cause)
}

// stopCause says why the VUs stopped before their time, or nil.
func (r *runner) stopCause(ctx, runCtx context.Context, st result.Counters) error {
	if !st.Interrupted {
		return nil
	}
	if cause := context.Cause(runCtx); errors.Is(cause, ErrAborted) {
		r.log.Warn().Msg("aborted by --abort-on-fail: reports cover the requests sent so far")
		return cause
	}
	r.log.Warn().Msg("stopped by signal: reports cover the requests sent so far")
	return fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
}

// summary is the run's summary: the recorder's, with the comparison, the
// transforms' counts and the end-to-end section, after the drain; and,
// when the pass judges it, the thresholds' verdict (a shard that got no
// iteration sent nothing: nothing to judge).
func (r *runner) summary(ctx context.Context, st result.Counters) *report.Summary {
	cfg := &r.pool.Config
	sum := r.rec.Summary(recording.Meta{Run: st, Model: cfg.Model.String(), TargetRate: targetRate(cfg, r.plan, st), LateAfter: cfg.LateAfter,
		Unit: cfg.Unit, PerIteration: cfg.PerIteration, Steps: stepPlans(r.plan, r.pool.Steps(), cfg.Unit, cfg.PerIteration)})
	if r.comparer != nil {
		sum.Compare = r.comparer.Result()
	}
	sum.Transforms = transformCounts(r.chain)
	if sk := r.file.Skipped(); sk.Total() > 0 {
		sum.Skipped = &sk
	}
	if r.track != nil {
		sum.E2E = r.track.drain(ctx, r.log)
		sum.SetStepE2E(r.track.tracker.StepStages(), r.track.tracker.StepAccepted())
	}
	if r.o.SUTCPUs > 0 {
		sum.SetSUTCPUs(r.o.SUTCPUs)
	}
	if r.pass.Judge && !r.empty() {
		report.Evaluate(sum, r.pr.p.thresholds)
		sum.JudgeSteps(r.o.Tolerance)
	}
	sum.Settings = settings(r.file, cfg, r.o)
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
