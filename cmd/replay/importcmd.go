package main

import (
	"github.com/replay-dev/replay/pkg/convert"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newImportCmd(std stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert a HAR, a GoReplay capture or an access log to RRPairs",
	}
	cmd.AddCommand(
		importer(std, convert.HAR(), importSpec{
			use:   "har FILE.har",
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
		}),
		importer(std, convert.Gor(), importSpec{
			use:   "gor FILE.gor...",
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
		}),
		accessLogImporter(std),
	)
	return cmd
}

// accessLogImporter is import access-log.
func accessLogImporter(std stdio) *cobra.Command {
	var flags convert.AccessLogFlags
	return importer(std, convert.AccessLog(&flags), importSpec{
		use:   "access-log FILE",
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
			fs.StringVar(&flags.Format, "format", "", "the log's `FORMAT`: combined (reads common too), common, json, an nginx log_format or an Apache LogFormat string (default: json when the first line is an object, else combined)")
			fs.StringArrayVar(&flags.JSONFields, "json-field", nil, "a JSON log's field ROLE is at KEY, as in `ROLE=KEY` (roles: request, method, uri, time, status, host, duration, scheme, protocol); repeatable")
			fs.StringVar(&flags.Host, "host", "", "the `HOST[:PORT]` of the lines whose log names none (else they replay with --target)")
		},
	})
}

// importSpec is the cobra side of one import subcommand: its texts and
// its own flags.
type importSpec struct {
	use, short, long, example string
	flags                     func(*pflag.FlagSet)
}

// importer is an import subcommand: FILE (or -f; - for stdin) through
// imp to -o (or stdout), as the import job (convert.Import) says.
func importer(std stdio, imp convert.Importer, spec importSpec) *cobra.Command {
	job := convert.Job{Stdin: std.in, Stdout: std.out, Stderr: std.err}
	var file string
	cmd := &cobra.Command{
		Use: spec.use, Short: spec.short, Long: spec.long, Example: spec.example,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			job.Inputs = args
			if file != "" {
				job.Inputs = append([]string{file}, args...)
			}
			return convert.Import(imp, job)
		},
	}
	if imp.Several {
		cmd.Args = cobra.ArbitraryArgs
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the `FILE` to import (- for standard input)")
	cmd.Flags().StringVarP(&job.Output, "output", "o", "", "write the RRPairs to `FILE` (default: standard output)")
	cmd.Flags().StringVar(&job.Skipped, "skipped", "", "write every skipped "+imp.What+" to `FILE`, as JSON lines {\"index\": N, \"reason\": \"...\"}")
	cmd.Flags().BoolVar(&job.Strict, "strict", false, "fail when any "+imp.What+" cannot be converted")
	if spec.flags != nil {
		spec.flags(cmd.Flags())
	}
	return cmd
}
