package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/internal/run"
	"github.com/replay-dev/replay/pkg/export"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// skipped counts what a converter could not convert, keeps the first few,
// and says so on stderr; with --strict any of it fails the command. With
// jsonl set (import --skipped), every one is written there as a JSON line,
// {"index": N, "reason": "..."} ("file" first when several were read).
type skipped struct {
	what string // "line", "entry", "record"
	n    int
	// notTraffic counts, among n, the skips that lose nothing (a HAR's
	// cache hits and WebSockets never reached the network): listed and
	// counted, but no reason for --strict to fail.
	notTraffic int
	first      []string
	jsonl      io.Writer
	line       []byte
}

func (s *skipped) add(where int, why string) { s.addIn("", where, why) }

// addNotTraffic is add for an entry that was never traffic to replay.
func (s *skipped) addNotTraffic(where int, why string) {
	s.notTraffic++
	s.add(where, why)
}

// addIn is add for a converter that reads several files: file names the
// one where is in.
func (s *skipped) addIn(file string, where int, why string) {
	s.n++
	if len(s.first) < 5 {
		place := fmt.Sprintf("%s %d", s.what, where)
		if file != "" {
			place = file + " " + place
		}
		s.first = append(s.first, place+": "+why)
	}
	if s.jsonl == nil {
		return
	}
	b := append(s.line[:0], '{')
	if file != "" {
		b = append(rrpair.AppendJSONString(append(b, `"file":`...), file), ',')
	}
	b = strconv.AppendInt(append(b, `"index":`...), int64(where), 10)
	b = rrpair.AppendJSONString(append(b, `,"reason":`...), why)
	s.line = append(b, "}\n"...)
	s.jsonl.Write(s.line) // a buffered file's error comes back at its flush
}

func (s *skipped) plural() string {
	if s.n == 1 {
		return s.what
	}
	if strings.HasSuffix(s.what, "y") {
		return strings.TrimSuffix(s.what, "y") + "ies"
	}
	return s.what + "s"
}

// report writes the skipped items to w; with strict, any is an error.
func (s *skipped) report(w io.Writer, strict bool) error {
	if s.n == 0 {
		return nil
	}
	fmt.Fprintf(w, "replay: skipped %d %s:\n  %s\n", s.n, s.plural(), strings.Join(s.first, "\n  "))
	if s.n > len(s.first) {
		fmt.Fprintf(w, "  ... and %d more\n", s.n-len(s.first))
	}
	if lost := s.n - s.notTraffic; strict && lost > 0 {
		what := s.what
		if lost != 1 {
			what = (&skipped{what: s.what, n: lost}).plural()
		}
		return fmt.Errorf("--strict: %d %s could not be converted", lost, what)
	}
	return nil
}

