package gor

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSummary: the sentence the import prints; the files are named only
// when several were merged.
func TestSummary(t *testing.T) {
	var srcs []Source
	for _, name := range []string{"requests_0.gor", "requests_1.gor.gz", "other_0.gor"} {
		f, err := os.Open(filepath.Join("testdata", "chunks", name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		srcs = append(srcs, Source{Name: name, R: f})
	}
	merged, err := Merge(srcs, io.Discard, func(string, int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		st   Stats
		want string
	}{
		{"three chunks", merged, "3 files merged: 12 records, 6 pairs written, 0 replayed responses not kept; 1 without a Host header (replay them with --target)"},
		{"one file", Stats{Files: 1, Records: 8, Written: 3, Replayed: 1}, "8 records, 3 pairs written, 1 replayed responses not kept"},
		{"Convert's", Stats{Records: 2, Written: 1, NoHost: 1}, "2 records, 1 pairs written, 0 replayed responses not kept; 1 without a Host header (replay them with --target)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.st.Summary(); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
