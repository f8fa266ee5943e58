package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/internal/testutil/golden"
	"github.com/replay-dev/replay/pkg/e2e"
)

// TestE2EText renders the end-to-end section of a tracker's summary: 100
// events accepted on two VUs; the sink sees 98 of them at "processed" (one
// twice), 50 at "settled"; two foreign IDs. (Package e2e tests the counts.)
func TestE2EText(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	tr := e2e.NewTracker(42, 2, start, nil)
	id := func(nonce uint32, vu int, seq uint64, sent time.Time) []byte {
		return e2e.AppendID(nil, e2e.ID{Nonce: nonce, VU: vu, Seq: seq, Sent: sent.UnixMicro()})
	}
	for seq := range uint64(50) {
		for vu := range 2 {
			tr.Stamped(vu)
			tr.Accepted(vu, seq, 0)
		}
	}
	tr.Stamped(0) // stamped, answered 500: not accepted
	for seq := range uint64(50) {
		for vu := range 2 {
			sent := start.Add(time.Duration(seq) * 10 * time.Millisecond)
			if !(vu == 1 && seq >= 48) {
				tr.Seen(id(42, vu, seq, sent), "processed", sent.Add(5*time.Millisecond))
			}
			if vu == 0 {
				tr.Seen(id(42, vu, seq, sent), "settled", sent.Add(time.Second+200*time.Millisecond))
			}
		}
	}
	tr.Seen(id(42, 0, 3, start), "processed", start.Add(time.Second))
	tr.Seen(id(7, 0, 3, start), "processed", start)
	tr.Seen([]byte("evt-1"), "processed", start)
	var buf bytes.Buffer
	if err := WriteE2EText(&buf, &Summary{E2E: tr.Summary(0)}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "e2e.golden", buf.Bytes())
}

// TestE2ELossText checks what the text and HTML reports say of loss: a
// standalone sink cannot know it; sinks that cannot prove it leave unseen
// events pending and suggest a longer --drain; sinks that prove it report
// lost.
func TestE2ELossText(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	run := func(proves bool) *e2e.Summary {
		tr := e2e.NewTracker(3, 1, start, nil)
		tr.ProveLoss(proves)
		for seq := range uint64(4) {
			tr.Stamped(0)
			tr.Accepted(0, seq, 0)
			if seq < 3 {
				tr.Seen(e2e.AppendID(nil, e2e.ID{Nonce: 3, Seq: seq, Sent: start.UnixMicro()}), "done", start)
			}
		}
		return tr.Summary(time.Second)
	}
	standalone := e2e.NewSinkTracker(start)
	standalone.Seen(e2e.AppendID(nil, e2e.ID{Nonce: 3, Sent: start.UnixMicro()}), "done", start)
	for _, tt := range []struct {
		name      string
		e         *e2e.Summary
		want      []string
		wantHTML  []string
		notInHTML string
	}{
		{"standalone", standalone.Summary(0), []string{"pending%", "loss not known: this sink cannot tell"},
			[]string{"<th>pending</th>", "Loss not known"}, "<th>lost</th>"},
		{"pending", run(false), []string{"pending%", "1 events pending", "try a longer --drain"},
			[]string{"<td>1 (25.00%)</td>", "a longer --drain may see them"}, "<th>lost</th>"},
		{"proven", run(true), []string{"lost%", "   1  25.00%"},
			[]string{"<th>lost</th>", "<td>1 (25.00%)</td>"}, "Loss not known"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteE2EText(&buf, &Summary{E2E: tt.e}); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("text lacks %q:\n%s", want, buf.String())
				}
			}
			s := &Summary{Version: SummaryVersion, Started: start, E2E: tt.e}
			buf.Reset()
			if err := WriteHTML(&buf, s); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.wantHTML {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("HTML lacks %q", want)
				}
			}
			if strings.Contains(buf.String(), tt.notInHTML) {
				t.Errorf("HTML has %q", tt.notInHTML)
			}
		})
	}
}

// TestE2EHlog: the .hlog of a run followed to sinks carries, beside the
// run's own histograms, one per second for each e2e stage, tagged
// "e2e.STAGE", holding the latency of the events first seen then.
func TestE2EHlog(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	tr := e2e.NewTracker(42, 1, start, nil)
	for seq := range uint64(30) {
		tr.Stamped(0)
		tr.Accepted(0, seq, 0)
		sent := start.Add(time.Duration(seq) * 100 * time.Millisecond) // seconds 0, 1, 2
		id := e2e.AppendID(nil, e2e.ID{Nonce: 42, VU: 0, Seq: seq, Sent: sent.UnixMicro()})
		tr.Seen(id, "queued", sent.Add(2*time.Millisecond))
		if seq < 10 {
			tr.Seen(id, "settled", sent.Add(50*time.Millisecond))
		}
	}
	s := &Summary{Started: start, E2E: tr.Summary(0)}
	var buf bytes.Buffer
	if err := WriteHlog(&buf, s); err != nil {
		t.Fatal(err)
	}
	r := hdrhistogram.NewHistogramLogReader(&buf)
	counts := map[string]int64{}
	seconds := map[string]int{}
	for {
		h, err := r.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		counts[h.Tag()] += h.TotalCount()
		seconds[h.Tag()]++
		if h.Tag() == "e2e.settled" && (h.Min() < 49_000 || h.Max() > 51_000) {
			t.Errorf("e2e.settled: %d..%d µs, want the 50 ms the events took", h.Min(), h.Max())
		}
	}
	if counts["e2e.queued"] != 30 || seconds["e2e.queued"] != 3 || counts["e2e.settled"] != 10 || seconds["e2e.settled"] != 1 {
		t.Errorf("the .hlog's e2e histograms: counts %v over seconds %v; want queued 30 in 3, settled 10 in 1", counts, seconds)
	}
}
