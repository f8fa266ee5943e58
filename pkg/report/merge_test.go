package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/result"
)

// TestMergeIsExact: two shards' summaries, written as JSON and read back,
// merge into what one recorder fed every result reports.
func TestMergeIsExact(t *testing.T) {
	all := fixture()
	for i := 0; i < 500; i++ { // a spread of latencies, so percentiles mean something
		all = append(all, result.Result{Due: t0.UnixNano(), Sent: t0.UnixNano(), End: t0.UnixNano() + int64(i*i)*1000 + 7000,
			Status: 202, Endpoint: uint16(i % 2), Written: true})
	}
	a, b := all[:len(all)/3], all[len(all)/3:]
	meta := Meta{Run: result.Counters{Started: t0}, Model: "closed"}
	one := record(testEndpoints, all).Summary(meta)
	parts := shardSummaries(t, meta, a, b)
	m, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	if m.Requests != one.Requests || m.Succeeded != one.Succeeded || m.Failed != one.Failed || m.BytesIn != one.BytesIn {
		t.Errorf("counts: got %d/%d/%d, want %d/%d/%d", m.Requests, m.Succeeded, m.Failed, one.Requests, one.Succeeded, one.Failed)
	}
	if m.Latency != one.Latency || m.Service != one.Service {
		t.Errorf("latency: got %+v, want %+v", m.Latency, one.Latency)
	}
	if m.Answered != one.Answered || math.Abs(m.WallS-one.WallS) > 1e-6 || math.Abs(m.RPS-one.RPS) > 1e-6 || math.Abs(m.Throughput-one.Throughput) > 1e-6 {
		t.Errorf("answered %d, wall_s %v, rps %v, throughput %v; want %d, %v, %v, %v",
			m.Answered, m.WallS, m.RPS, m.Throughput, one.Answered, one.WallS, one.RPS, one.Throughput)
	}
	if m.Histogram != one.Histogram {
		t.Error("the merged histogram differs from the single one")
	}
	for k, n := range one.Status {
		if m.Status[k] != n {
			t.Errorf("status %s: got %d, want %d", k, m.Status[k], n)
		}
	}
	for k, n := range one.Errors {
		if m.Errors[k] != n {
			t.Errorf("errors %s: got %d, want %d", k, m.Errors[k], n)
		}
	}
	if len(m.Endpoints) != len(one.Endpoints) {
		t.Fatalf("endpoints: got %d, want %d", len(m.Endpoints), len(one.Endpoints))
	}
	byName := map[string]Endpoint{}
	for _, e := range m.Endpoints {
		byName[e.Name] = e
	}
	for _, e := range one.Endpoints {
		if got := byName[e.Name]; got.Requests != e.Requests || got.Latency != e.Latency {
			t.Errorf("endpoint %s: got %d %+v, want %d %+v", e.Name, got.Requests, got.Latency, e.Requests, e.Latency)
		}
	}
	if _, err := Merge(nil); err == nil {
		t.Error("merging nothing succeeded")
	}
	bad := *parts[0]
	bad.Histogram = "HISTFAAAAnot"
	if _, err := Merge([]*Summary{&bad}); err == nil {
		t.Error("a corrupt histogram merged")
	}
}

// shardSummaries are the summaries of shards that recorded shards'
// results, written as JSON and read back, as report merge reads them.
func shardSummaries(t *testing.T, meta Meta, shards ...[]result.Result) []*Summary {
	t.Helper()
	var parts []*Summary
	for _, rs := range shards {
		var buf bytes.Buffer
		if err := WriteJSON(&buf, record(testEndpoints, rs).Summary(meta)); err != nil {
			t.Fatal(err)
		}
		s, err := ReadSummary(&buf)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, s)
	}
	return parts
}

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
	s := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}})
	var buf bytes.Buffer
	if err := WriteHgrm(&buf, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "1/(1-Percentile)") || !strings.Contains(buf.String(), "#[Max") {
		t.Errorf("not an .hgrm:\n%s", buf.String())
	}
}

