package main

import (
	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/spf13/cobra"
)

func newReportCmd(io stdio) *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report FILE.json",
		Short: "Re-render a saved run, check its thresholds, or merge runs",
		Long: `Print the text report of a summary JSON written by run --out, check
--threshold expressions against it (exit 99 when one fails), and write its
.hgrm or JUnit XML. "replay report merge" combines the summaries of runs made
side by side, such as the shards of a distributed run.`,
		Example: `  replay report result.json
  replay report result.json --threshold 'p99<200ms' --junit thresholds.xml --hgrm latency.hgrm`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outfile.CheckDistinct(append(o.paths("--out"), outfile.In("FILE.json", args[0]))); err != nil {
				return err
			}
			s, err := report.ReadSummaryFile(args[0])
			if err != nil {
				return err
			}
			if err := o.judge(s); err != nil {
				return err
			}
			outs, err := o.open("--out")
			if err != nil {
				return err
			}
			defer outs.close()
			return outs.write(io.out, nil, s)
		},
	}
	o.addFlags(cmd.Flags(), "out")
	cmd.AddCommand(newMergeCmd(io))
	return cmd
}

func newMergeCmd(io stdio) *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "merge FILE.json FILE.json...",
		Short: "Merge the summaries of runs made side by side, exactly",
		Long: `Merge summary JSONs (run --out) of runs made side by side, such as the shards
of a distributed run, into one: counts add, and the HDR histograms merge, so
the merged percentiles are those of one histogram fed every request. The
merged run spans from the earliest start to the latest end. status_latency_ms
and timings_ms are not kept (they have no histograms to merge).

The merged summary JSON goes to -o, or to standard output without it; the text
report is printed when the JSON goes to a file.`,
		Example: `  replay report merge shard-0.json shard-1.json shard-2.json -o total.json
  replay report merge shard-*.json --threshold 'p99<200ms' > total.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files := o.paths("--output")
			for _, path := range args {
				files = append(files, outfile.In("FILE.json", path))
			}
			if err := outfile.CheckDistinct(files); err != nil {
				return err
			}
			var ss []*report.Summary
			for _, path := range args {
				s, err := report.ReadSummaryFile(path)
				if err != nil {
					return err
				}
				ss = append(ss, s)
			}
			m, err := report.Merge(ss)
			if err != nil {
				return err
			}
			if err := o.judge(m); err != nil {
				return err
			}
			outs, err := o.open("--output")
			if err != nil {
				return err
			}
			defer outs.close()
			if o.out == "" { // the JSON is the output: no text beside it
				o.quiet = true
				return outs.write(nil, io.out, m)
			}
			return outs.write(io.out, nil, m)
		},
	}
	o.addFlags(cmd.Flags(), "output")
	return cmd
}
