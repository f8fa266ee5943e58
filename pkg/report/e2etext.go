package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/replay-dev/replay/pkg/e2e"
)

// WriteE2EText writes the end-to-end section of s alone, as WriteText
// writes it (replay sink); nothing for a summary without one.
func WriteE2EText(w io.Writer, s *Summary) error {
	if s.E2E == nil {
		return nil
	}
	var buf bytes.Buffer
	writeE2E(&buf, s.E2E)
	_, err := w.Write(buf.Bytes())
	return err
}

// writeE2E writes the end-to-end section: events followed to the sinks.
func writeE2E(buf *bytes.Buffer, e *e2e.Summary) {
	if e.Sent == 0 && e.Accepted == 0 { // a standalone sink's
		fmt.Fprintf(buf, "\nEnd-to-end (send → seen by this sink)")
	} else {
		fmt.Fprintf(buf, "\nEnd-to-end (send → seen by a sink): %d events sent, %d accepted by the API", e.Sent, e.Accepted)
	}
	if e.Foreign > 0 {
		fmt.Fprintf(buf, ", %d foreign IDs seen", e.Foreign)
	}
	fmt.Fprintf(buf, "; waited %s for the last\n", formatMillis(e.DrainS*1000))
	if len(e.Stages) == 0 {
		buf.WriteString("  no event was seen: does the SUT pass the ID along, and does it reach the sink?\n")
		return
	}
	// What a stage did not see is pending, unless the sinks prove loss.
	missed, missedPct := "pending", func(st e2e.Stage) (int64, float64) { return st.Pending, st.PendingPct }
	if e.LossKnown {
		missed, missedPct = "lost", func(st e2e.Stage) (int64, float64) { return st.Lost, st.LostPct }
	}
	rows := [][]string{{"stage", "unique", "dup", missed, missed + "%", "p50", "p90", "p99", "max"}}
	for _, st := range e.Stages {
		n, p := missedPct(st)
		rows = append(rows, []string{st.Name, strconv.FormatInt(st.Unique, 10), strconv.FormatInt(st.Duplicates, 10),
			strconv.FormatInt(n, 10), fmt.Sprintf("%.2f%%", p),
			seenMillis(st.Unique, st.Latency.P50), seenMillis(st.Unique, st.Latency.P90), seenMillis(st.Unique, st.Latency.P99), seenMillis(st.Unique, st.Latency.Max)})
	}
	writeTable(buf, rows, false)
	if noneSeen(e) {
		buf.WriteString("  no event was seen: does the SUT pass the ID along, and does it reach the sink?\n")
	}
	writeLossNote(buf, e)
	if len(e.Deltas) > 0 {
		fmt.Fprintf(buf, "  between stages (--e2e-deltas; at most %d events followed at once)\n", e.DeltasPeakInFlight)
		rows := [][]string{{"from → to", "events", "p50", "p90", "p99", "max"}}
		for _, d := range e.Deltas {
			rows = append(rows, []string{d.From + " → " + d.To, strconv.FormatInt(d.Events, 10),
				formatMillis(d.Latency.P50), formatMillis(d.Latency.P90), formatMillis(d.Latency.P99), formatMillis(d.Latency.Max)})
		}
		writeTable(buf, rows, false)
	}
}

// noneSeen reports that no stage saw an event (the stages listed are those
// named for the run, all pending).
func noneSeen(e *e2e.Summary) bool {
	for _, st := range e.Stages {
		if st.Unique > 0 {
			return false
		}
	}
	return true
}

// writeLossNote says what the end-to-end counts can tell of loss.
func writeLossNote(buf *bytes.Buffer, e *e2e.Summary) {
	switch {
	case e.LossKnown:
		return
	case e.Sent == 0 && e.Accepted == 0: // a standalone sink's
		buf.WriteString("  loss not known: this sink cannot tell that an event will never come; merge with the runs' summaries for pending events\n")
	case e.Pending() > 0:
		fmt.Fprintf(buf, "  %d events pending (accepted, not seen by the end of the drain): loss not known, as no sink can prove it; try a longer --drain\n", e.Pending())
	}
}

// noEvent stands for a latency statistic of a stage that saw no event: an
// en dash, never 0s, which would read as a fast pipeline.
const noEvent = "–"

// seenMillis is a latency statistic of events, ms, of which there were
// seen: noEvent when there were none.
func seenMillis(seen int64, ms float64) string {
	if seen == 0 {
		return noEvent
	}
	return formatMillis(ms)
}
