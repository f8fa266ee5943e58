package convert

import (
	"fmt"
	"io"

	"github.com/replay-dev/replay/pkg/accesslog"
	"github.com/replay-dev/replay/pkg/gor"
	"github.com/replay-dev/replay/pkg/har"
)

// HAR is import har: one HAR file, its entries numbered from 1; entries
// that never reached the network (cache hits, WebSockets, status 0) are
// listed but not refused by --strict.
func HAR() Importer {
	return Importer{Name: "har", What: "entry", Convert: func(ins []Input, w io.Writer, sk *SkipLog) (Result, error) {
		st, err := har.Convert(ins[0].R, w, func(entry int, why string) {
			if har.OffNetwork(why) {
				sk.AddOffNetwork(entry, why)
			} else {
				sk.Add(entry, why)
			}
		})
		return Result{Summary: st.Summary(), Written: st.Written}, err
	}}
}

// Gor is import gor: GoReplay captures, several merged into one by
// timestamp; a skip names its file when there are several.
func Gor() Importer {
	return Importer{Name: "gor", What: "record", Several: true, Convert: func(ins []Input, w io.Writer, sk *SkipLog) (Result, error) {
		srcs := make([]gor.Source, len(ins))
		for i, in := range ins {
			srcs[i] = gor.Source{Name: in.Name, R: in.R}
		}
		skip := sk.AddIn
		if len(ins) == 1 {
			skip = func(_ string, n int, why string) { sk.Add(n, why) }
		}
		st, err := gor.Merge(srcs, w, skip)
		return Result{Summary: st.Summary(), Written: st.Written}, err
	}}
}

// AccessLogFlags are import access-log's own flags, as given.
type AccessLogFlags struct {
	// Format (--format) is combined, common, json, an nginx log_format or
	// an Apache LogFormat; "": json with JSONFields, else sniffed from
	// the first line.
	Format string
	// JSONFields (--json-field) say where a JSON log keeps a role, as
	// ROLE=KEY.
	JSONFields []string
	// Host (--host) is the host of the lines whose log names none.
	Host string
}

// AccessLog is import access-log, reading the log as flags say: the
// command line fills them before the import runs, and the importer's
// Check reads them, each error naming its flag.
func AccessLog(flags *AccessLogFlags) Importer {
	var opt accesslog.Options
	return Importer{Name: "access-log", What: "line",
		Check: func() (err error) {
			opt, err = flags.options()
			return err
		},
		Convert: func(ins []Input, w io.Writer, sk *SkipLog) (Result, error) {
			st, err := accesslog.Convert(ins[0].R, w, opt, sk.Add)
			return Result{Summary: st.Summary(), Written: st.Written, NothingWritten: st.NothingWritten()}, err
		}}
}

// options are the accesslog.Options the flags say.
func (f *AccessLogFlags) options() (accesslog.Options, error) {
	opt := accesslog.Options{Host: f.Host}
	if err := accesslog.CheckHost(f.Host); err != nil {
		return opt, fmt.Errorf("--host: %w", err)
	}
	format := f.Format
	if format == "" && len(f.JSONFields) == 0 {
		return opt, nil // sniffed from the first line
	}
	if format == "" {
		format = "json"
	}
	parsed, err := accesslog.ParseFormat(format)
	if err != nil {
		return opt, fmt.Errorf("--format: %w", err)
	}
	for _, spec := range f.JSONFields {
		if err := parsed.SetJSONField(spec); err != nil {
			return opt, fmt.Errorf("--json-field %w", err)
		}
	}
	opt.Format = parsed
	return opt, nil
}
