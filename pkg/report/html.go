package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/chart"
	"github.com/replay-dev/replay/pkg/e2e"
)

// WriteHTML writes the report as one self-contained HTML file: no script,
// no font, no CDN — the charts are inline SVG (package chart) — so it opens
// offline. Charts: throughput and failures over time (those without an
// answer by kind), latency percentiles over
// time, the latency percentile distribution on HdrHistogram's log
// 1/(1−p) axis, and answers by status class over time; then the endpoint,
// error, threshold and comparison tables and the configuration (the run's
// Settings, when the summary has them, and its counts).
func WriteHTML(w io.Writer, s *Summary) error {
	data := htmlData{S: s, Config: s.Settings, Started: s.Started.Format(time.RFC3339)}
	data.Charts = append(data.Charts, throughputChart(s))
	if c := e2eLatencyChart(s); c != "" {
		data.Charts = append(data.Charts, c)
	}
	data.Charts = append(data.Charts, latencyChart(s), distributionChart(s), statusChart(s), vusChart(s))
	for _, kv := range countList(s.Status) {
		code, n, _ := strings.Cut(kv, ":")
		data.Status = append(data.Status, Setting{code, n})
	}
	for _, e := range s.Endpoints {
		data.EndpointStatus = append(data.EndpointStatus, strings.Join(countList(e.Status), " "))
	}
	for k, n := range s.Errors {
		data.Errors = append(data.Errors, Setting{k, fmt.Sprint(n)})
	}
	sort.Slice(data.Errors, func(i, j int) bool { return data.Errors[i].Name < data.Errors[j].Name })
	data.Protocols = strings.Join(countList(s.ConnectionsByProtocol), " ")
	for _, st := range s.Steps {
		data.StepVerdicts, data.StepsBehind = data.StepVerdicts || st.KeptUp != nil, data.StepsBehind || len(st.Behind)+len(st.NotJudged) > 0
		data.StepsDropped, data.StepsLate = data.StepsDropped || st.Dropped != 0, data.StepsLate || st.Late != 0
	}
	if s.E2E != nil {
		data.E2EDuplicates = slices.ContainsFunc(s.E2E.Stages, func(st e2e.Stage) bool { return st.Duplicates != 0 })
	}
	data.TransformsGRPC = slices.ContainsFunc(s.Transforms, func(t Transform) bool { return t.SkippedGRPC != 0 })
	for _, kv := range countList(s.GRPCStatus) {
		name, n, _ := strings.Cut(kv, ":")
		data.GRPC = append(data.GRPC, Setting{name, n})
	}
	return htmlTemplate.Execute(w, data)
}

type htmlData struct {
	S       *Summary
	Config  []Setting
	Started string
	Charts  []template.HTML
	Errors  []Setting
	GRPC    []Setting // answers to gRPC calls by grpc-status, the most first
	// Protocols are the connections by protocol ("h2:48 http/1.1:2").
	Protocols string
	// Status are the answers by HTTP status code ("200:950"), the most
	// first; EndpointStatus the same per endpoint, in endpoint order.
	Status         []Setting
	EndpointStatus []string
	// StepVerdicts says that a step was judged (the kept up column).
	StepVerdicts bool
	// StepsBehind says that a step says why it did not keep up (the
	// list under the steps table: in the table, it would widen the page).
	StepsBehind bool
	// StepsDropped and StepsLate say that a step dropped iterations or
	// had late requests: the steps table has those columns only then.
	StepsDropped, StepsLate bool
	// E2EDuplicates says that a stage saw an event twice (the column).
	E2EDuplicates bool
	// TransformsGRPC says that a transform skipped a gRPC body (the
	// column and its note).
	TransformsGRPC bool
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":         func(v float64) string { return formatMillis(v) },
	"wsFailures": func(c WSCounts) string { return wsFailures(&c) },
	"seenMs":     seenMillis,
	"pct": func(n, of int64) string {
		if of == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(of))
	},
	"f2":    func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"sub":   func(a, b int64) int64 { return a - b },
	"deref": func(p *float64) float64 { return *p },
	"index1": func(list []string, i int) string {
		if i < len(list) {
			return list[i]
		}
		return ""
	},
	"stages": StagesText,
	"upper":  upperFirst,
	"keptUp": func(ok *bool) template.HTML {
		switch {
		case ok == nil:
			return "-"
		case *ok:
			return `<span class="pass">yes</span>`
		}
		return `<span class="fail">no</span>`
	},
	"join": strings.Join,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>replay report {{.Started}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde;padding-bottom:4px}