func TestMergeCompare(t *testing.T) {
	a := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}})
	b := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}})
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
	a := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}})
	b := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}})
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

// TestMergeWithStandaloneSink: a standalone sink's summary (no requests,
// model "sink", started before the shards and stopped after them) brings
// its end-to-end section to the merge, but neither stretches the time the
// rates divide by nor changes the model or the target rate.
func TestMergeWithStandaloneSink(t *testing.T) {
	rate := 300.0
	meta := Meta{Run: result.Counters{Started: t0}, Model: "rate", TargetRate: &rate}
	var shards []*Summary
	for k := range 2 {
		var rs []result.Result
		for i := range 300 {
			rs = append(rs, at(uint16(k), time.Duration(i)*time.Second/300, 0, time.Millisecond))
		}
		shards = append(shards, record(testEndpoints, rs).Summary(meta))
	}
	alone, err := Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	if alone.RPS < 590 || alone.RPS > 610 {
		t.Fatalf("shards alone: rps %v, want about 600", alone.RPS)
	}
	sink := &Summary{Version: SummaryVersion, Started: t0.Add(-5 * time.Second), DurationS: 20, Model: "sink",
		E2E: &e2e.Summary{Stages: []e2e.Stage{{Name: "queue", Received: 600, Unique: 600}}}}
	for _, order := range [][]*Summary{{shards[0], shards[1], sink}, {sink, shards[0], shards[1]}} {
		m, err := Merge(order)
		if err != nil {
			t.Fatal(err)
		}
		if m.RPS != alone.RPS || m.Throughput != alone.Throughput || m.DurationS != alone.DurationS || !m.Started.Equal(alone.Started) {
			t.Errorf("with the sink (%s first): rps %v, throughput %v, duration %v, started %v; want %v, %v, %v, %v as without it",
				order[0].Model, m.RPS, m.Throughput, m.DurationS, m.Started, alone.RPS, alone.Throughput, alone.DurationS, alone.Started)
		}
		if m.Model != "rate" || m.TargetRate == nil || *m.TargetRate != 600 {
			t.Errorf("with the sink (%s first): model %q, target rate %v; want rate, 600", order[0].Model, m.Model, m.TargetRate)
		}
		if m.E2E == nil || len(m.E2E.Stages) != 1 || m.E2E.Stages[0].Unique != 600 {
			t.Errorf("with the sink (%s first): e2e %+v, want the sink's stage", order[0].Model, m.E2E)
		}
	}
	// Sinks alone are still a merge: their span is theirs.
	if m, err := Merge([]*Summary{sink, sink}); err != nil || m.Model != "sink" || m.DurationS != 20 {
		t.Errorf("sinks alone: %v, model %q, duration %v; want sink, 20", err, m.Model, m.DurationS)
	}
}

// TestMergeScheduleAndBackoffs: shards' back-offs add up; the lag's
// percentiles merge to the worst shard's, an upper bound.
func TestMergeScheduleAndBackoffs(t *testing.T) {
	shard := func(p50, p99 time.Duration, backoffs int64) *Summary {
		return record(testEndpoints, fixture()).Summary(Meta{Model: "rate", Run: result.Counters{
			Started: t0, Scheduled: 10, LagP50: p50, LagP99: p99, LagMax: 2 * p99, Backoffs: backoffs}})
	}
	m, err := Merge([]*Summary{shard(100*time.Microsecond, 900*time.Microsecond, 3), shard(300*time.Microsecond, 500*time.Microsecond, 4)})
	if err != nil {
		t.Fatal(err)
	}
	if sc := m.Schedule; sc == nil || sc.LagP50MS != 0.3 || sc.LagP99MS != 0.9 || sc.LagMaxMS != 1.8 {
		t.Errorf("schedule: got %+v, want lag p50 0.3, p99 0.9, max 1.8", sc)
	}
	if m.Backoffs != 7 {
		t.Errorf("backoffs: got %d, want 7", m.Backoffs)
	}
}
