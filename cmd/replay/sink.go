package main

import (
	"context"
	"fmt"
	"time"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/run"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newSinkCmd(io stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	var o run.Events
	var duration time.Duration
	var out string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "sink",
		Short: "Receive events on their way out of the SUT, standalone, and write a mergeable summary",
		Long: `Run the sinks of replay run on their own: receive the events a SUT delivers
(--sink-http) or publishes to Redis (--sink-redis), time each from the send
time its correlation ID carries, until interrupted or --duration, then
print the end-to-end section and write it (--out) as a summary that
replay report merge adds to the runs' summaries: with the runs' accepted
events, the merge works out what is pending (a sink alone cannot know that
an event will never come, and says so: "loss_known": false). Use it when the runs are
sharded over pods and the events come back to one place; clocks must be
synchronised.`,
		Example: `  replay sink --sink-http :9090 --out sink.json
  replay run -f traffic.jsonl --target http://api:8080 --correlate header --out run.json
  replay report merge run.json sink.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if err := run.CheckSinks(o); err != nil {
				return err
			}
			// The summary file is created first: a bad path must not
			// cost a session.
			files, err := outfile.CreateSet(outfile.Output[*report.Summary]{Flag: "--out", Path: out, Write: report.WriteJSON})
			if err != nil {
				return err
			}
			defer files.Close()
			ctx := cmd.Context()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			sum, err := run.ReceiveEvents(ctx, o, log)
			if err != nil {
				return err
			}
			if !quiet {
				if err := report.WriteE2EText(io.out, sum); err != nil {
					return err
				}
			}
			if err := files.Write(sum); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	addSinkFlags(fs, &o)
	fs.DurationVar(&duration, "duration", 0, "stop after this long (default: when interrupted)")
	fs.StringVar(&out, "out", "", "write the summary JSON (mergeable with the runs') to `FILE`")
	fs.BoolVarP(&quiet, "quiet", "q", false, "do not print the end-to-end section")
	return cmd
}