.kpis{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}.kpi{background:#f3f5fa;border-radius:6px;padding:8px 14px;min-width:120px}
.kpi b{display:block;font-size:20px}.kpi span{color:#5a6275;font-size:12px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}th,td{padding:4px 8px;border-bottom:1px solid #e6e8ef;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f3f5fa;font-weight:600}
.pass{color:#1a7f37;font-weight:600}.fail{color:#c0262d;font-weight:600}.chart{margin:8px 0 20px}#steps{font-size:13px}#steps th,#steps td{padding:4px 5px}svg text{font:11px system-ui,sans-serif;fill:#3b4252}
</style></head><body>
<h1>replay report</h1>
<div>started {{.Started}} · model {{.S.Model}}{{if .S.Steps}} · stages {{stages .S.Steps}}{{else if .S.TargetRate}} · target {{if and .S.TargetRequestRate (eq .S.RateUnit "requests")}}{{f2 (deref .S.TargetRequestRate)}} req/s ({{f2 (deref .S.TargetRate)}} iterations/s){{else}}{{f2 (deref .S.TargetRate)}} iterations/s{{if .S.TargetRequestRate}} ({{f2 (deref .S.TargetRequestRate)}} req/s){{end}}{{end}}{{end}}{{if .S.RequestsPerIteration}} · {{f2 .S.RequestsPerIteration}} requests an iteration{{end}}{{if .S.MergedFrom}} · merged from {{.S.MergedFrom}} summaries{{end}}</div>
<div class="kpis">
<div class="kpi"><b>{{.S.Requests}}</b><span>requests</span></div>
<div class="kpi"><b>{{.S.Answered}}</b><span>answered ({{sub .S.Requests .S.Answered}} failed without an answer)</span></div>
<div class="kpi"><b>{{f2 .S.RPS}}/s</b><span>rate (answered / wall time)</span></div>
{{if .S.SUTCPUs}}<div class="kpi" id="per-vcpu"><b>{{f2 .S.RPSPerVCPU}}/s</b><span>per vCPU (answered; {{f2 .S.ThroughputPerVCPU}}/s succeeded; --sut-cpus {{.S.SUTCPUs}})</span></div>{{end}}
{{if .S.IterationRate}}<div class="kpi"><b>{{f2 .S.IterationRate}}/s · {{f2 .S.RequestRate}}/s</b><span>achieved: iterations · requests begun a second</span></div>{{else}}<div class="kpi"><b>{{f2 .S.RequestRate}}/s</b><span>achieved: requests begun a second</span></div>{{end}}
<div class="kpi"><b>{{pct .S.Succeeded .S.Requests}}</b><span>success</span></div>
{{if .S.Answered}}<div class="kpi"><b>{{ms .S.Latency.P50}}</b><span>latency p50 (answered, from due)</span></div>
<div class="kpi"><b>{{ms .S.Latency.P99}}</b><span>latency p99 (answered, from due)</span></div>
<div class="kpi"><b>{{ms .S.Service.P99}}</b><span>service p99 (answered, from sent)</span></div>
{{else}}<div class="kpi"><b class="fail">none</b><span>latency: no request was answered</span></div>
{{end}}
{{if or .S.Dropped (ne .S.Model "closed")}}<div class="kpi"><b>{{.S.Dropped}}</b><span>dropped iterations</span></div>{{end}}
</div>
{{range .Charts}}<div class="chart">{{.}}</div>{{end}}
{{if .S.Steps}}<h2>Steps</h2>
{{with .S.StepsVerdict}}<p id="steps-verdict"><b>{{upper .Line}}</b></p>{{end}}
{{$first := index .S.Steps 0}}<table id="steps"><tr><th>step</th><th>target</th><th>duration</th><th>achieved it/s</th><th>requests / s</th>{{if .StepsDropped}}<th>dropped</th>{{end}}{{if .StepsLate}}<th>late</th>{{end}}<th>requests</th><th>failed</th><th>p50</th><th>p90</th><th>p99</th><th>service p99</th>{{if $first.E2E}}<th>accepted / s</th>{{end}}{{range $first.E2E}}<th>seen / s at {{.Stage}}</th><th>e2e {{.Stage}} p99</th>{{end}}{{if .StepVerdicts}}<th>kept up</th>{{end}}</tr>
{{$verdicts := .StepVerdicts}}{{$dropped := .StepsDropped}}{{$late := .StepsLate}}{{range .S.Steps}}<tr class="step"><td>{{.Step}}</td><td>{{.Target}}</td><td>{{f2 .DurationS}} s</td><td>{{f2 .IterationRate}}</td><td>{{f2 .RequestRate}}</td>{{if $dropped}}<td>{{.Dropped}}</td>{{end}}{{if $late}}<td>{{.Late}}</td>{{end}}<td>{{.Requests}}</td><td>{{.Failed}}</td>{{if .Answered}}<td>{{ms .Latency.P50}}</td><td>{{ms .Latency.P90}}</td><td>{{ms .Latency.P99}}</td><td>{{ms .Service.P99}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td>{{end}}{{if .E2E}}<td>{{f2 .AcceptedRate}}</td>{{end}}{{range .E2E}}<td>{{f2 .SeenPerSecond}}</td><td>{{seenMs .Events .Latency.P99}}</td>{{end}}{{if $verdicts}}<td>{{keptUp .KeptUp}}</td>{{end}}</tr>
{{end}}</table>
{{if .StepsBehind}}<ul id="steps-behind">{{range .S.Steps}}{{if .Behind}}<li>step {{.Step}} ({{.Target}}) fell behind: {{join .Behind "; "}}</li>{{end}}{{if .NotJudged}}<li>step {{.Step}} ({{.Target}}) not judged: {{join .NotJudged "; "}}</li>{{end}}{{end}}</ul>{{end}}
<p>A request belongs to the step its iteration was due in; achieved is iterations begun per second of the step; a step keeps up when it achieves at least 1 − tolerance of its target in iterations whose requests succeeded, holds its thresholds, and, with sinks, each stage kept its backlog: over the step's own window, shifted by the stage's least delay, it saw what the API accepted in it, but for half the tolerance (the rule: docs/runs.md).</p>{{end}}
<h2>Endpoints</h2>
<table><tr><th>endpoint</th><th>requests</th><th>answered</th><th>ok</th><th>status</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>
{{$st := .EndpointStatus}}{{range $i, $e := .S.Endpoints}}<tr><td>{{.Name}}</td><td>{{.Requests}}</td><td>{{.Answered}}</td><td>{{pct .Succeeded .Requests}}</td><td class="status">{{index1 $st $i}}</td>{{if .Answered}}<td>{{ms .Latency.P50}}</td><td>{{ms .Latency.P90}}</td><td>{{ms .Latency.P99}}</td><td>{{ms .Latency.Max}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td>{{end}}</tr>
{{end}}</table>
{{with .S.WebSocket}}<h2>WebSocket sessions</h2>
<table id="websocket"><tr><th>endpoint</th><th>sessions</th><th>opened</th><th>failed</th><th>sent</th><th>received</th><th>p50</th><th>p99</th><th>max</th><th>failures</th></tr>
{{range .Endpoints}}<tr><td>{{.Name}}</td><td>{{.Sessions}}</td><td>{{.Opened}}</td><td>{{.Failed}}</td><td>{{.MessagesSent}}</td><td>{{.MessagesReceived}}</td><td>{{ms .Latency.P50}}</td><td>{{ms .Latency.P99}}</td><td>{{ms .Latency.Max}}</td><td>{{wsFailures .WSCounts}}</td></tr>
{{end}}<tr><td>total</td><td>{{.Sessions}}</td><td>{{.Opened}}</td><td>{{.Failed}}</td><td>{{.MessagesSent}}</td><td>{{.MessagesReceived}}</td><td>{{ms .Latency.P50}}</td><td>{{ms .Latency.P99}}</td><td>{{ms .Latency.Max}}</td><td>{{wsFailures .WSCounts}}</td></tr></table>
<p>Messages are data messages (text, binary); the latency runs from each client message's due time to the next server message.</p>{{end}}
{{if .Status}}<h2>Answers by status</h2>
<table id="status-codes"><tr><th>status</th><th>answers</th></tr>{{range .Status}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
{{if .GRPC}}<h2>gRPC status</h2>
<table><tr><th>grpc-status</th><th>answers</th></tr>{{range .GRPC}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>{{end}}</table>
<p>An answer to a gRPC call succeeds when its grpc-status is OK; any other is failed, whatever its HTTP status.</p>{{end}}
{{if .Errors}}<h2>Errors</h2>
<table><tr><th>kind</th><th>requests</th></tr>{{range .Errors}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
{{if .S.Thresholds}}<h2>Thresholds</h2>
<table><tr><th>threshold</th><th>measured</th><th>result</th></tr>
{{range .S.Thresholds}}<tr><td>{{.Name}}</td><td>{{.ValueText 2}}</td><td class="{{if .Pass}}pass">pass{{else}}fail">FAIL{{end}}</td></tr>
{{end}}</table>{{end}}
{{with .S.Compare}}<h2>Comparison with the recorded responses</h2>
<p>{{.Matched}} of {{.Compared}} match ({{f2 .MatchPct}}%){{if .Body}}, status and body{{else}}, status{{end}}.</p>
<table><tr><th>endpoint</th><th>compared</th><th>match</th></tr>{{range .Endpoints}}<tr><td>{{.Name}}</td><td>{{.Compared}}</td><td>{{f2 .MatchPct}}%</td></tr>{{end}}</table>
{{if .Mismatches}}<table><tr><th>mismatch</th><th>count</th><th>recorded</th><th>replayed</th></tr>{{range .Mismatches}}<tr><td>{{.Endpoint}} · {{.Kind}}</td><td>{{.Count}}</td><td>{{.Recorded}}</td><td>{{.Replayed}}</td></tr>{{end}}</table>{{end}}
{{end}}
{{with .S.E2E}}<h2>End-to-end: send → seen by a sink</h2>
<p>{{.Sent}} events sent, {{.Accepted}} accepted by the API{{if .Foreign}}, {{.Foreign}} foreign IDs{{end}}; waited {{f2 .DrainS}} s for the last.</p>
{{$known := .LossKnown}}{{$dup := $.E2EDuplicates}}<table id="e2e-stages"><tr><th>stage</th><th>unique</th>{{if $dup}}<th>duplicates</th>{{end}}<th>pending</th>{{if $known}}<th>lost</th>{{end}}<th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>{{range .Stages}}<tr><td>{{.Name}}</td><td>{{.Unique}}</td>{{if $dup}}<td>{{.Duplicates}}</td>{{end}}<td>{{.Pending}} ({{f2 .PendingPct}}%)</td>{{if $known}}<td>{{.Lost}} ({{f2 .LostPct}}%)</td>{{end}}<td>{{seenMs .Unique .Latency.P50}}</td><td>{{seenMs .Unique .Latency.P90}}</td><td>{{seenMs .Unique .Latency.P99}}</td><td>{{seenMs .Unique .Latency.Max}}</td></tr>{{end}}</table>
{{if not $known}}<p>Loss not known: no sink can prove that an event will never come, so events accepted but not seen by the end of the drain are pending{{if .Pending}}; a longer --drain may see them{{end}}.</p>{{end}}
{{if .Deltas}}<h3>Between stages (--e2e-deltas)</h3>
<p>The time of each event from one stage to the next; at most {{.DeltasPeakInFlight}} events followed at once.</p>
<table id="e2e-deltas"><tr><th>from → to</th><th>events</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>{{range .Deltas}}<tr><td>{{.From}} → {{.To}}</td><td>{{.Events}}</td><td>{{ms .Latency.P50}}</td><td>{{ms .Latency.P90}}</td><td>{{ms .Latency.P99}}</td><td>{{ms .Latency.Max}}</td></tr>{{end}}</table>{{end}}
{{end}}{{if .S.Transforms}}<h2>Transforms</h2>
{{$grpc := .TransformsGRPC}}<table id="transforms"><tr><th>transform</th><th>changed</th><th>failed</th>{{if $grpc}}<th>skipped (gRPC)</th>{{end}}</tr>{{range .S.Transforms}}<tr><td>{{.Name}}</td><td>{{.Changed}}</td><td>{{.Failed}}</td>{{if $grpc}}<td>{{.SkippedGRPC}}</td>{{end}}</tr>{{end}}</table>
{{if $grpc}}<p>A gRPC body is length-prefixed protobuf: body rewrites skip it; header rewrites still apply.</p>{{end}}
{{end}}<h2>Configuration</h2>
<table>{{range .Config}}<tr><td>{{.Name}}</td><td style="text-align:left">{{.Value}}</td></tr>{{end}}
<tr><td>requests · succeeded · failed</td><td style="text-align:left">{{.S.Requests}} · {{.S.Succeeded}} · {{.S.Failed}}</td></tr>
<tr><td>wall · issuing · wait</td><td style="text-align:left">{{f2 .S.WallS}} s · {{f2 .S.DurationS}} s · {{f2 .S.WaitS}} s</td></tr>
<tr><td>VUs · connections · reconnects</td><td style="text-align:left">{{.S.VUsMax}} · {{.S.Connections}} · {{.S.Reconnects}}</td></tr>
{{if .Protocols}}<tr><td>connections by protocol</td><td style="text-align:left">{{.Protocols}}</td></tr>{{end}}
{{if or .S.Downgraded .S.Upgraded .S.Retried}}<tr><td>downgraded · upgraded · retried</td><td style="text-align:left">{{.S.Downgraded}} · {{.S.Upgraded}} · {{.S.Retried}}</td></tr>{{end}}</table>
</body></html>
`))

// lineChart draws the distribution chart (chart.Lines) for the page.
func lineChart(title, xLabel, yUnit string, xs []float64, ss []chart.Series, xTick func(float64) string) template.HTML {
	c := chart.Lines{Title: title, XLabel: xLabel, YUnit: yUnit, X: xs, Series: ss, XTick: xTick}
	return template.HTML(c.SVG())
}

// timeChart draws a chart of per-second points over elapsed time: each
// point at the middle of its second (mid), on the page's one time axis
// (pageAxis), so that a point lines up with the step bands and the target
// drawn over the same second, and with the same second on every other
// time chart of the page.
func timeChart(title, yUnit string, ax pageAxis, mid []float64, ss []chart.Series, bands []chart.Band) template.HTML {
	c := timeLines(title, yUnit, ax, mid, ss, bands)
	return template.HTML(c.SVG())
}

// timeLines is the chart timeChart draws.
func timeLines(title, yUnit string, ax pageAxis, mid []float64, ss []chart.Series, bands []chart.Band) chart.Lines {
	c := chart.Lines{Title: title, XLabel: "elapsed", YUnit: yUnit, X: mid, Series: ss, XTick: elapsedTick, Bands: bands}
	c.XFrom, c.XTo = 0, ax.end
	return c
}

// pageAxis is the one time axis every time chart of a run's page shares
// (requests, latency, end-to-end, VUs): from T0, the Unix second the run
// started in (or the first second anything was counted in, if earlier),
// to end seconds after it, the end of the last second anything was
// counted in, of the run's last answer and of its drain (the sinks' end
// of counting), whichever is last.
type pageAxis struct {
	T0  int64
	end float64
}

// axisOf is s's page axis.
func axisOf(s *Summary) pageAxis {
	t0, last := s.Started.Unix(), float64(s.Started.UnixNano())/1e9+max(s.WallS, s.DurationS+s.WaitS)
	if s.Started.IsZero() && len(s.Intervals) > 0 {
		t0, last = s.Intervals[0].T, 0
	}
	see := func(t int64) {
		t0, last = min(t0, t), max(last, float64(t+1))
	}
	for _, iv := range s.Intervals {
		see(iv.T)
	}
	if s.E2E != nil {
		for _, st := range s.E2E.Stages {
			for _, iv := range st.Intervals {
				see(iv.T)
			}
		}
		if s.E2E.SeenUntilMS > 0 {
			last = max(last, float64(s.E2E.SeenUntilMS)/1000)
		}
	}
	for _, st := range s.Steps {
		last = max(last, float64(s.Started.UnixNano())/1e9+st.StartS+st.DurationS)
	}
	return pageAxis{T0: t0, end: max(last-float64(t0), 1)}
}

// secondsAt are the middles of the Unix seconds ts on an elapsed axis
// that starts at Unix second t0: a second's count is drawn at its middle.
func secondsAt(ts []int64, t0 int64) []float64 {
	xs := make([]float64, len(ts))
	for i, t := range ts {
		xs[i] = float64(t-t0) + 0.5
	}
	return xs
}

// intervalSeconds are the middles of the run's per-second intervals on
// the time charts' axis (from chartT0).
func intervalSeconds(s *Summary) []float64 {
	ts := make([]int64, len(s.Intervals))
	for i, iv := range s.Intervals {
		ts[i] = iv.T
	}
	return secondsAt(ts, chartT0(s))
}

// elapsedTick labels a tick of an elapsed-seconds axis.
func elapsedTick(x float64) string { return chart.Label(math.Round(x*10)/10) + "s" }

// stepOffset is where the run's start lies on an elapsed axis that starts
// at Unix second t0 (the first interval's).
func stepOffset(s *Summary, t0 int64) float64 {
	return float64(s.Started.UnixNano())/1e9 - float64(t0)
}

// stepBands are the steps of --stages as bands of an elapsed axis that
// starts at Unix second t0.
func stepBands(s *Summary, t0 int64) []chart.Band {
	off := stepOffset(s, t0)
	bands := make([]chart.Band, 0, len(s.Steps))
	for _, st := range s.Steps {
		bands = append(bands, chart.Band{From: off + st.StartS, To: off + st.StartS + st.DurationS, Label: fmt.Sprintf("step %d: %s", st.Step, st.Target)})
	}
	return bands
}

// stepTarget is the target of the steps at u seconds from the run's
// start (a ramp moving linearly), and false outside every step.
func stepTarget(s *Summary, u float64) (float64, bool) {
	for _, st := range s.Steps {
		if u >= st.StartS && u < st.StartS+st.DurationS {
			return st.From + (st.To-st.From)*(u-st.StartS)/st.DurationS, true
		}
	}
	return 0, false
}

// secondSamples cut a second into this many slices to sum a target over
// it (exact for a constant, within a slice's share at a step's edge).
const secondSamples = 100

// targetSeries is the target rate of an open-model run for each second
// whose middle is at x (elapsed seconds from Unix second t0), dashed, in
// the charts' unit, requests a second: the requests due in that second
// by a constant --rate, or by the steps' targets (a ramp moving
// linearly), each iterations a second times the requests an iteration
// holds. A second the run covers only in part (its first and last) is due
// only that part, as its measured count is. Nil for a closed model, or
// when the requests an iteration holds are not known.
func targetSeries(s *Summary, xs []float64, t0 int64) []chart.Series {
	per := s.perIteration()
	var at func(u float64) (float64, bool)
	switch {
	case per <= 0:
		return nil
	case len(s.Steps) > 0 && s.Steps[0].Unit == "rate":
		at = func(u float64) (float64, bool) { return stepTarget(s, u) }
	case len(s.Steps) == 0 && s.TargetRate != nil:
		at = func(u float64) (float64, bool) { return *s.TargetRate, u >= 0 && u < max(s.DurationS, 1e-9) }
	default:
		return nil
	}
	off := stepOffset(s, t0)
	ys := make([]float64, len(xs))
	for i, x := range xs {
		sum, in := 0.0, false
		for k := range secondSamples {
			if v, ok := at(x - 0.5 + (float64(k)+0.5)/secondSamples - off); ok {
				sum, in = sum+v/secondSamples, true
			}
		}
		ys[i] = math.NaN()
		if in {
			ys[i] = per * sum
		}
	}
	name := "target (requests / s)"
	if s.RateUnit != "requests" && per != 1 {
		name = "target (requests / s: iterations / s × " + chart.Label(per) + ")"
	}
	return []chart.Series{{Name: name, Color: "#495057", Y: ys, Dashed: true}}
}

// chartT0 is the Unix second the time charts start at (pageAxis).
func chartT0(s *Summary) int64 { return axisOf(s).T0 }

func throughputChart(s *Summary) template.HTML {
	if s.E2E != nil && len(s.E2E.Stages) > 0 {
		return sentReceivedChart(s)
	}
	xs := intervalSeconds(s)
	req, fail := make([]float64, len(xs)), make([]float64, len(xs))
	for i, iv := range s.Intervals {
		req[i] = float64(iv.Requests)
		fail[i] = float64(iv.Errors + iv.Status["4xx"] + iv.Status["5xx"] + iv.GRPCFailed)
	}
	label := "failed (≥400 or error)"
	if len(s.GRPCStatus) > 0 {
		label = "failed (≥400, gRPC error or error)"
	}
	t0 := chartT0(s)
	ss := []chart.Series{{Name: "requests", Color: chart.Palette[0], Y: req}, {Name: label, Color: chart.Palette[5], Y: fail}}
	ss = append(append(ss, failedSeries(s)...), targetSeries(s, xs, t0)...)
	return timeChart("Throughput and failures over time", "requests / s", axisOf(s), xs, ss, stepBands(s, t0))
}

// failedSeries are the requests that failed without an answer, per second,
// one series per error kind (timeout, connect, ...), in kind order.
func failedSeries(s *Summary) []chart.Series {
	return keyedSeries(s, "no answer: ", 2, func(iv *Interval) map[string]int64 { return iv.Failed })
}

// keyedSeries are one series per key of the intervals' counts by key
// (of), in key order, named prefix+key, colored from chart.Palette[first] on.
func keyedSeries(s *Summary, prefix string, first int, of func(*Interval) map[string]int64) []chart.Series {
	var keys []string
	for i := range s.Intervals {
		for k := range of(&s.Intervals[i]) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	ss := make([]chart.Series, 0, len(keys))
	for i, k := range keys {
		ys := make([]float64, len(s.Intervals))
		for j := range s.Intervals {
			ys[j] = float64(of(&s.Intervals[j])[k])
		}
		ss = append(ss, chart.Series{Name: prefix + k, Color: chart.Palette[(first+i)%len(chart.Palette)], Y: ys})
	}
	return ss
}

// sentReceivedChart is the throughput chart of a run followed to sinks:
// requests sent and events received at each stage, second by second,
// through the drain; a backlog is the gap between the curves.
func sentReceivedChart(s *Summary) template.HTML {
	seconds := map[int64]bool{}
	for _, iv := range s.Intervals {
		seconds[iv.T] = true
	}
	for _, st := range s.E2E.Stages {
		for _, iv := range st.Intervals {
			seconds[iv.T] = true
		}
	}
	ts := make([]int64, 0, len(seconds))
	for t := range seconds {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	if len(ts) == 0 {
		return ""
	}
	at := map[int64]int{}
	for i, t := range ts {
		at[t] = i
	}
	ax := axisOf(s)
	xs := secondsAt(ts, ax.T0)
	sent := make([]float64, len(ts))
	for _, iv := range s.Intervals {
		sent[at[iv.T]] = float64(iv.Requests)
	}
	ss := []chart.Series{{Name: "requests sent", Color: chart.Palette[0], Y: sent}}
	for k, st := range s.E2E.Stages {
		recv := make([]float64, len(ts))
		for _, iv := range st.Intervals {
			recv[at[iv.T]] = float64(iv.Received)
		}
		ss = append(ss, chart.Series{Name: "events at " + st.Name, Color: chart.Palette[(k+1)%len(chart.Palette)], Y: recv})
	}
	ss = append(ss, targetSeries(s, xs, ax.T0)...)
	return timeChart("Sent and received over time", "per second", ax, xs, ss, stepBands(s, ax.T0))
}

func latencyChart(s *Summary) template.HTML {
	xs := intervalSeconds(s)
	p50, p90, p99, mx := make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs))
	for i, iv := range s.Intervals {
		p50[i], p90[i], p99[i], mx[i] = iv.Latency.P50, iv.Latency.P90, iv.Latency.P99, iv.Latency.Max
	}
	return timeChart("Latency from due time, per second", "ms", axisOf(s),
		xs, []chart.Series{{Name: "p50", Color: chart.Palette[0], Y: p50}, {Name: "p90", Color: chart.Palette[2], Y: p90}, {Name: "p99", Color: chart.Palette[1], Y: p99}, {Name: "max", Color: chart.Palette[3], Y: mx}},
		stepBands(s, chartT0(s)))
}

// distributionChart plots latency against percentile on HdrHistogram's
// axis: x = log10(1/(1−p)), so 90%, 99%, 99.9% are evenly spaced.
func distributionChart(s *Summary) template.HTML {
	h, err := DecodeHistogram(s.Histogram)
	if err != nil || h.TotalCount() == 0 {
		return lineChart("Latency by percentile", "percentile", "ms", nil, nil, nil)
	}
	var xs, lat []float64
	for x := 0.0; x <= 5.0001; x += 0.05 {
		p := 100 * (1 - math.Pow(10, -x))
		xs = append(xs, x)
		lat = append(lat, msOf(h.ValueAtQuantile(p)))
	}
	svc := make([]float64, len(xs))
	if hs, err := DecodeHistogram(s.ServiceHistogram); err == nil {
		for i, x := range xs {
			svc[i] = msOf(hs.ValueAtQuantile(100 * (1 - math.Pow(10, -x))))
		}
	}
	tick := func(x float64) string {
		p := 100 * (1 - math.Pow(10, -x))
		return strings.TrimSuffix(chart.Label(p), ".") + "%"
	}
	return lineChart("Latency by percentile (HdrHistogram's 1/(1−p) axis)", "percentile", "ms",
		xs, []chart.Series{{Name: "latency (from due)", Color: chart.Palette[1], Y: lat}, {Name: "service time", Color: chart.Palette[0], Y: svc}}, tick)
}

func statusChart(s *Summary) template.HTML {
	xs := intervalSeconds(s)
	var ss []chart.Series
	for c, class := range []string{"2xx", "3xx", "4xx", "5xx"} {
		ys := make([]float64, len(xs))
		any := false
		for i, iv := range s.Intervals {
			ys[i] = float64(iv.Status[class])
			any = any || ys[i] > 0
		}
		if any {
			ss = append(ss, chart.Series{Name: class, Color: chart.Palette[[]int{2, 0, 4, 5}[c]], Y: ys})
		}
	}
	return timeChart("Answers by status class over time (by code: the table below)", "answers / s", axisOf(s),
		xs, append(ss, grpcSeries(s, len(ss))...), stepBands(s, chartT0(s)))
}

// vusChart is the VUs busy each second (those that finished a request in
// it), against the VUs' target of a closed model's steps.
func vusChart(s *Summary) template.HTML {
	xs := intervalSeconds(s)
	ys := make([]float64, len(xs))
	for i, iv := range s.Intervals {
		ys[i] = float64(iv.VUs)
	}
	ss := []chart.Series{{Name: "VUs (finished a request in the second)", Color: chart.Palette[0], Y: ys}}
	t0 := chartT0(s)
	if len(s.Steps) > 0 && s.Steps[0].Unit == "vus" {
		ss = append(ss, chart.Series{Name: "target VUs (the most the second had)", Color: "#495057", Y: targetVUs(s, xs, stepOffset(s, t0)), Dashed: true})
	}
	c := timeLines("VUs over time", "VUs", axisOf(s), xs, ss, stepBands(s, t0))
	c.YWhole = true
	return template.HTML(c.SVG())
}

// targetVUs is, for each second whose middle is at x, the most VUs the
// closed model's steps had active in it (their target, rounded, as the
// VUs follow it), or NaN for a second outside the steps: what the VUs
// that finished a request in the second are measured against, since a VU
// counts in every second it was active in, however briefly. off is where
// the run's start lies on the axis.
func targetVUs(s *Summary, xs []float64, off float64) []float64 {
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = math.NaN()
		for k := range secondSamples + 1 { // both edges of the second
			if v, ok := stepTarget(s, x-0.5+min(float64(k)/secondSamples, 1-1e-9)-off); ok {
				ys[i] = max(nanTo0(ys[i]), math.Round(v))
			}
		}
	}
	return ys
}

// nanTo0 is v, or 0 for NaN.
func nanTo0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// e2eLatencyChart is the end-to-end latency per second of each e2e stage
// (p50, p90, p99 of the events first seen at it in the second); "" for a
// run not followed to sinks.
func e2eLatencyChart(s *Summary) template.HTML {
	if s.E2E == nil || len(s.E2E.Stages) == 0 {
		return ""
	}
	ax := axisOf(s)
	seconds := map[int64]bool{}
	for _, st := range s.E2E.Stages {
		for _, iv := range st.Intervals {
			if iv.Latency != nil {
				seconds[iv.T] = true
			}
		}
	}
	if len(seconds) == 0 {
		return ""
	}
	ts := make([]int64, 0, len(seconds))
	for t := range seconds {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	at := map[int64]int{}
	for i, t := range ts {
		at[t] = i
	}
	xs := secondsAt(ts, ax.T0)
	var ss []chart.Series
	for k, st := range s.E2E.Stages {
		p50, p90, p99 := nanSeries(len(ts)), nanSeries(len(ts)), nanSeries(len(ts))
		for _, iv := range st.Intervals {
			if iv.Latency != nil {
				i := at[iv.T]
				p50[i], p90[i], p99[i] = iv.Latency.P50, iv.Latency.P90, iv.Latency.P99
			}
		}
		c := chart.Palette[(3*k)%len(chart.Palette)]
		ss = append(ss, chart.Series{Name: st.Name + " p50", Color: c, Y: p50}, chart.Series{Name: st.Name + " p90", Color: chart.Palette[(3*k+1)%len(chart.Palette)], Y: p90},
			chart.Series{Name: st.Name + " p99", Color: chart.Palette[(3*k+2)%len(chart.Palette)], Y: p99})
	}
	return timeChart("End-to-end latency per second (send → seen, by the second first seen)", "ms", ax, xs, ss, stepBands(s, ax.T0))
}

// nanSeries is n points, none drawn until set.
func nanSeries(n int) []float64 {
	ys := make([]float64, n)
	for i := range ys {
		ys[i] = math.NaN()
	}
	return ys
}

// grpcSeries are the answers to gRPC calls per second, one series per
// grpc-status name (OK, NOT_FOUND, ...), in name order; colors follow the
// first n series'.
func grpcSeries(s *Summary, n int) []chart.Series {
	return keyedSeries(s, "gRPC ", n+1, func(iv *Interval) map[string]int64 { return iv.GRPCStatus })
}
