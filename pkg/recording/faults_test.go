package recording

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
)

// The connection-fault counters (unsolicited, redirect_limit) are folded,
// written, read back, merged and shown.
func TestFaultCounters(t *testing.T) {
	ms := time.Millisecond
	var rs []result.Result
	for i := range 6 {
		rs = append(rs, with(at(0, time.Duration(i)*ms, 0, ms), func(r *result.Result) {
			r.Status = 200
			r.Unsolicited = i%2 == 0
			r.RedirectLimit = i == 5
		}))
	}
	meta := Meta{Run: result.Counters{Started: t0}, Model: "closed"}
	s := record(testEndpoints, rs).Summary(meta)
	if s.Unsolicited != 3 || s.RedirectLimit != 1 {
		t.Fatalf("got unsolicited %d, redirect_limit %d; want 3 and 1", s.Unsolicited, s.RedirectLimit)
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"unsolicited": 3`) || !strings.Contains(buf.String(), `"redirect_limit": 1`) {
		t.Errorf("JSON lacks the counters: %s", buf.String())
	}
	back, err := report.ReadSummary(&buf)
	if err != nil {
		t.Fatal(err)
	}
	m, err := report.Merge([]*report.Summary{back, s})
	if err != nil {
		t.Fatal(err)
	}
	if m.Unsolicited != 6 || m.RedirectLimit != 2 {
		t.Errorf("merged: unsolicited %d, redirect_limit %d; want 6 and 2", m.Unsolicited, m.RedirectLimit)
	}
	var text bytes.Buffer
	if err := report.WriteText(&text, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Unsolicited") || !strings.Contains(text.String(), "Redirect limit") {
		t.Errorf("text lacks the counters:\n%s", text.String())
	}
}
