package capacity

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/replay-dev/replay/pkg/chart"
	"github.com/rs/zerolog"
)

// rate writes v, iterations a second, in the unit the search was asked
// in: "400/s", or "2400req/s" for a search in requests.
func (r *Result) rate(v float64) string {
	if r.RateUnit == "requests" && r.RequestsPerIteration > 0 {
		return formatRate(v*r.RequestsPerIteration) + "req/s"
	}
	return formatRate(v) + "/s"
}

// both writes v, iterations a second, in the unit the search was asked in
// and in the other: "400/s (2400req/s)", "2400req/s (400/s)".
func (r *Result) both(v float64) string {
	if r.RequestsPerIteration <= 0 || r.RequestsPerIteration == 1 { // one request an iteration: the same number
		return r.rate(v)
	}
	if r.RateUnit == "requests" {
		return r.rate(v) + " (" + formatRate(v) + "/s)"
	}
	return r.rate(v) + " (" + formatRate(v*r.RequestsPerIteration) + "req/s)"
}

// Headline says in one line what the search found.
func (r *Result) Headline() string {
	switch r.Outcome {
	case Found:
		return fmt.Sprintf("sustainable rate %s (confirmed; it failed at %s, precision %.0f%%)", r.both(r.Sustainable), r.rate(r.FailedAt), 100*r.Precision)
	case StartFailed:
		if br := r.Broke; br != nil {
			return fmt.Sprintf("no sustainable rate: even the start rate failed (%s: %s)", r.rate(br.Target), br.Reason)
		}
		return "no sustainable rate: even the start rate failed"
	case GeneratorLimited:
		return fmt.Sprintf("generator limit at %s: nothing was judged of the SUT", r.rate(r.GeneratorLimitAt))
	case Unstable:
		if u := r.Unsteady; u != nil {
			return fmt.Sprintf("unstable: step %d held %s, step %d failed %s; no rate is reported (its capacity flaps: hold longer than its own period, --hold)",
				u.Passed.N, r.rate(u.Passed.Target), u.Failed.N, r.rate(u.Failed.Target))
		}
		return "unstable: no rate is reported"
	}
	s := fmt.Sprintf("sustainable rate at least %s", r.both(r.Sustainable))
	switch {
	case r.GeneratorLimitAt > 0:
		s += fmt.Sprintf(" (generator limit at %s, not the SUT's)", r.rate(r.GeneratorLimitAt))
	case r.Stopped == "max rate":
		s += " (--max-rate reached)"
	case r.Stopped == "budget":
		s += " (--budget: no room left for another step)"
	case r.Stopped == "interrupted":
		s += " (interrupted)"
	}
	if r.FailedAt > 0 {
		s += fmt.Sprintf("; it failed at %s", r.rate(r.FailedAt))
	}
	return s
}

// unsteadyLines are the two holds of an unstable search, as the text
// report lists them.
func (r *Result) unsteadyLines() []string {
	u := r.Unsteady
	return []string{
		fmt.Sprintf("step %d (%s, %s): pass", u.Passed.N, u.Passed.Phase, r.rate(u.Passed.Target)),
		fmt.Sprintf("step %d (%s, %s): fail: %s", u.Failed.N, u.Failed.Phase, r.rate(u.Failed.Target), u.Failed.Reason),
	}
}

// perVCPU says the sustainable rate per vCPU, in iterations and requests
// a second: "75/s, 450req/s (--sut-cpus 2)".
func (r *Result) perVCPU() string {
	s := formatRate(r.PerVCPU) + "/s"
	if r.RequestsPerVCPU > 0 {
		s += ", " + formatRate(r.RequestsPerVCPU) + "req/s"
	}
	return fmt.Sprintf("%s (--sut-cpus %g)", s, r.SUTCPUs)
}

// columns are a step's rates in the text and HTML tables, the unit the
// search was asked in first: target and achieved in it, then in the
// other.
func (r *Result) columns() (head []string, row func(st Step) []string) {
	it := []string{"target/s", "achieved/s"}
	rq := []string{"target req/s", "achieved req/s"}
	itOf := func(st Step) []string { return []string{formatRate(st.Target), formatRate(st.Achieved)} }
	rqOf := func(st Step) []string {
		return []string{formatRate(st.TargetRequests), formatRate(st.AchievedRequests)}
	}
	if r.RequestsPerIteration <= 0 {
		return it, itOf
	}
	if r.RateUnit == "requests" {
		return append(rq, it...), func(st Step) []string { return append(rqOf(st), itOf(st)...) }
	}
	return append(it, rq...), func(st Step) []string { return append(itOf(st), rqOf(st)...) }
}

