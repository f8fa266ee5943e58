package e2e

import (
	"strings"
	"testing"
	"time"
)

// shardE2E is the section of a shard whose one VU had 10 events accepted
// and a sink that saw 9 of them at stage "done", ms after they were sent.
func shardE2E(start time.Time, ms int) *Summary {
	tr := NewTracker(5, 1, start, nil)
	for seq := range uint64(10) {
		tr.Stamped(0)
		tr.Accepted(0, seq, 0)
		if seq < 9 {
			tr.Seen(AppendID(nil, ID{Nonce: 5, Seq: seq, Sent: start.UnixMicro()}), "done", start.Add(time.Duration(ms)*time.Millisecond))
		}
	}
	return tr.Summary(time.Second)
}

func TestMerge(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	shard := func(ms int) *Summary { return shardE2E(start, ms) }
	e, err := Merge([]*Summary{shard(10), shard(30)})
	if err != nil {
		t.Fatal(err)
	}
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
	empty.Stages[0].Histogram = ""
	if m, err := Merge([]*Summary{shard(10), empty}); err != nil || m.Stages[0].Latency.Max > 10.1 {
		t.Errorf("no histogram: %v, %+v", err, m)
	}
	bad := shard(10)
	bad.Stages[0].Histogram = "HISTFAAAAnot"
	if _, err := Merge([]*Summary{shard(10), bad}); err == nil || !strings.Contains(err.Error(), "summary 2, e2e stage done") {
		t.Errorf("a corrupt stage histogram: %v", err)
	}
	// Summaries without a section keep their place in the count.
	if _, err := Merge([]*Summary{nil, shard(10), bad}); err == nil || !strings.Contains(err.Error(), "summary 3, e2e stage done") {
		t.Errorf("a corrupt stage histogram after a summary without a section: %v", err)
	}
	if m, err := Merge([]*Summary{nil, nil}); m != nil || err != nil {
		t.Errorf("no section: got %+v, %v; want nil, nil", m, err)
	}
}

// TestMergeLoss merges what stages did not see: pending unless every
// section proved loss.
func TestMergeLoss(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	shard := func(ms int) *Summary { return shardE2E(start, ms) }
	// A summary written before pending was counted its unseen events as
	// lost without proof (no loss_known): they merge as pending. Shards
	// whose sinks proved loss merge as lost.
	old := shard(10)
	old.Stages[0].Lost, old.Stages[0].Pending = old.Stages[0].Pending, 0
	if m, _ := Merge([]*Summary{old, shard(30)}); m.LossKnown || mergedMissed(m, 0) != [2]int64{2, 0} {
		t.Errorf("an older summary: %+v, want 2 pending, none lost", m)
	}
	proven := func() *Summary {
		p := shard(10)
		p.LossKnown, p.Stages[0].Lost, p.Stages[0].Pending = true, 1, 0
		return p
	}
	if m, _ := Merge([]*Summary{proven(), proven()}); !m.LossKnown || mergedMissed(m, 0) != [2]int64{0, 2} {
		t.Errorf("proven loss: %+v, want 2 lost, none pending", m)
	}

	// A standalone sink's section (loss not known) with a run that
	// stamped but ran no sink: what the sink did not see is pending.
	run := shard(10)
	run.Stages = nil
	sk := NewSinkTracker(start)
	for seq := range uint64(7) {
		sk.Seen(AppendID(nil, ID{Nonce: 5, Seq: seq, Sent: start.UnixMicro()}), "done", start.Add(time.Millisecond))
	}
	sink := sk.Summary(0)
	if sink.LossKnown {
		t.Error("a standalone sink's section says loss is known")
	}
	if m, err := Merge([]*Summary{run, sink}); err != nil || m.LossKnown || mergedMissed(m, 0) != [2]int64{3, 0} {
		t.Errorf("run + sink: %v, %+v, want 3 pending, none lost", err, m)
	}
}

// mergedMissed is what stage i of a merge did not see: pending, lost.
func mergedMissed(e *Summary, i int) [2]int64 {
	return [2]int64{e.Stages[i].Pending, e.Stages[i].Lost}
}
