package accesslog

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSummary: the sentence the import prints, and why nothing was
// written when no line holds a request.
func TestSummary(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "nginx-combined.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := Convert(f, io.Discard, Options{}, func(int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		st         Stats
		want, none string
	}{
		{"nginx", st, "10 lines (combined), 8 pairs written: method, target, time and status only (an access log keeps no headers or bodies); " +
			`1 line held no HTTP request ("-", or bytes that are no request line), not kept; 8 times of whole seconds spread within their second; ` +
			"7 without a host (replay them with --target, or import with --host)", ""},
		{"one of each", Stats{Lines: 1, Written: 1, Format: "json", Sorted: true},
			"1 line (json), 1 pair written: method, target, time and status only (an access log keeps no headers or bodies); the log was out of time order: pairs sorted by time", ""},
		{"no request", Stats{Lines: 3, NotHTTP: 3, Format: "common"},
			`3 lines (common), 0 pairs written: method, target, time and status only (an access log keeps no headers or bodies); 3 lines held no HTTP request ("-", or bytes that are no request line), not kept`,
			"none of the 3 lines holds an HTTP request"},
		{"skipped, not empty", Stats{Lines: 3, NotHTTP: 1, Format: "combined"},
			`3 lines (combined), 0 pairs written: method, target, time and status only (an access log keeps no headers or bodies); 1 line held no HTTP request ("-", or bytes that are no request line), not kept`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.st.Summary(); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
			if got := c.st.NothingWritten(); got != c.none {
				t.Errorf("NothingWritten: got %q, want %q", got, c.none)
			}
		})
	}
}
