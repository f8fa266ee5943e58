package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText writes s as a report for people, in the spirit of vegeta's
// text report and k6's end summary:
//
//	Requests      [total, rate, throughput]               1200, 400.00, 399.10
//	Answered      [answered, failed without an answer]    1198, 2
//	Duration      [wall, issuing, wait]                   3s, 3s, 1.2ms
//	Latency       [from due: min, mean, 50, 90, 95, 99, 99.9, max]  210µs, 1.1ms, ...
//	...
//	Endpoints
//	  name           requests      ok%    p50    p90    p99    max  status
//	  POST /events       1100  100.00%  1.1ms  1.8ms  4.9ms  40ms  202:1100
//
// Rate and throughput are answered and succeeded requests per second of
// wall time; latencies are those of answered requests, and when there were
// none the report says so instead of showing zeros.
//
// Lines for dropped and late iterations appear when they are not zero or
// the model is not "closed"; those for downgraded, unsent and clamped
// requests only when not zero. It returns the write error, if any.
func WriteText(w io.Writer, s *Summary) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	line := func(label, fields, values string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", label, fields, values)
	}
	writeTimeLines(line, s)
	writeTrafficLines(line, s)
	writeLoadLines(line, s)
	writeCountLines(line, s)
	tw.Flush() // cannot fail: it writes to buf
	writeLagWarning(&buf, s)

	if len(s.Endpoints) > 0 {
		buf.WriteString("\nEndpoints\n")
		writeEndpoints(&buf, s.Endpoints)
	}
	if len(s.Steps) > 0 {
		buf.WriteString("\nSteps (requests by the step they were due in)\n")
		writeSteps(&buf, s)
	}
	if ws := s.WebSocket; ws != nil {
		writeWebSocket(&buf, ws)
	}
	if e := s.E2E; e != nil {
		writeE2E(&buf, e)
	}
	if len(s.Transforms) > 0 {
		writeTransforms(&buf, s.Transforms)
	}
	if c := s.Compare; c != nil {
		writeCompare(&buf, c)
	}
	if len(s.Thresholds) > 0 {
		writeThresholds(&buf, s.Thresholds)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// textLine writes one aligned line of the report's head: its label, the
// fields it shows and their values.
type textLine func(label, fields, values string)

// writeTimeLines writes the head's lines on requests, answers and time:
// Requests to the phase timings.
func writeTimeLines(line textLine, s *Summary) {
	line("Requests", "[total, rate, throughput]",
		fmt.Sprintf("%d, %.2f, %.2f", s.Requests, s.RPS, s.Throughput))
	if s.SUTCPUs > 0 {
		line("  per vCPU", "[rate, throughput: --sut-cpus "+strconv.FormatFloat(s.SUTCPUs, 'f', -1, 64)+"]",
			fmt.Sprintf("%.2f, %.2f", s.RPSPerVCPU, s.ThroughputPerVCPU))
	}
	line("Answered", "[answered, failed without an answer]", formatAnswered(s))
	line("Duration", "[wall, issuing, wait]",
		fmt.Sprintf("%s, %s, %s", formatSeconds(s.WallS), formatSeconds(s.DurationS), formatSeconds(s.WaitS)))
	if s.MergedFrom > 0 {
		line("Merged", "[summaries]", strconv.Itoa(s.MergedFrom)+": report merge")
	}
	lat, svc := formatLatency(s.Latency), formatLatency(s.Service)
	if s.Answered == 0 {
		lat, svc = "none: no request was answered", "none: no request was answered"
	}
	line("Latency", "[from due: min, mean, 50, 90, 95, 99, 99.9, max]", lat)
	line("Service time", "[from sent: min, mean, 50, 90, 95, 99, 99.9, max]", svc)
	if s.LatencyWithFailed {
		line("  note", "[version 1 summary]", "latencies include the time to failure of the requests without an answer")
	}
	if tm := s.Timings; tm != nil {
		writeTimingLines(line, tm)
	}
}

// writeTimingLines writes the lines of the phases of a request: connecting,
// TLS (when any handshake was timed), sending, waiting and receiving.
func writeTimingLines(line textLine, tm *Timings) {
	line("  connecting", "[new connections: min, mean, 50, 90, 95, 99, 99.9, max]", formatLatency(tm.Connecting))
	if tm.TLSHandshaking.Max > 0 {
		line("  tls", "[new connections: min, mean, 50, 90, 95, 99, 99.9, max]", formatLatency(tm.TLSHandshaking))
	}
	line("  sending", "[min, mean, 50, 90, 95, 99, 99.9, max]", formatLatency(tm.Sending))
	line("  waiting", "[first byte: min, mean, 50, 90, 95, 99, 99.9, max]", formatLatency(tm.Waiting))
	line("  receiving", "[min, mean, 50, 90, 95, 99, 99.9, max]", formatLatency(tm.Receiving))
}

// writeTrafficLines writes the head's lines on what went over the wire:
// bytes, success, status codes, errors and connections.
func writeTrafficLines(line textLine, s *Summary) {
	line("Bytes In", "[total, mean]", formatByteTotals(s.BytesIn, s.Requests))
	line("Bytes Out", "[total, mean]", formatByteTotals(s.BytesOut, s.Requests))
	line("Success", "[ratio]", formatPercent(s.Succeeded, s.Requests))
	line("Status Codes", "[code:count]", formatCounts(s.Status, "  "))
	if len(s.GRPCStatus) > 0 {
		line("gRPC Status", "[grpc-status:count; all but OK failed]", formatCounts(s.GRPCStatus, "  "))
	}
	line("Errors", "[kind:count]", formatCounts(s.Errors, "  "))
	line("Connections", "[opened, reconnects, VUs]",
		fmt.Sprintf("%d, %d, %d", s.Connections, s.Reconnects, s.VUsMax))
	if p := s.ConnectionsByProtocol; len(p) > 1 || len(p) == 1 && p["http/1.1"] == 0 {
		line("  by protocol", "[protocol:connections]", formatCounts(p, "  "))
	}
}

// writeLoadLines writes the head's lines on the load: the model, the
// iterations, what was achieved and how the schedule was kept.
func writeLoadLines(line textLine, s *Summary) {
	if len(s.Steps) > 0 {
		line("Model", "[name, stages]", formatModel(s.Model, nil)+", "+StagesText(s.Steps))
	} else {
		line("Model", "[name, target rate]", modelText(s))
	}
	line("Iterations", "[begun, rate, dropped, late requests]",
		fmt.Sprintf("%d, %.2f/s, %d, %d", s.Iterations, s.IterationRate, s.Dropped, s.Late))
	if s.perIteration() > 0 && s.Iterations > 0 {
		// What ran: the requests begun per iteration begun, not the plan's
		// RequestsPerIteration (the Model line's, labelled as the target).
		line("Achieved", "[iterations/s, requests/s, requests an iteration]",
			fmt.Sprintf("%.2f, %.2f, %.2f", s.IterationRate, s.RequestRate, float64(s.Requests)/float64(s.Iterations)))
	}
	if sc := s.Schedule; sc != nil {
		line("Schedule", "[due, lag mean, 50, 99, max]",
			fmt.Sprintf("%d, %s, %s, %s, %s", sc.Scheduled, formatMillis(sc.LagMeanMS),
				formatMillis(sc.LagP50MS), formatMillis(sc.LagP99MS), formatMillis(sc.LagMaxMS)))
	}
}

// writeCountLines writes the head's lines of the counts shown only when not
// zero, in the report's order, then the skipped lines of the file.
func writeCountLines(line textLine, s *Summary) {
	counts := []struct {
		n             int64
		label, fields string
	}{
		{int64(s.OutOfOrder), "Out of order", "[iterations listed before earlier ts]"},
		{s.Downgraded, "Downgraded", "[HTTP/2 sent as HTTP/1.1]"},
		{s.Upgraded, "Upgraded", "[HTTP/1.x sent as HTTP/2]"},
		{s.Retried, "Retried", "[declared unprocessed by the SUT, sent again once]"},
		{s.Redirects, "Redirects", "[followed]"},
		{s.RedirectLimit, "Redirect limit", "[chains cut by --follow-redirects]"},
		{s.Unsolicited, "Unsolicited", "[connections closed: bytes no request asked for]"},
		{s.Unsent, "Unsent", "[no byte written]"},
		{s.Clamped, "Clamped", "[over one hour]"},
		{s.Backoffs, "Back-offs", "[waits after a failed connect]"},
	}
	for _, c := range counts {
		if c.n != 0 {
			line(c.label, c.fields, strconv.FormatInt(c.n, 10))
		}
	}
	if n := s.Skipped.Total(); n != 0 {
		line("Skipped", "[lines of the file not replayed]", strconv.Itoa(n)+": "+strings.Join(s.Skipped.Kinds(), ", "))
	}
}

// writeCompare writes how the replayed responses compared with the recorded
// ones, with the first five kinds of mismatch.
func writeCompare(buf *bytes.Buffer, c *Compare) {
	what := "status"
	if c.GRPCCompared > 0 {
		what = "status, grpc-status"
	}
	if c.Body {
		what += " and body"
	}
	fmt.Fprintf(buf, "\nCompared with the recorded responses (%s): %d of %d match (%.2f%%)", what, c.Matched, c.Compared, c.MatchPct)
	if c.NotRecorded > 0 {
		fmt.Fprintf(buf, "; %d had no recorded answer", c.NotRecorded)
	}
	buf.WriteString("\n")
	if c.MessagesCompared > 0 {
		fmt.Fprintf(buf, "  WebSocket server messages: %d of %d match\n", c.MessagesMatched, c.MessagesCompared)
	}
	for i, m := range c.Mismatches {
		if i == 5 {
			fmt.Fprintf(buf, "  ... %d more kinds of mismatch in the JSON\n", len(c.Mismatches)-5)
			break
		}
		fmt.Fprintf(buf, "  %6d  %-28s %s: recorded %q, replayed %q (line %d)\n", m.Count, m.Endpoint, m.Kind, m.Recorded, m.Replayed, m.Line)
	}
}

// writeThresholds writes each threshold's verdict and measured value.
func writeThresholds(buf *bytes.Buffer, ts []ThresholdResult) {
	buf.WriteString("\nThresholds\n")
	for _, t := range ts {
		mark := "pass"
		if !t.Pass {
			mark = "FAIL"
		}
		fmt.Fprintf(buf, "  %s  %-30s %s\n", mark, t.Name(), t.MeasuredText(3))
	}
}

// formatAnswered gives the answered requests and those that failed without
// an answer, saying it plainly when nothing was answered.
func formatAnswered(s *Summary) string {
	v := fmt.Sprintf("%d, %d", s.Answered, s.Requests-s.Answered)
	if s.Answered == 0 && s.Requests > 0 {
		v += ": NO REQUEST WAS ANSWERED (errors below)"
	}
	return v
}

// writeEndpoints writes the endpoint table, name and status left-aligned,
// numbers right-aligned. Latencies are the answered requests'; "-" where
// none was answered.
func writeEndpoints(buf *bytes.Buffer, eps []Endpoint) {
	rows := [][]string{{"name", "requests", "answered", "ok%", "p50", "p90", "p99", "max", "status"}}
	for _, e := range eps {
		outcomes := strings.Join(slices.Concat(countList(e.Status), grpcList(e.GRPCStatus), countList(e.Errors)), " ")
		if outcomes == "" {
			outcomes = "-"
		}
		lat := []string{formatMillis(e.Latency.P50), formatMillis(e.Latency.P90), formatMillis(e.Latency.P99), formatMillis(e.Latency.Max)}
		if e.Answered == 0 {
			lat = []string{"-", "-", "-", "-"}
		}
		row := []string{e.Name, strconv.FormatInt(e.Requests, 10), strconv.FormatInt(e.Answered, 10), formatPercent(e.Succeeded, e.Requests)}
		row = append(append(row, lat...), outcomes)
		rows = append(rows, row)
	}
	writeTable(buf, rows, true)
}

// grpcList returns gRPC answer counts as in countList, each name marked
// "grpc:" so that a code without a name is not read as an HTTP status.
func grpcList(m map[string]int64) []string {
	list := countList(m)
	for i := range list {
		list[i] = "grpc:" + list[i]
	}
	return list
}

// writeTransforms writes what each transform did; the gRPC column only
// when one skipped a gRPC body.
func writeTransforms(buf *bytes.Buffer, ts []Transform) {
	grpc := slices.ContainsFunc(ts, func(t Transform) bool { return t.SkippedGRPC != 0 })
	if !grpc {
		buf.WriteString("\nTransforms                     changed     failed\n")
		for _, t := range ts {
			fmt.Fprintf(buf, "  %-28s %7d %10d\n", t.Name, t.Changed, t.Failed)
		}
		return
	}
	buf.WriteString("\nTransforms                     changed     failed  skipped (gRPC)\n")
	for _, t := range ts {
		fmt.Fprintf(buf, "  %-28s %7d %10d %15d\n", t.Name, t.Changed, t.Failed, t.SkippedGRPC)
	}
	buf.WriteString("  a gRPC body is length-prefixed protobuf: body rewrites skip it; header rewrites still apply\n")
}

// formatLatency lists a distribution in the order of its bracket.
func formatLatency(l Latency) string {
	v := []float64{l.Min, l.Mean, l.P50, l.P90, l.P95, l.P99, l.P999, l.Max}
	s := make([]string, len(v))
	for i, ms := range v {
		s[i] = formatMillis(ms)
	}
	return strings.Join(s, ", ")
}

// formatByteTotals gives a byte total and its mean per request.
func formatByteTotals(total, requests int64) string {
	mean := 0.0
	if requests > 0 {
		mean = float64(total) / float64(requests)
	}
	return fmt.Sprintf("%d, %.2f", total, mean)
}

// formatPercent gives n as a share of total: "99.50%".
func formatPercent(n, total int64) string {
	if total == 0 {
		return "0.00%"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(total))
}

// formatCounts lists counts as key:count, the largest first (ties by key),
// separated by sep; "-" when there are none.
func formatCounts(m map[string]int64, sep string) string {
	if len(m) == 0 {
		return "-"
	}
	return strings.Join(countList(m), sep)
}

// formatModel gives the load model and its target rate, if any.
func formatModel(model string, rate *float64) string {
	if model == "" {
		model = "-"
	}
	if rate == nil {
		return model
	}
	return fmt.Sprintf("%s, %.2f/s", model, *rate)
}

// modelText is the model and its target rate in both units, the one it
// was written in first: "rate, 500.00/s (iterations; 3000.00 req/s at
// 6.00 requests an iteration)", "rate, 1000.00 req/s (166.67
// iterations/s at 6.00 requests an iteration)".
func modelText(s *Summary) string {
	t, tr := s.TargetRate, s.TargetRequestRate
	switch {
	case t == nil || tr == nil:
		return formatModel(s.Model, t)
	case s.RateUnit == "requests":
		return fmt.Sprintf("%s, %.2f req/s (%.2f iterations/s at %.2f requests an iteration)", s.Model, *tr, *t, s.RequestsPerIteration)
	}
	return fmt.Sprintf("%s (iterations; %.2f req/s at %.2f requests an iteration)", formatModel(s.Model, t), *tr, s.RequestsPerIteration)
}

// formatSeconds formats a duration given in seconds; see formatMillis.
func formatSeconds(s float64) string { return formatMillis(s * 1000) }

// writeSteps writes the steps' table: target (in the unit it was
// written in) and achieved rates in iterations and requests, dropped and
// late (when a step had any), errors, latency from due and service time; with sinks, the
// events accepted a second and, per e2e stage, those seen a second and
// the end-to-end p99; whether each step kept up; then the one line that
// says where the run stopped keeping up.
func writeSteps(buf *bytes.Buffer, s *Summary) {
	cols := stepColumnsOf(s.Steps)
	rows := [][]string{cols.head()}
	for _, st := range s.Steps {
		rows = append(rows, cols.row(st))
	}
	writeTable(buf, rows, false)
	if v := s.StepsVerdict; v != nil {
		fmt.Fprintf(buf, "  %s\n", upperFirst(v.Line))
	}
}

// stepColumns says which of the steps table's optional columns it shows:
// dropped and late when a step had some, accepted/s with events, a pair of
// columns for each e2e stage, and kept up when a step has a verdict.
type stepColumns struct {
	events, verdicts, dropped, late bool
	stages                          []string // e2e stages, in the order first seen
}

// stepColumnsOf finds the optional columns the steps call for.
func stepColumnsOf(steps []Step) stepColumns {
	var c stepColumns
	for _, st := range steps {
		c.dropped, c.late = c.dropped || st.Dropped != 0, c.late || st.Late != 0
		c.events = c.events || len(st.E2E) > 0
		c.verdicts = c.verdicts || st.KeptUp != nil
		for _, e := range st.E2E {
			if !slices.Contains(c.stages, e.Stage) {
				c.stages = append(c.stages, e.Stage)
			}
		}
	}
	return c
}

// head is the steps table's header row.
func (c stepColumns) head() []string {
	// dropped and late only when a step had some, as in the HTML report
	head := []string{"step", "target", "for", "iter/s", "req/s"}
	if c.dropped {
		head = append(head, "dropped")
	}
	if c.late {
		head = append(head, "late")
	}
	head = append(head, "requests", "errors", "p50", "p90", "p99", "svc p99")
	if c.events {
		head = append(head, "accepted/s")
	}
	for _, name := range c.stages {
		head = append(head, "seen/s "+name, "e2e "+name+" p99")
	}
	if c.verdicts {
		head = append(head, "kept up")
	}
	return head
}

// row is one step's row of the steps table.
func (c stepColumns) row(st Step) []string {
	lat := []string{formatMillis(st.Latency.P50), formatMillis(st.Latency.P90), formatMillis(st.Latency.P99), formatMillis(st.Service.P99)}
	if st.Answered == 0 {
		lat = []string{"-", "-", "-", "-"}
	}
	row := []string{strconv.Itoa(st.Step), st.Target, formatSeconds(st.DurationS), fmt.Sprintf("%.2f", st.IterationRate), fmt.Sprintf("%.2f", st.RequestRate)}
	if c.dropped {
		row = append(row, strconv.FormatInt(st.Dropped, 10))
	}
	if c.late {
		row = append(row, strconv.FormatInt(st.Late, 10))
	}
	row = append(append(row, strconv.FormatInt(st.Requests, 10), formatPercent(st.Failed, st.Requests)), lat...)
	if c.events {
		row = append(row, fmt.Sprintf("%.2f", st.AcceptedRate))
	}
	for _, name := range c.stages {
		seen, p99 := stepStageCells(st, name)
		row = append(row, seen, p99)
	}
	if c.verdicts {
		row = append(row, keptUpText(st.KeptUp))
	}
	return row
}

// stepStageCells are a step's cells for one e2e stage: the events seen a
// second and the end-to-end p99, or "-" and noEvent when it saw none.
func stepStageCells(st Step, name string) (seen, p99 string) {
	seen, p99 = "-", noEvent
	for _, e := range st.E2E {
		if e.Stage == name {
			seen, p99 = fmt.Sprintf("%.2f", e.SeenPerSecond()), seenMillis(e.Events, e.Latency.P99)
		}
	}
	return seen, p99
}

// keptUpText is a step's verdict in the steps table.
func keptUpText(ok *bool) string {
	switch {
	case ok == nil:
		return "-"
	case *ok:
		return "yes"
	}
	return "NO"
}

// upperFirst writes s with its first letter upper-cased.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeLagWarning says when the scheduler's own lateness is large against
// the latency it is part of (lag p99 over a tenth of latency p50): then
// the latency partly measures this machine's timers, not the SUT.
func writeLagWarning(buf *bytes.Buffer, s *Summary) {
	sc := s.Schedule
	if sc == nil || s.Latency.P50 <= 0 || sc.LagP99MS <= s.Latency.P50/10 {
		return
	}
	fmt.Fprintf(buf, "\nThe scheduler itself was late: lag p99 %s against latency p50 %s. Latency runs from the due time, so part of it is this machine's timers, not the SUT; --precise-pacing (at a CPU cost) or a less loaded machine narrows it.\n",
		formatMillis(sc.LagP99MS), formatMillis(s.Latency.P50))
}
