package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/replay-dev/replay/pkg/convert"
	"github.com/replay-dev/replay/pkg/export"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/run"
	"github.com/spf13/cobra"
)

func newExportCmd(std stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write recorded traffic as a k6 script or vegeta targets",
	}
	var file, out, transforms string
	var strict, embed bool
	var thresholds []string
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
with "; ". --transforms runs in the script, at run time. What k6 cannot do
is refused, not dropped: --pace recorded, --late-after, --precise-pacing,
--iterations with a rate or stages, --speed without --think recorded, a
--threshold on a step, fresh, regular expressions. gRPC pairs are skipped.`,
		Example: `  replay export k6 -f traffic.jsonl --target http://127.0.0.1:8080 --vus 50 --duration 1m -o load.js
  replay export k6 -f t.jsonl --transforms t.yaml --threshold 'status.5xx<0.1%' -o load.js
  k6 run --no-usage-report -e REPLAY_JWT_KEY=s3cret load.js`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			markGiven(cmd.Flags(), &load)
			if out == "" || out == "-" {
				return fmt.Errorf("-o: export k6 writes a script and its data beside it: give -o FILE.js")
			}
			typed, err := load.Typed()
			if err != nil {
				return err
			}
			if _, err := export.K6LoadOf(typed, cmd.Flags().Changed); err != nil { // before the file is read
				return err
			}
			f, err := openFile(args, load.Target)
			if err != nil {
				return err
			}
			defer f.Close()
			tr, checks, err := export.K6Extras(f, transforms, embed, thresholds)
			if err != nil {
				return err
			}
			// A rate in requests a second becomes k6's iterations by the requests an iteration holds.
			k6Load, _ := export.K6LoadOf(typed.InIterations(f.PerIteration()), cmd.Flags().Changed)
			return convert.ExportK6(std.err, out, file, strict, func(script, data io.Writer, dataRef string, sk *convert.SkipLog) (export.Stats, error) {
				return export.K6(script, data, dataRef, f, export.K6Options{Target: load.Target, Source: filepath.Base(file), Load: k6Load, Transforms: tr, Checks: checks}, sk.Add)
			})
		},
	}
	k6.Flags().StringVarP(&file, "file", "f", "", "traffic `FILE` (RRPair JSON Lines)")
	k6.Flags().StringVarP(&out, "output", "o", "", "the script `FILE.js` (its data goes beside it, FILE.data.json)")
	k6.Flags().BoolVar(&strict, "strict", false, "fail when any pair cannot be exported")
	k6.Flags().StringVar(&transforms, "transforms", "", "rewrite each request inside the script at run time, by the transforms of `FILE` (as replay run)")
	k6.Flags().BoolVar(&embed, "embed-secrets", false, "write the JWT keys of --transforms into the script (else it reads them from REPLAY_JWT_KEY...)")
	k6.Flags().StringArrayVar(&thresholds, "threshold", nil, "carry `EXPR` into k6 checks and thresholds: status.202>99%, 'POST /events: status.5xx<0.1%', errors<1% (repeatable)")
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
			return convert.Export(std.out, std.err, file, out, strict, func(w io.Writer, sk *convert.SkipLog) (string, error) {
				st, err := export.Vegeta(w, f, target, sk.Add)
				return fmt.Sprintf("wrote %d targets%s", st.Requests, st.GRPCSkipped()), err
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
