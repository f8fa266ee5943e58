package report

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// t0 is the start of every test run.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// recorded reads testdata/NAME.summary.json, the summary of a recorded run
// as run --out writes it: closed (a known mix of endpoints, statuses and
// every error kind), empty, grpc, html (six seconds with a timeout each),
// stepped (three steps of --stages, followed to a sink) and unanswered
// (nothing answered). Package recording's TestReportFixtures records them
// and holds them to what its Recorder builds.
func recorded(t *testing.T, name string) *Summary {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ReadSummary(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
