package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/replay-dev/replay/internal/run"
	"github.com/replay-dev/replay/pkg/accesslog"
	"github.com/replay-dev/replay/pkg/gor"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/spf13/cobra"
)

func newInspectCmd(std stdio) *cobra.Command {
	var file string
	var asJSON bool
	var filter run.Filter
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Validate a traffic file and summarize it",
		Long: `Check every line of FILE ("-" for standard input) as run would, and summarize
it: pairs, sessions, iterations, time span, methods, hosts, endpoints (the
table reports use), recorded status codes, HTTP versions and body bytes,
and the valid lines a run skips, by kind (another l7protocol, response-only
records, gRPC calls, OUT pairs). Exits 1, naming file and line, if any line
is bad. The filters of run (--keep, --drop, --from, --to, --sample, --seed)
show what a run would replay.`,
		Example: `  replay inspect traffic.jsonl
  replay inspect --json traffic.jsonl | jq .endpoints`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if file != "" && file != args[0] {
					return fmt.Errorf("give the file once: as an argument or with --file")
				}
				file = args[0]
			}
			if file == "" {
				return fmt.Errorf("inspect: want a traffic file (or - for standard input)")
			}
			flt, err := filter.Compile()
			if err != nil {
				return err
			}
			in := &prefixKeeper{r: std.in}
			f, err := run.OpenFileContext(cmd.Context(), file, in, rrpair.Options{Filter: flt})
			if err != nil {
				if hint := importHint(file, in.prefix); hint != "" {
					return errors.New(hint)
				}
				return err
			}
			defer f.Close()
			st, err := f.Inspect()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(std.out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			return report.WriteInspect(std.out, st)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "traffic `FILE` (or give it as the argument)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	filter = run.DefaultOptions().Filter
	addFilterFlags(cmd.Flags(), &filter)
	return cmd
}

// prefixKeeper passes reads through and keeps the first bytes read, so
// that a file from standard input that is no traffic file can still be
// told apart.
type prefixKeeper struct {
	r      io.Reader
	prefix []byte
}

func (p *prefixKeeper) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if room := hintBytes - len(p.prefix); room > 0 {
		p.prefix = append(p.prefix, b[:min(n, room)]...)
	}
	return n, err
}

// hintBytes is how much of a file importHint looks at.
const hintBytes = 64 << 10

// importHint says which import converts file, when its first bytes (from
// standard input: prefix) are a HAR, a GoReplay capture or an access log
// rather than RRPairs; else "".
func importHint(file string, prefix []byte) string {
	if file != "-" {
		prefix = make([]byte, hintBytes)
		f, err := os.Open(file)
		if err != nil {
			return ""
		}
		n, _ := io.ReadFull(f, prefix)
		f.Close()
		prefix = prefix[:n]
	}
	use := func(what, cmd string) string {
		return fmt.Sprintf("%s is %s, not a traffic file (RRPair JSON Lines): convert it first: replay %s %s -o traffic.jsonl", file, what, cmd, file)
	}
	switch {
	case looksHAR(prefix):
		return use("a HAR file", "import har")
	case gor.Looks(prefix):
		return use("a GoReplay capture", "import gor")
	}
	inner, gzipped := prefix, len(prefix) >= 2 && prefix[0] == 0x1f && prefix[1] == 0x8b
	if gzipped {
		zr, err := gzip.NewReader(bytes.NewReader(prefix))
		if err != nil {
			return ""
		}
		inner = make([]byte, hintBytes)
		n, _ := io.ReadFull(zr, inner)
		inner = inner[:n]
	}
	line, _, _ := bytes.Cut(bytes.TrimPrefix(inner, []byte("\xef\xbb\xbf")), []byte("\n"))
	if format, ok := accesslog.Looks(line); ok {
		cmd := "import access-log"
		switch format {
		case "json":
			cmd += " --format json"
		case "custom":
			cmd += " --format 'its log_format string'"
		}
		what := "an access log (" + format + ")"
		if format == "custom" {
			what = "an access log (a custom log_format)"
		}
		return use(what, cmd)
	}
	if gzipped {
		return fmt.Sprintf("%s is gzip-compressed: replay reads traffic files uncompressed (gunzip it first); import gor and import access-log read .gz files as they are", file)
	}
	return ""
}

// looksHAR says whether b starts a JSON object whose first key is "log",
// as HAR files do (after a byte-order mark, which some writers put).
func looksHAR(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	tok, err := dec.Token()
	return err == nil && tok == "log"
}
