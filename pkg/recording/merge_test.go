package recording

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/report"
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
	m, err := report.Merge(parts)
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
	byName := map[string]report.Endpoint{}
	for _, e := range m.Endpoints {
		byName[e.Name] = e
	}
	for _, e := range one.Endpoints {
		if got := byName[e.Name]; got.Requests != e.Requests || got.Latency != e.Latency {
			t.Errorf("endpoint %s: got %d %+v, want %d %+v", e.Name, got.Requests, got.Latency, e.Requests, e.Latency)
		}
	}
	if _, err := report.Merge(nil); err == nil {
		t.Error("merging nothing succeeded")
	}
	bad := *parts[0]
	bad.Histogram = "HISTFAAAAnot"
	if _, err := report.Merge([]*report.Summary{&bad}); err == nil {
		t.Error("a corrupt histogram merged")
	}
}

// shardSummaries are the summaries of shards that recorded shards'
// results, written as JSON and read back, as report merge reads them.
func shardSummaries(t *testing.T, meta Meta, shards ...[]result.Result) []*report.Summary {
	t.Helper()
	var parts []*report.Summary
	for _, rs := range shards {
		var buf bytes.Buffer
		if err := report.WriteJSON(&buf, record(testEndpoints, rs).Summary(meta)); err != nil {
			t.Fatal(err)
		}
		s, err := report.ReadSummary(&buf)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, s)
	}
	return parts
}

// TestMergeWithStandaloneSink: a standalone sink's summary (no requests,
// model "sink", started before the shards and stopped after them) brings
// its end-to-end section to the merge, but neither stretches the time the
// rates divide by nor changes the model or the target rate.
func TestMergeWithStandaloneSink(t *testing.T) {
	rate := 300.0
	meta := Meta{Run: result.Counters{Started: t0}, Model: "rate", TargetRate: &rate}
	var shards []*report.Summary
	for k := range 2 {
		var rs []result.Result
		for i := range 300 {
			rs = append(rs, at(uint16(k), time.Duration(i)*time.Second/300, 0, time.Millisecond))
		}
		shards = append(shards, record(testEndpoints, rs).Summary(meta))
	}
	alone, err := report.Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	if alone.RPS < 590 || alone.RPS > 610 {
		t.Fatalf("shards alone: rps %v, want about 600", alone.RPS)
	}
	sink := &report.Summary{Version: report.SummaryVersion, Started: t0.Add(-5 * time.Second), DurationS: 20, Model: "sink",
		E2E: &e2e.Summary{Stages: []e2e.Stage{{Name: "queue", Received: 600, Unique: 600}}}}
	for _, order := range [][]*report.Summary{{shards[0], shards[1], sink}, {sink, shards[0], shards[1]}} {
		m, err := report.Merge(order)
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
	if m, err := report.Merge([]*report.Summary{sink, sink}); err != nil || m.Model != "sink" || m.DurationS != 20 {
		t.Errorf("sinks alone: %v, model %q, duration %v; want sink, 20", err, m.Model, m.DurationS)
	}
}

// TestMergeScheduleAndBackoffs: shards' back-offs add up; the lag's
// percentiles merge to the worst shard's, an upper bound.
func TestMergeScheduleAndBackoffs(t *testing.T) {
	shard := func(p50, p99 time.Duration, backoffs int64) *report.Summary {
		return record(testEndpoints, fixture()).Summary(Meta{Model: "rate", Run: result.Counters{
			Started: t0, Scheduled: 10, LagP50: p50, LagP99: p99, LagMax: 2 * p99, Backoffs: backoffs}})
	}
	m, err := report.Merge([]*report.Summary{shard(100*time.Microsecond, 900*time.Microsecond, 3), shard(300*time.Microsecond, 500*time.Microsecond, 4)})
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
