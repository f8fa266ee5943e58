package convert

import (
	"strings"
	"testing"
)

// TestAccessLogFlags: import access-log's flags become its options, each
// error naming its flag; --json-field alone means a JSON log.
func TestAccessLogFlags(t *testing.T) {
	for _, c := range []struct {
		name   string
		flags  AccessLogFlags
		format string // the format read; "" sniffed from the first line
		err    string // the error's start; "" for none
	}{
		{"none", AccessLogFlags{}, "", ""},
		{"a host", AccessLogFlags{Host: "shop.example:8080"}, "", ""},
		{"a bad host", AccessLogFlags{Host: "a b"}, "", "--host: "},
		{"combined", AccessLogFlags{Format: "combined"}, "combined", ""},
		{"a bad format", AccessLogFlags{Format: "$nothing"}, "", "--format: "},
		{"fields mean json", AccessLogFlags{JSONFields: []string{"time=ts"}}, "json", ""},
		{"a bad field", AccessLogFlags{JSONFields: []string{"colour=c"}}, "", "--json-field "},
	} {
		t.Run(c.name, func(t *testing.T) {
			opt, err := c.flags.options()
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case c.err != "":
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Errorf("got %v, want an error starting %q", err, c.err)
				}
				return
			}
			if opt.Host != c.flags.Host {
				t.Errorf("host %q, want %q", opt.Host, c.flags.Host)
			}
			got := ""
			if opt.Format != nil {
				got = opt.Format.Name()
			}
			if got != c.format {
				t.Errorf("format %q, want %q", got, c.format)
			}
		})
	}
}

// TestImporters: each importer through the job on real files: a HAR's
// entries that never reached the network do not fail --strict, a lost one
// does; a capture's skip names its file among several, not alone.
func TestImporters(t *testing.T) {
	const chunks = "../gor/testdata/chunks/"
	for _, c := range []struct {
		name       string
		imp        Importer
		ins        []string
		err        string // "" for none
		wantStderr string
	}{
		{"HAR, never traffic", HAR(), []string{"../har/testdata/mixed-recorders.har"}, "", "replay: skipped 3 entries:\n  entry 4: cache: "},
		{"HAR, one lost", HAR(), []string{"../har/testdata/chrome-har-params-object.har"}, "--strict: 1 entry could not be converted", "skipped 1 entry:"},
		{"one capture", Gor(), []string{"../gor/testdata/capture.gor"}, "--strict: 2 records could not be converted", "\n  record 7: a response to no captured request"},
		{"captures merged", Gor(), []string{chunks + "requests_0.gor", chunks + "requests_1.gor.gz", chunks + "other_0.gor"}, "", "replay: 3 files merged: 12 records, 6 pairs written"},
		{"an access log", AccessLog(&AccessLogFlags{}), []string{"../accesslog/testdata/nginx-json.log"}, "--strict: 1 line could not be converted", "replay: 10 lines (json), 8 pairs written"},
		{"a custom log read as combined", AccessLog(&AccessLogFlags{}), []string{"../accesslog/testdata/nginx-custom.log"}, "no pair written: 10 lines skipped, and nothing else to write (see above)", "lines (combined), 0 pairs written"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runJob(c.imp, Job{Inputs: c.ins, Strict: true}, "")
			if c.err == "" && r.err != nil || c.err != "" && (r.err == nil || r.err.Error() != c.err) {
				t.Errorf("got %v, want %q", r.err, c.err)
			}
			if !strings.Contains(r.stderr, c.wantStderr) {
				t.Errorf("stderr:\n%s\nwant it to hold %q", r.stderr, c.wantStderr)
			}
		})
	}
}