// WriteText writes the search as text: the curve, one line a step, then
// what was found.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	b.WriteString("Capacity search\n")
	if r.Params != nil {
		b.WriteString(r.Params.String() + "\n")
	}
	head, rates := r.columns()
	fmt.Fprintf(&b, "%5s  %-8s", "step", "phase")
	for i, h := range head {
		fmt.Fprintf(&b, " %*s", max(10+i%2, len(h)), h)
	}
	// The generator's CPU when it was measured (a search of an earlier
	// version, or on a system that does not say, has none).
	cpu := r.measuredCPU()
	fmt.Fprintf(&b, " %9s %9s %9s %8s %8s %6s", "p50 ms", "p99 ms", "max ms", "errors", "dropped", "late")
	if cpu {
		fmt.Fprintf(&b, " %8s", "gen CPU")
	}
	b.WriteString("  verdict\n")
	for _, st := range r.Steps {
		fmt.Fprintf(&b, "%5d  %-8s", st.N, st.Phase)
		for i, v := range rates(st) {
			fmt.Fprintf(&b, " %*s", max(10+i%2, len(head[i])), v)
		}
		fmt.Fprintf(&b, " %9.2f %9.2f %9.2f %7.2f%% %8d %6d", st.Latency.P50, st.Latency.P99, st.Latency.Max, st.ErrorsPct, st.Dropped, st.Late)
		if cpu {
			fmt.Fprintf(&b, " %8s", cpuCell(st.CPU))
		}
		fmt.Fprintf(&b, "  %s\n", verdictText(st))
	}
	for _, st := range r.Steps {
		if st.Note != "" {
			fmt.Fprintf(&b, "step %d: %s\n", st.N, st.Note)
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Result       %s\n", r.Headline())
	if br := r.Broke; br != nil {
		fmt.Fprintf(&b, "Broke at     step %d (%s): %s\n", br.N, r.rate(br.Target), br.Reason)
	}
	if r.Unsteady != nil {
		l := r.unsteadyLines()
		fmt.Fprintf(&b, "Unstable     %s\n             %s\n", l[0], l[1])
	}
	if r.PerVCPU > 0 {
		fmt.Fprintf(&b, "Per vCPU     %s\n", r.perVCPU())
	}
	fmt.Fprintf(&b, "Took         %.1fs, %d steps\n", r.TookS, len(r.Steps))
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictText is a step's verdict and reason as the tables write them,
// saying which hold was held again and which repeated it.
func verdictText(st Step) string {
	v := string(st.Verdict)
	if st.RepeatOf > 0 {
		v = fmt.Sprintf("again (step %d): %s", st.RepeatOf, v)
	}
	if st.Reason != "" {
		v += ": " + st.Reason
	}
	if st.Retried {
		v += " (held again after a pause)"
	}
	return v
}

// measuredCPU says some step has its generator's CPU use measured.
func (r *Result) measuredCPU() bool {
	return slices.ContainsFunc(r.Steps, func(st Step) bool { return st.CPU.Known() })
}

// cpuCell is a step's generator CPU in a table's cell: "15%/2", "–"
// where unknown.
func cpuCell(c GeneratorCPU) string {
	if !c.Known() {
		return "–"
	}
	return fmt.Sprintf("%.0f%%/%d", c.UsedPct, c.Cores)
}

// Log adds the step's figures to a log event: its rate, latency,
// errors, lateness, the generator's CPU, verdict and reason.
func (st Step) Log(e *zerolog.Event) *zerolog.Event {
	return e.Int("step", st.N).Str("phase", string(st.Phase)).Float64("target_rate", st.Target).Float64("achieved_rate", st.Achieved).
		Float64("p99_ms", st.Latency.P99).Float64("errors_pct", st.ErrorsPct).Float64("late_pct", st.LatePct).Str("generator_cpu", st.CPU.String()).
		Str("verdict", string(st.Verdict)).Str("reason", st.Reason).Bool("held_again", st.Retried).Int("repeat_of", st.RepeatOf)
}

// WriteJSON writes the result as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteHTML writes the search as one self-contained HTML page: the curve
// of achieved rate against latency (p50 and p99, log scale) as an inline
// SVG, a mark at the sustainable rate, and the table of steps. No script,
// font or CDN: it opens offline.
func WriteHTML(w io.Writer, r *Result) error {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>replay find-max</title><style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}
td.l,th.l{text-align:left}.pass{color:#1a7f37}.fail{color:#cf222e}.generator_limit{color:#9a6700}svg text{font-size:11px;fill:#444}</style></head><body>`)
	fmt.Fprintf(&b, "<h1>Capacity search</h1><p><b>%s</b></p>", html.EscapeString(r.Headline()))
	writeHTMLHeadlines(&b, r)
	writeChart(&b, r)
	writeHTMLSteps(&b, r)
	fmt.Fprintf(&b, "<p>Took %.1fs.</p></body></html>\n", r.TookS)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHTMLHeadlines writes the page's lines under its headline: the
// search's parameters, where it broke, whether it was unstable, and the
// rate per vCPU, each when there is one.
func writeHTMLHeadlines(b *strings.Builder, r *Result) {
	if r.Params != nil {
		fmt.Fprintf(b, "<p>%s</p>", html.EscapeString(r.Params.String()))
	}
	if br := r.Broke; br != nil {
		fmt.Fprintf(b, "<p>Broke at step %d (%s): %s</p>", br.N, r.rate(br.Target), html.EscapeString(br.Reason))
	}
	if r.Unsteady != nil {
		l := r.unsteadyLines()
		fmt.Fprintf(b, "<p>Unstable: %s; %s</p>", html.EscapeString(l[0]), html.EscapeString(l[1]))
	}
	if r.PerVCPU > 0 {
		fmt.Fprintf(b, "<p>Per vCPU: %s</p>", html.EscapeString(r.perVCPU()))
	}
}

// writeHTMLSteps writes the table of steps, with the dropped, late and
// generator CPU columns only when they say something, then the steps'
// notes.
func writeHTMLSteps(b *strings.Builder, r *Result) {
	head, rates := r.columns()
	b.WriteString(`<h2>Steps</h2><table><tr><th>step</th><th class="l">phase</th>`)
	for _, h := range head {
		fmt.Fprintf(b, "<th>%s</th>", h)
	}
	// Dropped and late only when a step had some: all zero, they say nothing.
	dropped := slices.ContainsFunc(r.Steps, func(st Step) bool { return st.Dropped != 0 })
	late := slices.ContainsFunc(r.Steps, func(st Step) bool { return st.Late != 0 })
	cpu := r.measuredCPU()
	b.WriteString(`<th>p50 ms</th><th>p99 ms</th><th>max ms</th><th>errors</th>`)
	if cpu {
		b.WriteString(`<th title="the generator's own CPU use over the hold, of the cores it may use">gen CPU</th>`)
	}
	if dropped {
		b.WriteString(`<th>dropped</th>`)
	}
	if late {
		b.WriteString(`<th>late</th>`)
	}
	b.WriteString(`<th class="l">verdict</th></tr>`)
	for _, st := range r.Steps {
		fmt.Fprintf(b, `<tr><td>%d</td><td class="l">%s</td>`, st.N, st.Phase)
		for _, v := range rates(st) {
			fmt.Fprintf(b, "<td>%s</td>", v)
		}
		fmt.Fprintf(b, `<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f%%</td>`, st.Latency.P50, st.Latency.P99, st.Latency.Max, st.ErrorsPct)
		if cpu {
			fmt.Fprintf(b, `<td>%s</td>`, cpuCell(st.CPU))
		}
		if dropped {
			fmt.Fprintf(b, `<td>%d</td>`, st.Dropped)
		}
		if late {
			fmt.Fprintf(b, `<td>%d</td>`, st.Late)
		}
		fmt.Fprintf(b, `<td class="l %s">%s</td></tr>`, st.Verdict, html.EscapeString(verdictText(st)))
	}
	b.WriteString("</table>")
	for _, st := range r.Steps {
		if st.Note != "" {
			fmt.Fprintf(b, "<p>Step %d: %s</p>", st.N, html.EscapeString(st.Note))
		}
	}
}

// writeChart draws achieved rate (x, linear) against latency (y, log10):
// the curve through the steps in order of the rate they achieved, a line
// for p99 and one, dashed, for p50 (a rate held twice shows its last
// hold); a p99 and a p50 point per step, coloured by verdict, the p99 one
// labelled with its step, a diamond for a rate held again (the
// confirmation, a hold repeated after a pause); and a vertical line at
// the sustainable rate.
func writeChart(b *strings.Builder, r *Result) {
	if len(r.Steps) == 0 {
		return
	}
	c := curveOf(r)
	b.WriteString("<h2>Achieved rate against latency</h2>")
	b.WriteString(c.SVG())
}

// curveOf is the chart writeChart draws.
func curveOf(r *Result) chart.Curve {
	// x in the unit the search was asked in: iterations, or requests a
	// second (each step's target and what it achieved in requests).
	// The axis ends a tick past what was achieved (and the sustainable
	// mark), not at a target no step achieved.
	xLabel, x, scale := "achieved rate (iterations/s)", func(st Step) float64 { return st.Achieved }, 1.0
	if r.RateUnit == "requests" && r.RequestsPerIteration > 0 {
		xLabel, x, scale = "achieved rate (requests/s)", func(st Step) float64 { return st.AchievedRequests }, r.RequestsPerIteration
	}
	c := chart.Curve{Label: "achieved rate against latency", XLabel: xLabel, YUnit: "ms",
		Legend: "● p99  ○ p50 (numbers: steps) · green pass, red fail, amber generator limit"}
	// A hold of a rate held before (the confirmation, a hold again after
	// a pause) is a diamond: it measures again a point already drawn.
	again := map[int]bool{}
	seen := map[float64]bool{}
	for _, st := range r.Steps {
		again[st.N], seen[st.Target] = seen[st.Target], true
	}
	if slices.ContainsFunc(r.Steps, func(st Step) bool { return again[st.N] }) {
		c.Legend = "● p99  ○ p50  ◆ ◇ confirmed: a rate held again (numbers: steps) · green pass, red fail, amber generator limit"
	}
	if r.Sustainable > 0 {
		c.Marks = []chart.Mark{{X: r.Sustainable * scale, Color: "#1a7f37", Label: "sustainable " + r.rate(r.Sustainable)}}
	}
	byTarget := map[float64]Step{}
	for _, st := range r.Steps {
		byTarget[st.Target] = st
	}
	held := make([]Step, 0, len(byTarget))
	for _, st := range byTarget {
		held = append(held, st)
	}
	sort.Slice(held, func(i, j int) bool { // by the rate achieved, the x axis
		if x(held[i]) != x(held[j]) {
			return x(held[i]) < x(held[j])
		}
		return held[i].Target < held[j].Target
	})
	p99, p50 := chart.Path{Color: "#888"}, chart.Path{Color: "#888", Dash: "3 3"}
	for _, st := range held {
		p99.X, p99.Y = append(p99.X, x(st)), append(p99.Y, st.Latency.P99)
		p50.X, p50.Y = append(p50.X, x(st)), append(p50.Y, st.Latency.P50)
	}
	c.Lines = []chart.Path{p99, p50}
	colour := map[Verdict]string{Pass: "#1a7f37", Fail: "#cf222e", GeneratorLimit: "#9a6700"}
	for _, st := range r.Steps {
		col := colour[st.Verdict]
		what := fmt.Sprintf("step %d", st.N)
		switch {
		case st.RepeatOf > 0:
			what += fmt.Sprintf(", step %d held again after a pause", st.RepeatOf)
		case again[st.N]:
			what += ", a rate held again (" + string(st.Phase) + ")"
		}
		c.Points = append(c.Points,
			chart.Point{X: x(st), Y: st.Latency.P99, Color: col, Diamond: again[st.N], Label: fmt.Sprint(st.N), Title: fmt.Sprintf("%s, target %s: p99 %.2f ms, %s", what, r.rate(st.Target), st.Latency.P99, st.Verdict)},
			chart.Point{X: x(st), Y: st.Latency.P50, Color: col, Diamond: again[st.N], Hollow: true, Title: fmt.Sprintf("%s, target %s: p50 %.2f ms, %s", what, r.rate(st.Target), st.Latency.P50, st.Verdict)})
	}
	return c
}
