package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/run"
	"github.com/replay-dev/replay/pkg/sniff"
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
records, gRPC calls, OUT pairs). Signature lines (a Speedscale snapshot's
answers, whose request is only a signature) are read as pairs and counted:
replay mock serves them, a run skips them. Exits 1, naming file and line, if any line
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
			in, stdinHead := sniff.Keep(std.in)
			f, err := run.OpenFileContext(cmd.Context(), file, in, rrpair.Options{Filter: flt, Signatures: true})
			if err != nil {
				head := sniff.Head(file)
				if file == "-" {
					head = stdinHead()
				}
				if hint := sniff.Hint(file, head); hint != "" {
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
