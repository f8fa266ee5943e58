package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/accesslog"
	"github.com/replay-dev/replay/pkg/gor"
	"github.com/replay-dev/replay/pkg/har"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newImportCmd(std stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert a HAR, a GoReplay capture or an access log to RRPairs",
	}
	cmd.AddCommand(
		importer(std, importSpec{
			use: "har FILE.har", what: "entry",
			short: "Convert a HAR 1.2 file (a browser's or a proxy's export) to RRPairs",
			long: `Convert a HAR 1.2 file to RRPairs: entries ordered by startedDateTime, pages
as sessions, the URL's path and query as recorded, HTTP/2 pseudo-headers and
hop-by-hop headers dropped, a recorded Content-Length kept in place (the
replay writes the length of the body it sends), postData.text (or its
params, rebuilt) as the body, the response's content.text (base64 when so
encoded) kept for --compare. HTTP/2 and 3 entries keep their version; a run
that sends them as HTTP/1.1 counts them as downgraded. Entries that never
reached the network (cache hits, WebSockets, status 0) and entries that
cannot be converted are skipped, counted by reason, and reported on stderr
with their number.`,
			example: "  replay import har session.har -o traffic.jsonl",
			convert: func(ins []importInput, w io.Writer, sk *skipped) (converted, error) {
				st, err := har.Convert(ins[0].r, w, func(entry int, why string) {
					if har.OffNetwork(why) {
						sk.addNotTraffic(entry, why)
					} else {
						sk.add(entry, why)
					}
				})
				return converted{st.Summary(), st.Written, ""}, err
			},
		}),
		importer(std, importSpec{
			use: "gor FILE.gor...", what: "record", several: true,
			short: "Convert GoReplay captures (.gor, .gor.gz) to RRPairs",
			long: `Convert GoReplay capture files to RRPairs: each request with its original
response (replayed responses are counted, not kept), names, case and order
of headers as captured, chunked bodies de-chunked, in request order (by the
request record's timestamp). Several files (GoReplay's chunks,
requests_0.gor, requests_1.gor, ..., or several instances' captures; a glob
pattern is expanded when the shell did not) are merged by timestamp into
one. Gzip-compressed captures are read as they are. A request without a
Host header is kept: it replays with --target. Records that cannot be
converted are skipped, reported on stderr with their file and number.`,
			example: `  replay import gor requests_0.gor.gz -o traffic.jsonl
  replay import gor 'capture/requests_*.gor' -o traffic.jsonl`,
			convert: func(ins []importInput, w io.Writer, sk *skipped) (converted, error) {
				srcs := make([]gor.Source, len(ins))
				for i, in := range ins {
					srcs[i] = gor.Source{Name: in.name, R: in.r}
				}
				skip := sk.addIn
				if len(ins) == 1 {
					skip = func(_ string, n int, why string) { sk.add(n, why) }
				}
				st, err := gor.Merge(srcs, w, skip)
				return converted{st.Summary(), st.Written, ""}, err
			},
		}),
		accessLogImporter(std),
	)
	return cmd
}