// writeOut runs write into -o (or stdout), says on stderr what write
// returned and what was skipped (an error with strict), and puts -o in
// place only when all of that succeeded (a refused export leaves the
// previous -o as it was). in is the file read, which -o must not be.
func writeOut(std stdio, in, out string, sk *skipped, strict bool, write func(io.Writer) (summary string, err error)) error {
	if out == "" || out == "-" {
		summary, err := write(std.out)
		if err != nil {
			return err
		}
		fmt.Fprintf(std.err, "replay: %s\n", summary)
		return sk.report(std.err, strict)
	}
	if err := outfile.CheckDistinct([]outfile.Named{outfile.Out("-o", out), outfile.In("-f", in)}); err != nil {
		return err
	}
	f, err := outfile.Create(out)
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	summary, err := write(f)
	if err != nil {
		f.Abort()
		return err
	}
	fmt.Fprintf(std.err, "replay: %s\n", summary)
	if err := sk.report(std.err, strict); err != nil {
		f.Abort() // --strict refused a skip: the previous -o stays
		return err
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	return nil
}

// writeK6Files has write fill a k6 script at out and its data beside it,
// and puts both in place when complete; in is the traffic file, which
// neither may be. It returns the data's path.
func writeK6Files(out, in string, write func(script, data io.Writer, dataRef string) error) (string, error) {
	dataPath := strings.TrimSuffix(out, filepath.Ext(out)) + ".data.json"
	if err := outfile.CheckDistinct([]outfile.Named{outfile.Out("-o", out), outfile.Out("-o (its data)", dataPath), outfile.In("-f", in)}); err != nil {
		return "", err
	}
	script, err := outfile.Create(out)
	if err != nil {
		return "", fmt.Errorf("-o: %w", err)
	}
	defer script.Abort()
	data, err := outfile.Create(dataPath)
	if err != nil {
		return "", fmt.Errorf("-o: %w", err)
	}
	defer data.Abort()
	if err := write(script, data, "./"+filepath.Base(dataPath)); err != nil {
		return "", err
	}
	if err := errors.Join(data.Commit(), script.Commit()); err != nil {
		return "", fmt.Errorf("-o: %w", err)
	}
	return dataPath, nil
}

func newExportCmd(std stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write recorded traffic as a k6 script or vegeta targets",
	}
	var file, out string
	var strict bool
	openFile := func(args []string, target string) (*rrpair.File, error) {
		if len(args) == 1 {
			file = args[0]
		}
		if file == "" {
			return nil, fmt.Errorf("-f, --file: name the traffic file")
		}
		return run.OpenFile(file, std.in, rrpair.Options{RequireHost: target == ""})
	}

	load := run.DefaultOptions().Load
	k6 := &cobra.Command{
		Use:   "k6 [FILE]",
		Short: "Write a k6 script that replays the traffic, with the load of the flags given",
		Long: `Write a k6 script (-o script.js) and its data beside it (script.data.json):
each k6 iteration replays one recorded iteration (a session, or a single
request) in order, with the recorded method, URL, headers and body, a check
on the recorded status, and the endpoint as the request's name tag. The
scenario reflects the load flags, as replay run reads them: --vus with
--duration (constant-vus), none (shared-iterations: every iteration once),
--rate (constant-arrival-rate, with the most VUs the run could use
preallocated), --stages (ramping-vus, or ramping-arrival-rate with a rate);
--think recorded sleeps the recorded gaps. k6 canonicalizes header names
and takes one value a name: repeated values are joined with ", ", Cookie's
with "; ". What k6 cannot do is refused, not dropped: --pace recorded,
--late-after, --precise-pacing, --iterations with a rate or stages, --speed
without --think recorded. gRPC pairs are skipped and counted.`,
		Example: `  replay export k6 -f traffic.jsonl --target http://127.0.0.1:8080 --vus 50 --duration 1m -o load.js
  k6 run --no-usage-report load.js`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			markGiven(cmd.Flags(), &load)
			if out == "" || out == "-" {
				return fmt.Errorf("-o: export k6 writes a script and its data beside it: give -o FILE.js")
			}
			shape, err := load.Shape()
			if err != nil {
				return err
			}
			if err := k6Refuses(cmd.Flags(), &load, shape); err != nil {
				return err
			}
			f, err := openFile(args, load.Target)
			if err != nil {
				return err
			}
			defer f.Close()
			k6Load := export.K6Load{VUs: shape.VUs, MostVUs: shape.MostVUs, Duration: shape.Duration, Iterations: shape.Iterations,
				RateStages: shape.ArrivalRate, Rate: shape.Rate, Think: load.Think == "recorded", Speed: load.Speed}
			for _, s := range shape.Stages {
				k6Load.Stages = append(k6Load.Stages, export.K6Stage{Duration: s.Duration, Target: s.Target})
			}
			sk := &skipped{what: "line"}
			var st export.Stats
			dataPath, err := writeK6Files(out, file, func(script, data io.Writer, dataRef string) (err error) {
				st, err = export.K6(script, data, dataRef, f, load.Target, filepath.Base(file), k6Load, sk.add)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(std.err, "replay: wrote %s and %s: %d iterations, %d requests%s\n", out, dataPath, st.Iterations, st.Requests, grpcSkipped(st))
			return sk.report(std.err, strict)
		},
	}
	k6.Flags().StringVarP(&file, "file", "f", "", "traffic `FILE` (RRPair JSON Lines)")
	k6.Flags().StringVarP(&out, "output", "o", "", "the script `FILE.js` (its data goes beside it, FILE.data.json)")
	k6.Flags().BoolVar(&strict, "strict", false, "fail when any pair cannot be exported")
	addLoadFlags(k6.Flags(), &load, 1)

	var target string
	vegeta := &cobra.Command{
		Use:   "vegeta [FILE]",
		Short: "Write vegeta JSON targets, one per pair (vegeta attack -format=json)",
		Example: `  replay export vegeta -f traffic.jsonl --target http://127.0.0.1:8080 -o targets.json
  vegeta attack -format=json -targets=targets.json -rate=100 -duration=30s | vegeta report`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if target != "" {
				if err := run.CheckTarget(target); err != nil {
					return fmt.Errorf("--target: %w", err)
				}
			}
			f, err := openFile(args, target)
			if err != nil {
				return err
			}
			defer f.Close()
			sk := &skipped{what: "line"}
			return writeOut(std, file, out, sk, strict, func(w io.Writer) (string, error) {
				st, err := export.Vegeta(w, f, target, sk.add)
				return fmt.Sprintf("wrote %d targets%s", st.Requests, grpcSkipped(st)), err
			})
		},
	}
	vegeta.Flags().StringVarP(&file, "file", "f", "", "traffic `FILE` (RRPair JSON Lines)")
	vegeta.Flags().StringVarP(&out, "output", "o", "", "write the targets to `FILE` (default: standard output)")
	vegeta.Flags().StringVar(&target, "target", "", "send every request to `URL` instead of its recorded host")
	vegeta.Flags().BoolVar(&strict, "strict", false, "fail when any pair cannot be exported")
	cmd.AddCommand(k6, vegeta)
	return cmd
}

