package convert

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/export"
)

// Export is the job of replay export vegeta: write fills out (stdout
// when "" or "-") and logs its skips, then the summary it returns and
// what it skipped go to stderr, and out is put in place only when all of
// that succeeded (Finish: a refused export leaves the previous file as it
// was). in is the traffic file read, which out must not be.
func Export(stdout, stderr io.Writer, in, out string, strict bool, write func(io.Writer, *SkipLog) (summary string, err error)) error {
	if err := outfile.CheckDistinct([]outfile.Named{outfile.Out("-o", out), outfile.In("-f", in)}); err != nil {
		return err
	}
	w, err := Create("-o", out, stdout)
	if err != nil {
		return err
	}
	defer w.Abort()
	sk := NewSkipLog("line")
	summary, err := write(w, sk)
	if err != nil {
		return err
	}
	return Finish(stderr, summary, sk, strict, w)
}

// ExportK6 is the job of replay export k6: write fills a script at out
// and its data beside it (FILE.data.json, which the script names as
// dataRef), the summary of what it wrote and skipped goes to stderr, and
// both are put in place when complete and not refused by strict: the data
// first, so that the script never names data not there. in is the
// traffic file read, which neither may be.
func ExportK6(stderr io.Writer, out, in string, strict bool, write func(script, data io.Writer, dataRef string, sk *SkipLog) (export.Stats, error)) error {
	dataPath := strings.TrimSuffix(out, filepath.Ext(out)) + ".data.json"
	if err := outfile.CheckDistinct([]outfile.Named{outfile.Out("-o", out), outfile.Out("-o (its data)", dataPath), outfile.In("-f", in)}); err != nil {
		return err
	}
	script, err := Create("-o", out, nil)
	if err != nil {
		return err
	}
	defer script.Abort()
	data, err := Create("-o", dataPath, nil)
	if err != nil {
		return err
	}
	defer data.Abort()
	sk := NewSkipLog("line")
	st, err := write(script, data, "./"+filepath.Base(dataPath), sk)
	if err != nil {
		return err
	}
	if st.Warning != "" {
		fmt.Fprintf(stderr, "replay: warning: %s\n", st.Warning)
	}
	summary := fmt.Sprintf("wrote %s and %s: %d iterations, %d requests%s%s", out, dataPath, st.Iterations, st.Requests, st.SessionsWritten(), st.GRPCSkipped())
	if st.Env != "" {
		summary += "; the script reads " + st.Env + " from the environment (k6 run -e NAME=...)"
	}
	return Finish(stderr, summary, sk, strict, data, script)
}
