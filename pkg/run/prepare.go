package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/negotiate"
)

// Prepared is a run made ready once: every option checked, the traffic
// file opened, mapped and validated with its indexes, the transforms
// compiled (their configuration parsed, their keys read), the thresholds
// parsed and checked against the file's endpoints, the transport built
// (its TLS configuration read). Run runs it as often as asked, each time
// with a load of its own and everything else fresh: connections, cookie
// jars, learned correlations, end-to-end tracking, counters. Close
// releases the file.
//
// A Prepared is used from one goroutine: its runs go one after the other.
type Prepared struct {
	o      Options
	p      *parsed
	file   *rrpair.File
	opened time.Duration      // how long opening the file took
	prog   *transform.Program // nil without transforms
	tr     transport.Transport
}

// Prepare checks o, reads the files it names, opens the traffic and
// builds what every run of it shares. Nothing is sent. Its errors name
// the flag, or the file and line, to fix: first the options alone (all of
// them at once), then the files they name, then the VUs' configuration of
// the options' load, and only then the traffic file, so that a bad flag
// never waits for a large file to be read.
func Prepare(ctx context.Context, o Options) (*Prepared, error) {
	p, err := parse(&o)
	if err != nil {
		return nil, err
	}
	if err := p.loadFiles(&o); err != nil {
		return nil, err
	}
	topt := transportOptions(&o, p.hostMap)
	if err := errors.Join(checkLoad(&o, p.load), topt.Validate()); err != nil {
		return nil, err
	}
	opening := time.Now()
	f, err := openTraffic(ctx, &o, p)
	if err != nil {
		return nil, err
	}
	pr := &Prepared{o: o, p: p, file: f, opened: time.Since(opening)}
	if err := checkAsked(p.load, f, p.shard.Count, o.Log); err != nil {
		f.Close()
		return nil, err
	}
	if err := pr.build(topt); err != nil {
		f.Close()
		return nil, err
	}
	return pr, nil
}

// checkLoad checks the VUs' configuration of load, the options' load.
func checkLoad(o *Options, load schedule.Load) error {
	_, err := configure(o, load, o.Log)
	return err
}

// build compiles what works on the file: the thresholds' endpoints
// checked, the transforms compiled, the transport built. When nothing
// reads the answers' bodies, the transport drops them as they arrive, so
// that memory is bounded by the VUs, not by the answers.
func (pr *Prepared) build(topt negotiate.Options) error {
	p := pr.p
	if err := report.CheckEndpoints(p.thresholds, pr.file.Endpoints()); err != nil {
		return fmt.Errorf("--threshold: %w", err)
	}
	sh := p.shard
	mostVUs := pr.mostVUs()
	opt := transform.Options{Stamp: p.stamp, Shard: sh.Index, Shards: max(sh.Count, 1), RunVUs: mostVUs,
		VUs: mostVUs, Endpoints: pr.file.Endpoints()}
	prog, err := transform.Compile(p.spec, pr.file.SetsCookies(), opt)
	if err != nil {
		return err
	}
	if prog.Len() > 0 || p.stamp != nil {
		pr.prog = prog
	}
	topt.Answer.DiscardBodies = !pr.readsBodies()
	tr, err := negotiate.New(topt)
	if err != nil {
		return err
	}
	pr.tr = tr
	return nil
}

// mostVUs is the most VUs of the options' load, whole.
func (pr *Prepared) mostVUs() int {
	l := pr.p.load
	l.SetDefaults()
	return l.MostVUs()
}

// readsBodies says whether anything reads the answers' bodies: the
// comparer of --compare body, a transform that learns from answers
// (correlate, cookies, the correlation ID), the failure dump.
func (pr *Prepared) readsBodies() bool {
	learns := pr.prog != nil && (pr.prog.Learns() || pr.p.stamp != nil)
	return pr.o.Compare.Mode == "body" || learns || pr.o.DumpFailures != ""
}

// Load is the load the options describe, whole (not a shard's share),
// as Run takes it: a caller runs it as given, or changes it (find-max
// holds each rate of its search). Its rates are in the unit they were
// written in (Unit): Run converts rates in requests to iterations.
func (pr *Prepared) Load() schedule.Load { return pr.p.load }

// PerIteration is the mean number of requests an iteration of the run
// holds (after the filters and the shard): how Run converts a rate in
// requests a second to the iterations it schedules.
func (pr *Prepared) PerIteration() float64 { return pr.file.PerIteration() }

// File is the traffic file, open until Close.
func (pr *Prepared) File() *rrpair.File { return pr.file }

// Close releases the traffic file. Call it after the last run.
func (pr *Prepared) Close() {
	pr.file.Close()
}

// DryRun writes the first n requests of a run of load to w exactly as
// they would go on the wire, after every rewrite, and sends nothing.
func (pr *Prepared) DryRun(w io.Writer, n int, load schedule.Load) error {
	r, err := pr.newRunner(Pass{Load: load}, true)
	if err != nil {
		return err
	}
	defer r.close()
	return r.pool.DryRun(w, n)
}

// openTraffic opens the traffic of o; ctx stops the spooling of
// standard input.
func openTraffic(ctx context.Context, o *Options, p *parsed) (*rrpair.File, error) {
	opt := rrpair.Options{RequireHost: o.Load.Target == "", Filter: p.filter, Shard: p.shard,
		BodyCache: int64(o.DecodeCacheMiB) << 20}
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
