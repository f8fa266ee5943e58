package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/spf13/pflag"
)

// reportOptions are the flags that say what to make of a summary: a run's,
// a re-rendered one, or a merge.
type reportOptions struct {
	quiet      bool
	out        string // the summary JSON
	hgrm       string
	hlog       string
	html       string
	junit      string
	thresholds []string
}

func (o *reportOptions) addFlags(fs *pflag.FlagSet, outFlag string) {
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "do not print the text report")
	if outFlag == "out" {
		fs.StringVar(&o.out, "out", "", "write the summary JSON to `FILE`")
	} else {
		fs.StringVarP(&o.out, "output", "o", "", "write the merged summary JSON to `FILE` (default: standard output)")
	}
	fs.StringVar(&o.hgrm, "hgrm", "", "write the latency distribution (from due time) as an HdrHistogram percentile `FILE` (.hgrm, ms)")
	fs.StringVar(&o.html, "html", "", "write the report as one self-contained HTML `FILE` (charts over time, percentiles, tables; opens offline)")
	fs.StringVar(&o.hlog, "hlog", "", "write the per-second latency histograms as an HdrHistogram interval log `FILE` (.hlog)")
	fs.StringArrayVar(&o.thresholds, "threshold", nil, "fail (exit 99) unless `EXPR` holds: p99<200ms, service p95<50ms, errors<1%, rps>1000, dropped<=0, pending<1%, 'POST /events: p95<50ms' (repeatable)")
	fs.StringVar(&o.junit, "junit", "", "write the --threshold results as JUnit XML to `FILE`")
}

// outputs are the report files, created before any traffic so that a bad
// path fails first; each is written to a temporary file put in place when
// complete (outFile), so that a run that ends before its reports leaves
// the previous files as they were.
type outputs struct {
	opts      *reportOptions
	out, hgrm *outfile.File
	hlog      *outfile.File
	html      *outfile.File
	junit     *outfile.File
	// config is the run's configuration, shown in the HTML report.
	config []report.Setting
}

// parseThresholds checks the --threshold expressions.
func (o *reportOptions) parseThresholds() ([]report.Threshold, error) {
	var ts []report.Threshold
	for _, expr := range o.thresholds {
		t, err := report.ParseThreshold(expr)
		if err != nil {
			return nil, fmt.Errorf("--threshold: %w", err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// judge checks the --threshold expressions against s, a saved or merged
// summary: its verdict, in s.Thresholds (a run judges its own).
func (o *reportOptions) judge(s *report.Summary) error {
	ts, err := o.parseThresholds()
	if err != nil {
		return err
	}
	if err := report.CheckEndpoints(ts, endpointNames(s)); err != nil {
		return fmt.Errorf("--threshold: %w", err)
	}
	report.Evaluate(s, ts)
	return nil
}

// open creates the output files. Close the outputs when done.
func (o *reportOptions) open(outName string) (*outputs, error) {
	var err error
	w := &outputs{opts: o}
	for _, f := range []struct {
		flag, path string
		file       **outfile.File
	}{{outName, o.out, &w.out}, {"--hgrm", o.hgrm, &w.hgrm}, {"--hlog", o.hlog, &w.hlog}, {"--html", o.html, &w.html}, {"--junit", o.junit, &w.junit}} {
		if f.path == "" {
			continue
		}
		if *f.file, err = outfile.Create(f.path); err != nil {
			w.close()
			return nil, fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	return w, nil
}

// write writes every report: the text to text unless --quiet, the
// summary JSON also to json when not nil. A threshold the summary says
// failed (its verdict) returns a thresholdError.
func (w *outputs) write(text, json io.Writer, s *report.Summary) error {
	if !w.opts.quiet && text != nil {
		if err := report.WriteText(text, s); err != nil {
			return err
		}
	}
	if json != nil {
		if err := report.WriteJSON(json, s); err != nil {
			return err
		}
	}
	s.Settings = w.config // for the HTML report
	for _, f := range []struct {
		file   *outfile.File
		render report.Renderer
	}{{w.hgrm, report.WriteHgrm}, {w.hlog, report.WriteHlog}, {w.junit, report.WriteJUnit}, {w.out, report.WriteJSON}, {w.html, report.WriteHTML}} {
		if f.file == nil {
			continue
		}
		if err := f.render(f.file, s); err != nil {
			return fmt.Errorf("write %s: %w", f.file.Path(), err)
		}
	}
	if err := w.commit(); err != nil {
		return err
	}
	var failed []string
	for _, t := range s.Thresholds {
		if !t.Pass {
			failed = append(failed, fmt.Sprintf("%s (measured %.3f %s)", t.Name(), t.Measured, t.Unit))
		}
	}
	if len(failed) > 0 {
		return thresholdError{failed}
	}
	return nil
}

// files are the output files open.
func (w *outputs) files() []**outfile.File {
	return []**outfile.File{&w.out, &w.hgrm, &w.hlog, &w.html, &w.junit}
}

// commit puts every file in place, returning the first error (a write
// that failed late).
func (w *outputs) commit() error {
	var first error
	for _, f := range w.files() {
		if *f != nil {
			if err := (*f).Commit(); err != nil && first == nil {
				first = err
			}
			*f = nil
		}
	}
	return first
}

// close drops the files not committed: the files asked for stay as they
// were.
func (w *outputs) close() {
	for _, f := range w.files() {
		if *f != nil {
			(*f).Abort()
			*f = nil
		}
	}
}

// paths are the output files the flags name, for outfile.CheckDistinct.
func (o *reportOptions) paths(outFlag string) []outfile.Named {
	return []outfile.Named{outfile.Out(outFlag, o.out), outfile.Out("--hgrm", o.hgrm), outfile.Out("--hlog", o.hlog), outfile.Out("--html", o.html), outfile.Out("--junit", o.junit)}
}

// thresholdError is the error of a run whose thresholds did not hold: it
// exits with code 99 (k6's convention).
type thresholdError struct{ failed []string }

func (e thresholdError) Error() string {
	return "thresholds failed: " + strings.Join(e.failed, "; ")
}

func (thresholdError) ExitCode() int { return exitThreshold }
