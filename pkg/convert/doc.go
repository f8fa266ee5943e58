// Package convert holds the rules every converting command shares, so
// that each importer is only its format: the import job (Import), the
// export jobs (Export, ExportK6), and the output, the skip log and the
// ending (Create, SkipLog, Finish) both use. "Converting command" is
// docs/design.md's word for import and export; "import" itself is a Go
// keyword.
//
// The rules:
//   - the skip log (SkipLog): skips counted, the first five shown on
//     stderr with their place, --skipped FILE gets every one as a JSON
//     line (complete even when the import then fails), --skipped - is
//     refused when the pairs go to standard output;
//   - --strict fails on a skip that lost traffic, not on items that were
//     never traffic (a HAR's cache hits: AddOffNetwork);
//   - every output is written whole or not at all (Output, over
//     internal/outfile), standard output as it goes, and no output may be
//     an input (outfile.CheckDistinct);
//   - no pair written is an error that says why;
//   - one summary line on stderr (the format package's Stats.Summary);
//   - inputs: glob patterns a shell left unexpanded, a file given twice
//     refused, "-" (standard input) alone; a one-file error starts with
//     the file's name;
//   - an import that converts nothing from a file the sniffer (pkg/sniff)
//     takes for another format names the import to use.
//
// An importer plugs in with an Importer: its subcommand's name (as the
// sniffer names it), what its skips number, whether it reads several
// inputs, a check of its own options, and a Convert that calls the format
// package. The packet-capture importer (Pcap, over pkg/pcap) is the
// fullest example:
//
//	func Pcap(flags *PcapFlags) Importer {
//		var opt pcap.Options
//		return Importer{Name: "pcap", What: "packet", Several: true,
//			Check: func() (err error) { opt, err = flags.options(); return err },
//			Convert: func(ins []Input, w io.Writer, sk *SkipLog) (Result, error) {
//				st, err := pcap.Convert(sources(ins), w, opt, skipTo(sk))
//				return Result{Summary: st.Summary(), Written: st.Written}, err
//			}}
//	}
//
// with pcap.Looks and a case in sniff.Sniff, so that inspect and the
// other imports point at it; cmd/replay adds the subcommand, its texts
// and its flags, and calls Import.
package convert
