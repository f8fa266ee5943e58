package convert

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/replay-dev/replay/pkg/accesslog"
	"github.com/replay-dev/replay/pkg/gor"
	"github.com/replay-dev/replay/pkg/har"
	"github.com/replay-dev/replay/pkg/pcap"
)

// HAR is import har: one HAR file, its entries numbered from 1; entries
// that never reached the network (cache hits, WebSockets, status 0) are
// listed but not refused by --strict.
func HAR() Importer { return HARWith(&HARFlags{}) }

// HARFlags are import har's own flags, as given.
type HARFlags struct {
	// WebSockets (--websocket) keeps WebSocket entries as upgrade pairs
	// with their sessions' messages.
	WebSockets bool
}

// HARWith is import har reading its flags when it runs: the command line
// fills them first.
func HARWith(flags *HARFlags) Importer {
	return Importer{Name: "har", What: "entry", Convert: func(ins []Input, w io.Writer, sk *SkipLog) (Result, error) {
		st, err := har.ConvertWith(ins[0].R, w, har.Options{WebSockets: flags.WebSockets}, func(entry int, why string) {
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

// PcapFlags are import pcap's own flags, as given.
type PcapFlags struct {
	// Services (--service) are the service's addresses, IP:PORT.
	Services []string
	// Session (--session) is connection, header:NAME, cookie:NAME or none.
	Session string
	// StreamTimeout (--stream-timeout) ends connections idle this long
	// (capture time).
	StreamTimeout time.Duration
	// MaxBuffer (--max-buffer) bounds the bytes held for all connections.
	MaxBuffer int64
	// KeyLog (--keylog) is a TLS key log file (SSLKEYLOGFILE): the TLS
	// connections are decrypted with its secrets.
	KeyLog string
	// WebSockets (--websocket) keeps WebSocket upgrades as their pairs
	// with the sessions' messages.
	WebSockets bool
}

// Pcap is import pcap: packet captures (pcap, pcapng, gzip-compressed or
// not), several merged into one by packet time; a skip names its packet
// (and its file when there are several). Connections that are not HTTP
// and WebSockets are listed but do not fail --strict.
func Pcap(flags *PcapFlags) Importer {
	var opt pcap.Options
	return Importer{Name: "pcap", What: "packet", Item: "item", Several: true,
		Check: func() (err error) {
			opt, err = flags.options()
			return err
		},
		Convert: func(ins []Input, w io.Writer, sk *SkipLog) (Result, error) {
			srcs := make([]pcap.Source, len(ins))
			for i, in := range ins {
				srcs[i] = pcap.Source{Name: in.Name, R: in.R}
			}
			st, err := pcap.Convert(srcs, w, opt, func(file string, packet int, why string, lost bool) {
				if lost {
					sk.AddIn(file, packet, why)
				} else {
					sk.AddOffNetworkIn(file, packet, why)
				}
			})
			return Result{Summary: st.Summary(), Written: st.Written, NothingWritten: st.NothingWritten()}, err
		}}
}

// options are the pcap.Options the flags say, each error naming its
// flag.
func (f *PcapFlags) options() (pcap.Options, error) {
	var opt pcap.Options
	var errs []error
	if f.KeyLog != "" {
		k, err := readKeyLog(f.KeyLog)
		if err != nil {
			errs = append(errs, fmt.Errorf("--keylog: %w", err))
		}
		opt.KeyLog = k
	}
	for _, s := range f.Services {
		ap, err := pcap.ParseService(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--service: %w", err))
		}
		opt.Services = append(opt.Services, ap)
	}
	var err error
	if opt.Session, err = pcap.ParseSession(f.Session); err != nil {
		errs = append(errs, fmt.Errorf("--session: %w", err))
	}
	if f.StreamTimeout < 0 {
		errs = append(errs, fmt.Errorf("--stream-timeout: want a positive duration (2m), got %v", f.StreamTimeout))
	}
	if f.MaxBuffer < 0 || f.MaxBuffer > 0 && f.MaxBuffer < 1<<20 {
		errs = append(errs, fmt.Errorf("--max-buffer: want at least 1048576 bytes (1 MiB), got %d", f.MaxBuffer))
	}
	opt.StreamTimeout, opt.MaxBuffer, opt.WebSockets = f.StreamTimeout, f.MaxBuffer, f.WebSockets
	return opt, errors.Join(errs...)
}

// readKeyLog reads the TLS key log at path.
func readKeyLog(path string) (*pcap.KeyLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return pcap.ReadKeyLog(path, f)
}