// accessLogImporter is import access-log.
func accessLogImporter(std stdio) *cobra.Command {
	var format, host string
	var fields []string
	var opt accesslog.Options
	return importer(std, importSpec{
		use: "access-log FILE", what: "line",
		short: "Convert a web server's access log (nginx, Apache, JSON) to RRPairs",
		long: `Convert an access log to RRPairs: nginx's and Apache's combined and common
formats, an nginx log_format string (--format '$remote_addr [$time_local]
"$request" $status'), an Apache LogFormat (--format '%h %t "%r" %>s %D'),
or JSON lines (--format json; nginx's escape=json logs read as they are,
other key names with --json-field). Each request
line becomes a pair with its method, its raw target (nginx's \xHH escapes
undone), its time, its status and, when the log has it ($http_host, $host)
or --host gives it, its host. A log keeps no headers and no bodies: the
pairs have none. Times that count whole seconds ($time_local) are spread
evenly within their second, so that --pace recorded keeps the order and
the rate; a log out of time order is sorted. Lines that hold no request
("-", the bytes of a TLS handshake) are counted; lines that cannot be read
are skipped, reported on stderr with their number. Gzip-compressed logs
are read as they are.`,
		example: `  replay import access-log /var/log/nginx/access.log --host shop.example -o traffic.jsonl
  replay import access-log access.json --format json --json-field time=ts -o traffic.jsonl`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&format, "format", "", "the log's `FORMAT`: combined (reads common too), common, json, an nginx log_format or an Apache LogFormat string (default: json when the first line is an object, else combined)")
			fs.StringArrayVar(&fields, "json-field", nil, "a JSON log's field ROLE is at KEY, as in `ROLE=KEY` (roles: request, method, uri, time, status, host, duration, scheme, protocol); repeatable")
			fs.StringVar(&host, "host", "", "the `HOST[:PORT]` of the lines whose log names none (else they replay with --target)")
		},
		check: func() error {
			opt = accesslog.Options{Host: host}
			if err := accesslog.CheckHost(host); err != nil {
				return fmt.Errorf("--host: %w", err)
			}
			if format == "" && len(fields) == 0 {
				return nil // sniffed from the first line
			}
			if format == "" {
				format = "json"
			}
			f, err := accesslog.ParseFormat(format)
			if err != nil {
				return fmt.Errorf("--format: %w", err)
			}
			for _, spec := range fields {
				if err := f.SetJSONField(spec); err != nil {
					return fmt.Errorf("--json-field %w", err)
				}
			}
			opt.Format = f
			return nil
		},
		convert: func(ins []importInput, w io.Writer, sk *skipped) (converted, error) {
			st, err := accesslog.Convert(ins[0].r, w, opt, sk.add)
			return converted{st.Summary(), st.Written, st.NothingWritten()}, err
		},
	})
}

// importSpec is one import subcommand.
type importSpec struct {
	use, short, long, example string
	what                      string // what the converter's skip numbers: "entry", "record", "line"
	several                   bool   // takes several files (and glob patterns) to merge
	flags                     func(*pflag.FlagSet)
	check                     func() error // the flags, before any file is opened
	convert                   func(ins []importInput, w io.Writer, sk *skipped) (converted, error)
}

// importInput is one file to import.
type importInput struct {
	name string // as given, for messages
	r    io.Reader
}

// converted is what a converter says it did.
type converted struct {
	summary string
	written int    // pairs written
	empty   string // why nothing was written, when the converter knows better than its skips
}

// importer is an import subcommand: FILE (or -f; - for stdin) through
// convert to -o (or stdout), what it skipped on stderr and in --skipped.
// The -o file is put in place only when the import succeeded: never
// after an error, however late, nor when no pair was written, nor when
// --strict refused a skip.
func importer(std stdio, spec importSpec) *cobra.Command {
	var file, out, skippedOut string
	var strict bool
	cmd := &cobra.Command{
		Use: spec.use, Short: spec.short, Long: spec.long, Example: spec.example,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			names := args
			if file != "" {
				names = append([]string{file}, args...)
			}
			if len(names) == 0 {
				return fmt.Errorf("name the file to import (an argument, or -f; - for standard input)")
			}
			if spec.several {
				var err error
				if names, err = expandInputs(names); err != nil {
					return err
				}
			} else if len(names) > 1 {
				return fmt.Errorf("give the file once: as an argument or with -f")
			}
			return runImport(std, spec, names, out, skippedOut, strict)
		},
	}
	if spec.several {
		cmd.Args = cobra.ArbitraryArgs
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the `FILE` to import (- for standard input)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the RRPairs to `FILE` (default: standard output)")
	cmd.Flags().StringVar(&skippedOut, "skipped", "", "write every skipped "+spec.what+" to `FILE`, as JSON lines {\"index\": N, \"reason\": \"...\"}")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail when any "+spec.what+" cannot be converted")
	if spec.flags != nil {
		spec.flags(cmd.Flags())
	}
	return cmd
}

