package report

import (
	"bytes"
	"fmt"
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
	var parts []*Summary
	for _, rs := range [][]result.Result{a, b} {
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

func TestReadSummaryVersion(t *testing.T) {
	if _, err := ReadSummary(strings.NewReader(`{"version":2}`)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("got %v", err)
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

func TestMergeE2E(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	shard := func(ms int) *Summary {
		tr := e2e.NewTracker(5, 1, start, nil)
		for seq := range uint64(10) {
			tr.Stamped(0)
			tr.Accepted(0, seq)
			if seq < 9 {
				tr.Seen(e2e.AppendID(nil, e2e.ID{Nonce: 5, Seq: seq, Sent: start.UnixMicro()}), "done", start.Add(time.Duration(ms)*time.Millisecond))
			}
		}
		s := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}})
		s.E2E = tr.Summary(time.Second)
		return s
	}
	m, err := Merge([]*Summary{shard(10), shard(30)})
	if err != nil {
		t.Fatal(err)
	}
	e := m.E2E
	if e.Sent != 20 || e.Accepted != 20 || len(e.Stages) != 1 {
		t.Fatalf("got %+v", e)
	}
	st := e.Stages[0]
	// No sink proves loss: the two events no shard saw are pending.
	if e.LossKnown || st.Unique != 18 || st.Pending != 2 || st.PendingPct != 10 || st.Lost != 0 || st.Latency.Min < 9.9 || st.Latency.Max < 29.9 || st.Latency.Max > 30.1 {
		t.Errorf("stage %+v", st)
	}
	if len(st.Intervals) != 1 || st.Intervals[0].Received != 18 {
		t.Errorf("intervals %+v", st.Intervals)
	}

	// A stage's histogram: none (an older or hand-made summary) merges
	// as empty; a corrupt one is an error that names the summary.
	empty := shard(10)
	empty.E2E.Stages[0].Histogram = ""
	if m, err := Merge([]*Summary{shard(10), empty}); err != nil || m.E2E.Stages[0].Latency.Max > 10.1 {
		t.Errorf("no histogram: %v, %+v", err, m)
	}
	bad := shard(10)
	bad.E2E.Stages[0].Histogram = "HISTFAAAAnot"
	if _, err := Merge([]*Summary{shard(10), bad}); err == nil || !strings.Contains(err.Error(), "summary 2, e2e stage done") {
		t.Errorf("a corrupt stage histogram: %v", err)
	}
}

// TestMergeE2ELoss merges what stages did not see: pending unless every
// section proved loss.
func TestMergeE2ELoss(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	shard := func(ms int) *Summary {
		tr := e2e.NewTracker(5, 1, start, nil)
		for seq := range uint64(10) {
			tr.Stamped(0)
			tr.Accepted(0, seq)
			if seq < 9 {
				tr.Seen(e2e.AppendID(nil, e2e.ID{Nonce: 5, Seq: seq, Sent: start.UnixMicro()}), "done", start.Add(time.Duration(ms)*time.Millisecond))
			}
		}
		s := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}})
		s.E2E = tr.Summary(time.Second)
		return s
	}
	// A summary written before pending was counted its unseen events as
	// lost without proof (no loss_known): they merge as pending. Shards
	// whose sinks proved loss merge as lost.
	old := shard(10)
	old.E2E.Stages[0].Lost, old.E2E.Stages[0].Pending = old.E2E.Stages[0].Pending, 0
	if m, _ := Merge([]*Summary{old, shard(30)}); m.E2E.LossKnown || missed(m, 0) != [2]int64{2, 0} {
		t.Errorf("an older summary: %+v, want 2 pending, none lost", m.E2E)
	}
	proven := func() *Summary {
		p := shard(10)
		p.E2E.LossKnown, p.E2E.Stages[0].Lost, p.E2E.Stages[0].Pending = true, 1, 0
		return p
	}
	if m, _ := Merge([]*Summary{proven(), proven()}); !m.E2E.LossKnown || missed(m, 0) != [2]int64{0, 2} {
		t.Errorf("proven loss: %+v, want 2 lost, none pending", m.E2E)
	}

	// A standalone sink's section (loss not known) with a run that
	// stamped but ran no sink: what the sink did not see is pending.
	run := shard(10)
	run.E2E.Stages = nil
	sk := e2e.NewSinkTracker(start)
	for seq := range uint64(7) {
		sk.Seen(e2e.AppendID(nil, e2e.ID{Nonce: 5, Seq: seq, Sent: start.UnixMicro()}), "done", start.Add(time.Millisecond))
	}
	sinkSum := &Summary{Version: SummaryVersion, Started: start, Model: "sink", E2E: sk.Summary(0)}
	if sinkSum.E2E.LossKnown {
		t.Error("a standalone sink's section says loss is known")
	}
	if m, err := Merge([]*Summary{run, sinkSum}); err != nil || m.E2E.LossKnown || missed(m, 0) != [2]int64{3, 0} {
		t.Errorf("run + sink: %v, %+v, want 3 pending, none lost", err, m.E2E)
	}
}

// missed is what stage i of a merge did not see: pending, lost.
func missed(s *Summary, i int) [2]int64 {
	return [2]int64{s.E2E.Stages[i].Pending, s.E2E.Stages[i].Lost}
}
