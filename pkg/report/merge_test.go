package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/e2e"
)

func TestReadSummaryVersion(t *testing.T) {
	if _, err := ReadSummary(strings.NewReader(`{"version":3}`)); err == nil || !strings.Contains(err.Error(), "version 3, want 1 or 2") {
		t.Errorf("got %v", err)
	}
}

// TestReadSummaryV1 reads a version 1 summary: answered is derived from the
// status counts, wall_s from duration and wait, rps and throughput on
// them, and the latency is marked as mixing in the failures.
func TestReadSummaryV1(t *testing.T) {
	v1 := `{"version":1,"started":"2026-11-22T10:00:00Z","duration_s":1,"wait_s":1,"model":"closed",
		"requests":100,"succeeded":60,"failed":40,"rps":100,"throughput":30,
		"latency_ms":{"p99":1},"status":{"200":60,"500":20},"errors":{"timeout":20},
		"endpoints":[{"name":"GET /a","requests":100,"succeeded":60,"failed":40,"status":{"200":60,"500":20},"errors":{"timeout":20}}]}`
	s, err := ReadSummary(strings.NewReader(v1))
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 2 || s.Answered != 80 || s.Endpoints[0].Answered != 80 || s.WallS != 2 || s.RPS != 40 || s.Throughput != 30 || !s.LatencyWithFailed {
		t.Errorf("got version %d, answered %d (endpoint %d), wall_s %v, rps %v, throughput %v, latency_includes_failed %v; want 2, 80 (80), 2, 40, 30, true",
			s.Version, s.Answered, s.Endpoints[0].Answered, s.WallS, s.RPS, s.Throughput, s.LatencyWithFailed)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, s); err != nil || !strings.Contains(buf.String(), "latencies include the time to failure") {
		t.Errorf("text of a version 1 summary: %v\n%s", err, buf.String())
	}
	m, err := Merge([]*Summary{s, s})
	if err != nil || m.Answered != 160 || !m.LatencyWithFailed || m.RPS != 80 {
		t.Errorf("merged with itself: %v, answered %d, rps %v, latency_includes_failed %v", err, m.Answered, m.RPS, m.LatencyWithFailed)
	}
}

func TestWriteHgrm(t *testing.T) {
	s := recorded(t, "closed")
	var buf bytes.Buffer
	if err := WriteHgrm(&buf, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "1/(1-Percentile)") || !strings.Contains(buf.String(), "#[Max") {
		t.Errorf("not an .hgrm:\n%s", buf.String())
	}
}

func TestMergeCompare(t *testing.T) {
	a := recorded(t, "closed")
	b := recorded(t, "closed")
	a.Compare = &Compare{Compared: 10, Matched: 9, Endpoints: []EndpointMatch{{Name: "GET /x", Compared: 10, Matched: 9}},
		Mismatches: []Mismatch{{Endpoint: "GET /x", Kind: "status", Recorded: "200", Replayed: "500", Count: 1}}}
	b.Compare = &Compare{Compared: 30, Matched: 27, Endpoints: []EndpointMatch{{Name: "GET /x", Compared: 30, Matched: 27}},
		Mismatches: []Mismatch{{Endpoint: "GET /x", Kind: "status", Recorded: "200", Replayed: "500", Count: 3}}}
	m, err := Merge([]*Summary{a, b})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Compare
	if c.Compared != 40 || c.Matched != 36 || c.MatchPct != 90 || c.Endpoints[0].Compared != 40 || len(c.Mismatches) != 1 || c.Mismatches[0].Count != 4 {
		t.Errorf("got %+v", c)
	}
}

func TestMergeTransforms(t *testing.T) {
	a := recorded(t, "closed")
	b := recorded(t, "closed")
	a.Transforms = []Transform{{Name: "timestamps", Changed: 10}, {Name: "jwt", Changed: 9, Failed: 1}}
	b.Transforms = []Transform{{Name: "jwt", Changed: 5}, {Name: "cookies", Changed: 2}}
	m, err := Merge([]*Summary{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []Transform{{Name: "timestamps", Changed: 10}, {Name: "jwt", Changed: 14, Failed: 1}, {Name: "cookies", Changed: 2}}
	if fmt.Sprint(m.Transforms) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", m.Transforms, want)
	}
	if a.Transforms[1].Changed != 9 {
		t.Error("merge changed its input")
	}
}

// TestMergeE2E: Merge adds up the end-to-end sections with package e2e's
// Merge (whose tests check the sums), in the order of the summaries, so
// that an error names the summary; without any, the merge has none.
func TestMergeE2E(t *testing.T) {
	section := func(hist string) *e2e.Summary {
		return &e2e.Summary{Sent: 10, Accepted: 10, Stages: []e2e.Stage{{Name: "done", Received: 9, Unique: 9, Pending: 1, Histogram: hist}}}
	}
	with := func(e *e2e.Summary) *Summary {
		return &Summary{Version: SummaryVersion, Started: t0, Model: "sink", E2E: e}
	}
	m, err := Merge([]*Summary{with(section("")), with(nil), with(section(""))})
	if err != nil {
		t.Fatal(err)
	}
	if e := m.E2E; e == nil || e.Sent != 20 || e.Accepted != 20 || len(e.Stages) != 1 || e.Stages[0].Unique != 18 || e.Stages[0].Pending != 2 {
		t.Errorf("got %+v, want 20 sent and accepted, 18 seen at done, 2 pending", m.E2E)
	}
	if _, err := Merge([]*Summary{with(section("")), with(nil), with(section("HISTFAAAAnot"))}); err == nil || !strings.Contains(err.Error(), "summary 3, e2e stage done") {
		t.Errorf("a corrupt stage histogram: %v", err)
	}
	if m, err := Merge([]*Summary{with(nil), with(nil)}); err != nil || m.E2E != nil {
		t.Errorf("no section: %v, %+v", err, m.E2E)
	}
}

// A merged summary says how many it folded, a merge of merges all of
// them, and its reports say it was merged.
func TestMergedFrom(t *testing.T) {
	read := func() *Summary {
		s, err := ReadSummary(strings.NewReader(`{"version":2,"started":"2026-11-22T10:00:00Z","duration_s":1,"wall_s":1,"model":"closed",
			"requests":10,"succeeded":10,"answered":10,"status":{"200":10},"endpoints":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := read(); s.MergedFrom != 0 {
		t.Fatalf("a run's own summary: merged_from %d", s.MergedFrom)
	}
	two, err := Merge([]*Summary{read(), read()})
	if err != nil || two.MergedFrom != 2 {
		t.Fatalf("merged_from %d (%v), want 2", two.MergedFrom, err)
	}
	three, err := Merge([]*Summary{two, read()})
	if err != nil || three.MergedFrom != 3 || three.Requests != 30 {
		t.Fatalf("a merge of a merge: merged_from %d, requests %d (%v); want 3, 30", three.MergedFrom, three.Requests, err)
	}
	var text, page bytes.Buffer
	if err := WriteText(&text, three); err != nil || !strings.Contains(text.String(), "3: report merge") {
		t.Errorf("the text report does not say it was merged: %v\n%s", err, text.String())
	}
	if err := WriteHTML(&page, three); err != nil || !strings.Contains(page.String(), "merged from 3 summaries") {
		t.Errorf("the HTML report does not say it was merged: %v", err)
	}
}