// expandInputs expands the glob patterns among names that name no file
// (a shell that did not expand them, or quotes), and refuses a file
// given twice.
func expandInputs(names []string) ([]string, error) {
	var files []string
	for _, name := range names {
		if _, err := os.Stat(name); err == nil || name == "-" || !strings.ContainsAny(name, "*?[") {
			files = append(files, name)
			continue
		}
		matches, err := filepath.Glob(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s: no file matches", name)
		}
		files = append(files, matches...)
	}
	for i, a := range files {
		if a == "-" && len(files) > 1 {
			return nil, fmt.Errorf("- (standard input) is read alone, not with other files")
		}
		for _, b := range files[:i] {
			if outfile.SameFile(a, b) {
				return nil, fmt.Errorf("%s: given twice (as %s too)", a, b)
			}
		}
	}
	return files, nil
}

// runImport converts the files named to out (stdout when empty or "-"),
// the skips to skippedOut when given, each written whole or not at all.
func runImport(std stdio, spec importSpec, names []string, out, skippedOut string, strict bool) error {
	paths := []outfile.Named{outfile.Out("-o", out), outfile.Out("--skipped", skippedOut)}
	for _, name := range names {
		paths = append(paths, outfile.In("-f", name))
	}
	if skippedOut == "-" && (out == "" || out == "-") {
		return fmt.Errorf("--skipped -: standard output carries the pairs; give --skipped a file, or -o")
	}
	if err := outfile.CheckDistinct(paths); err != nil {
		return err
	}
	if spec.check != nil {
		if err := spec.check(); err != nil {
			return err
		}
	}
	ins, closeIns, err := openInputs(names, std.in)
	if err != nil {
		return err
	}
	defer closeIns()
	sk := &skipped{what: spec.what}
	w, commit, abort, err := openOut("-o", out, std.out)
	if err != nil {
		return err
	}
	defer abort()
	commitSkipped := func() error { return nil }
	if skippedOut != "" {
		f, commit, abort, err := openOut("--skipped", skippedOut, std.out)
		if err != nil {
			return err
		}
		defer abort()
		skw := bufio.NewWriterSize(f, 64<<10)
		sk.jsonl = skw
		commitSkipped = func() error { return errors.Join(skw.Flush(), commit()) }
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	res, err := spec.convert(ins, bw, sk)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		if len(ins) == 1 && !strings.HasPrefix(err.Error(), ins[0].name+":") {
			err = fmt.Errorf("%s: %w", ins[0].name, err)
		}
		return err
	}
	fmt.Fprintf(std.err, "replay: %s\n", res.summary)
	strictErr := sk.report(std.err, strict)
	if err := commitSkipped(); err != nil { // complete: the skips explain a failure below
		return fmt.Errorf("--skipped: %w", err)
	}
	if res.written == 0 {
		return noPairs(sk, res.empty)
	}
	if strictErr != nil {
		return strictErr
	}
	if err := commit(); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	return nil
}

// openInputs opens the files named ("-": stdin); close closes them.
func openInputs(names []string, stdin io.Reader) (ins []importInput, close func(), err error) {
	var files []*os.File
	close = func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, name := range names {
		if name == "-" {
			ins = append(ins, importInput{"standard input", stdin})
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			close()
			return nil, nil, err
		}
		files = append(files, f)
		ins = append(ins, importInput{name, f})
	}
	return ins, close, nil
}

// noPairs says why an import wrote nothing.
func noPairs(sk *skipped, why string) error {
	switch {
	case why != "":
	case sk.n > 0:
		why = fmt.Sprintf("%d %s skipped, and nothing else to write (see above)", sk.n, sk.plural())
	default:
		why = "the input holds none"
	}
	return fmt.Errorf("no pair written: %s", why)
}

// openOut opens an output file, whole or nothing (outfile); "" and "-"
// are stdout, written as it goes.
func openOut(flag, path string, stdout io.Writer) (w io.Writer, commit func() error, abort func(), err error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, func() {}, nil
	}
	f, err := outfile.Create(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", flag, err)
	}
	return f, f.Commit, f.Abort, nil
}
