package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/replay-dev/replay/internal/version"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// release is the version a release build sets: -ldflags "-X main.release=v1.2.3".
var release = "dev"

// stdio is where a command reads and writes; tests pass buffers.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// newRootCmd builds the command tree. It holds no package-level state, so
// tests run commands in-process.
func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	io := stdio{in: stdin, out: stdout, err: stderr}
	var logOpts logOptions
	root := &cobra.Command{
		Use:   "replay",
		Short: "Replay recorded HTTP traffic against a system under test and report how it held up",
		Long: `replay replays recorded request/response pairs (RRPair JSON Lines) against a
system under test at the load you ask for, and reports latency, throughput and
errors honestly.

  replay demo                                   # try it: a built-in SUT and traffic
  replay inspect traffic.jsonl                  # validate and summarize a file
  replay run -f traffic.jsonl --target http://127.0.0.1:8080 --vus 50 --duration 1m
  replay find-max -f traffic.jsonl --target http://127.0.0.1:8080 --threshold 'p99<200ms'
  replay record --listen :8080 --upstream http://svc:80 -o traffic.jsonl
  replay mock -f outbound.jsonl --listen 127.0.0.1:8888 --ca-out ./ca   # stand in for the dependencies
  replay import har session.har -o traffic.jsonl
  replay export k6 -f traffic.jsonl --target http://api:8080 -o load.js`,
		Version:       version.Get(release).String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Flags can also come from the environment, as container manifests
		// usually configure: REPLAY_VUS=50 is --vus 50. A flag on the
		// command line wins.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return flagsFromEnv(cmd.Flags(), os.LookupEnv)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&logOpts.level, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&logOpts.format, "log-format", "auto", "log format: auto (console on a terminal, else JSON), console, json")
	logger := func() (zerolog.Logger, error) { return logOpts.logger(stderr) }
	root.AddCommand(
		newRunCmd(io, logger),
		newFindMaxCmd(io, logger),
		newInspectCmd(io),
		newDemoCmd(io, logger),
		newReportCmd(io),
		newSinkCmd(io, logger),
		newExportCmd(io),
		newImportCmd(io),
		newRecordCmd(io, logger),
		newMockCmd(io, logger),
		&cobra.Command{Use: "version", Short: "Print replay's version, VCS revision, Go version, OS and architecture", Args: cobra.NoArgs,
			Run: func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), root.Version) }},
	)
	return root
}

// logOptions are the logging flags.
type logOptions struct {
	level, format string
}

// logger builds the zerolog logger: human-readable on a terminal, JSON lines
// otherwise (CI, a pod).
func (o logOptions) logger(w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(o.level)
	if err != nil || o.level == "" {
		return zerolog.Nop(), flagError("--log-level", "debug, info, warn or error", o.level)
	}
	console := false
	switch o.format {
	case "auto":
		console = isTerminal(w)
	case "console":
		console = true
	case "json":
	default:
		return zerolog.Nop(), flagError("--log-format", "auto, console or json", o.format)
	}
	if console {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05"}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}

// flagsFromEnv sets each flag not given on the command line from
// REPLAY_<NAME> (upper case, - as _), when set.
func flagsFromEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := "REPLAY_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookup(name); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s: %w", name, serr)
			}
		}
	})
	return err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