// grpcSkipped is the summary line's word on the gRPC pairs an export
// skipped: none, or "; N gRPC pairs skipped".
func grpcSkipped(st export.Stats) string {
	switch st.GRPC {
	case 0:
		return ""
	case 1:
		return "; 1 gRPC pair skipped"
	}
	return fmt.Sprintf("; %d gRPC pairs skipped", st.GRPC)
}

// k6Refuses names the load flags given that a k6 script cannot carry, so
// that none is dropped without a word. --think recorded is carried (sleep
// between requests), and --speed with it.
func k6Refuses(fs *pflag.FlagSet, l *run.Load, shape run.Shape) error {
	var errs []error
	if l.Pace == "recorded" {
		errs = append(errs, errors.New("--pace recorded: k6 has no executor that sends each request at its recorded time; export a --vus or --rate load, or replay it with replay run"))
	} else if fs.Changed("speed") && l.Think != "recorded" {
		errs = append(errs, errors.New("--speed: export k6 carries it with --think recorded only (it divides the recorded gaps); leave it out"))
	}
	if fs.Changed("late-after") {
		errs = append(errs, errors.New("--late-after: k6 counts no late requests (its arrival-rate executors count dropped_iterations); leave it out"))
	}
	if fs.Changed("precise-pacing") {
		errs = append(errs, errors.New("--precise-pacing: k6 paces its executors itself; leave it out"))
	}
	if shape.Iterations > 0 && (shape.ArrivalRate || len(shape.Stages) > 0) {
		errs = append(errs, errors.New("--iterations: k6's arrival-rate and ramping executors take no iteration limit; give --duration instead"))
	}
	return errors.Join(errs...)
}
