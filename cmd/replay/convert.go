package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/internal/run"
	"github.com/replay-dev/replay/pkg/export"
	"github.com/replay-dev/replay/pkg/gor"
	"github.com/replay-dev/replay/pkg/har"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/spf13/cobra"
)

// skipped counts what a converter could not convert, keeps the first few,
// and says so on stderr; with --strict any of it fails the command.
type skipped struct {
	what  string // "line", "entry", "record"
	n     int
	first []string
}

func (s *skipped) add(where int, why string) {
	s.n++
	if len(s.first) < 5 {
		s.first = append(s.first, fmt.Sprintf("%s %d: %s", s.what, where, why))
	}
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
	if strict {
		return fmt.Errorf("--strict: %d %s could not be converted", s.n, s.plural())
	}
	return nil
}

// writeOut runs write into -o (or stdout), puts it in place (an -o file
// is replaced only once complete), and then says on stderr what write
// returned and what was skipped (an error with strict). in is the file
// read, which -o must not be.
func writeOut(std stdio, in, out string, sk *skipped, strict bool, write func(io.Writer) (summary string, err error)) error {
	if out == "" || out == "-" {
		summary, err := write(std.out)
		if err != nil {
			return err
		}
		fmt.Fprintf(std.err, "replay: %s\n", summary)
		return sk.report(std.err, strict)
	}
	if err := checkDistinct([]namedPath{{"-o", out, true}, {"-f", in, false}}); err != nil {
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
	if err := f.Commit(); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	fmt.Fprintf(std.err, "replay: %s\n", summary)
	return sk.report(std.err, strict)
}

// writeK6Files has write fill a k6 script at out and its data beside it,
// and puts both in place when complete; in is the traffic file, which
// neither may be. It returns the data's path.
func writeK6Files(out, in string, write func(script, data io.Writer, dataRef string) error) (string, error) {
	dataPath := strings.TrimSuffix(out, filepath.Ext(out)) + ".data.json"
	if err := checkDistinct([]namedPath{{"-o", out, true}, {"-o (its data)", dataPath, true}, {"-f", in, false}}); err != nil {
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
--rate (constant-arrival-rate), --stages (ramping-vus, or
ramping-arrival-rate with a rate). k6 canonicalizes header names.`,
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
			f, err := openFile(args, load.Target)
			if err != nil {
				return err
			}
			defer f.Close()
			k6Load := export.K6Load{VUs: shape.VUs, MaxVUs: shape.MostVUs, Duration: shape.Duration, Iterations: shape.Iterations,
				RateStages: shape.ArrivalRate, Rate: shape.Rate}
			for _, s := range shape.Stages {
				k6Load.Stages = append(k6Load.Stages, export.K6Stage{Duration: s.Duration, Target: s.Target})
			}
			sk := &skipped{what: "line"}
			var iters, reqs int
			dataPath, err := writeK6Files(out, file, func(script, data io.Writer, dataRef string) (err error) {
				iters, reqs, err = export.K6(script, data, dataRef, f, load.Target, filepath.Base(file), k6Load, sk.add)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(std.err, "replay: wrote %s and %s: %d iterations, %d requests\n", out, dataPath, iters, reqs)
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
				n, err := export.Vegeta(w, f, target, sk.add)
				return fmt.Sprintf("wrote %d targets", n), err
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

func newImportCmd(std stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert a HAR or a GoReplay capture to RRPairs",
	}
	cmd.AddCommand(
		importer(std, "har FILE.har", "Convert a HAR 1.2 file (a browser's or a proxy's export) to RRPairs",
			`Convert a HAR 1.2 file to RRPairs: entries ordered by startedDateTime, pages
as sessions, the URL's path and query as recorded, HTTP/2 pseudo-headers and
hop-by-hop headers dropped, a recorded Content-Length kept in place (the
replay writes the length of the body it sends), postData.text (or its
params, rebuilt) as the body, the response's content.text (base64 when so
encoded) kept for --compare. HTTP/2 and 3 entries keep their version; a run
that sends them as HTTP/1.1 counts them as downgraded. Entries that never
reached the network (cache hits, WebSockets, status 0) and entries that
cannot be converted are skipped, counted by reason, and reported on stderr
with their number.`,
			"  replay import har session.har -o traffic.jsonl", "entry",
			func(r io.Reader, w io.Writer, skip func(int, string)) (string, error) {
				st, err := har.Convert(r, w, skip)
				return harSummary(&st), err
			}),
		importer(std, "gor FILE.gor", "Convert a GoReplay capture (.gor, .gor.gz) to RRPairs",
			`Convert a GoReplay capture file to RRPairs: each request with its original
response (replayed responses are counted, not kept), names, case and order
of headers as captured, chunked bodies de-chunked. Gzip-compressed captures
are read as they are. Records that cannot be converted are skipped,
reported on stderr with their number.`,
			"  replay import gor requests_0.gor.gz -o traffic.jsonl", "record",
			func(r io.Reader, w io.Writer, skip func(int, string)) (string, error) {
				st, err := gor.Convert(r, w, skip)
				return fmt.Sprintf("%d records, %d pairs written, %d replayed responses not kept", st.Records, st.Written, st.Replayed), err
			}),
	)
	return cmd
}

// importer is an import subcommand: FILE (or -f; - for stdin) through
// convert to -o (or stdout), what it skipped on stderr.
func importer(std stdio, use, short, long, example, what string, convert func(io.Reader, io.Writer, func(int, string)) (string, error)) *cobra.Command {
	var file, out string
	var strict bool
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				file = args[0]
			}
			if file == "" {
				return fmt.Errorf("name the file to import (an argument, or -f; - for standard input)")
			}
			in, name := std.in, "standard input"
			if file != "-" {
				name = file
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			sk := &skipped{what: what}
			return writeOut(std, file, out, sk, strict, func(w io.Writer) (string, error) {
				summary, err := convert(in, w, sk.add)
				if err != nil {
					err = fmt.Errorf("%s: %w", name, err)
				}
				return summary, err
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the `FILE` to import (- for standard input)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the RRPairs to `FILE` (default: standard output)")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail when any "+what+" cannot be converted")
	return cmd
}

// harSummary is the import summary of a HAR: what was written, skipped by
// reason, and kept with a change.
func harSummary(st *har.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries, %d pairs written (%d recorded as HTTP/2 or 3)", st.Entries, st.Written, st.HTTP2)
	if n := st.SkippedTotal(); n > 0 {
		keys := slices.Sorted(maps.Keys(st.Skipped))
		for i, k := range keys {
			keys[i] = fmt.Sprintf("%s %d", k, st.Skipped[k])
		}
		fmt.Fprintf(&b, "; skipped %d: %s", n, strings.Join(keys, ", "))
	}
	var dropped []string
	for _, d := range []struct {
		n    int
		what string
	}{{st.BadHeaders, "request header field"}, {st.AnswerHeaders, "answer header field"}, {st.AnswersDropped, "recorded answer"}} {
		if d.n > 0 {
			dropped = append(dropped, plural(d.n, d.what))
		}
	}
	if len(dropped) > 0 {
		fmt.Fprintf(&b, "; dropped %s", strings.Join(dropped, ", "))
	}
	if n := len(st.NoBody); n > 0 {
		list := make([]string, 0, 5)
		for _, e := range st.NoBody[:min(n, 5)] {
			list = append(list, strconv.Itoa(e))
		}
		more := ""
		if n > 5 {
			more = fmt.Sprintf(" and %d more", n-5)
		}
		fmt.Fprintf(&b, "; %s not captured, sent empty (entries %s%s)", plural(n, "body"), strings.Join(list, ", "), more)
	}
	return b.String()
}

// plural is "1 body", "2 bodies", "3 answer header fields".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}
