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
	fs.StringArrayVar(&o.thresholds, "threshold", nil, "fail (exit 99) unless `EXPR` holds: p99<200ms, service p95<50ms, errors<1%, status.5xx<0.1%, rps>1000, dropped<=0, pending<1%, 'POST /events: status.202>99%' (repeatable)")
	fs.StringVar(&o.junit, "junit", "", "write the --threshold results as JUnit XML to `FILE`")
}

// outputs are the report files, created before any traffic so that a bad
// path fails first, and put in place together once written (outfile.Set),
// so that a run that ends before its reports leaves the previous files as
// they were.
type outputs struct {
	opts  *reportOptions
	files *outfile.Set[*report.Summary]
}

// judge checks the --threshold expressions against s, a saved or merged
// summary: its verdict, in s.Thresholds (a run judges its own).
func (o *reportOptions) judge(s *report.Summary) error {
	if err := report.Judge(s, o.thresholds); err != nil {
		return fmt.Errorf("--threshold: %w", err)
	}
	return nil
}

// open creates the output files. Close the outputs when done.
func (o *reportOptions) open(outName string) (*outputs, error) {
	type out = outfile.Output[*report.Summary]
	files, err := outfile.CreateSet(out{Flag: outName, Path: o.out, Write: report.WriteJSON}, out{Flag: "--hgrm", Path: o.hgrm, Write: report.WriteHgrm},
		out{Flag: "--hlog", Path: o.hlog, Write: report.WriteHlog}, out{Flag: "--html", Path: o.html, Write: report.WriteHTML},
		out{Flag: "--junit", Path: o.junit, Write: report.WriteJUnit})
	if err != nil {
		return nil, err
	}
	return &outputs{opts: o, files: files}, nil
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
	if err := w.files.Write(s); err != nil {
		return err
	}
	if failed := s.FailedThresholds(); len(failed) > 0 {
		return thresholdError{failed}
	}
	return nil
}

// close drops the files not written: the files asked for stay as they
// were.
func (w *outputs) close() { w.files.Close() }

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
