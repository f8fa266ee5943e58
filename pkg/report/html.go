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
)

// Setting is one line of the run's configuration shown in the HTML report.
type Setting struct{ Name, Value string }

// WriteHTML writes the report as one self-contained HTML file: no script,
// no font, no CDN — the charts are inline SVG drawn here — so it opens
// offline. Charts: throughput and failures over time (those without an
// answer by kind), latency percentiles over
// time, the latency percentile distribution on HdrHistogram's log
// 1/(1−p) axis, and answers by status class over time; then the endpoint,
// error, threshold and comparison tables and the configuration.
func WriteHTML(w io.Writer, s *Summary, config []Setting) error {
	data := htmlData{S: s, Config: config, Started: s.Started.Format(time.RFC3339)}
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
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms": func(v float64) string { return formatMillis(v) },
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
.pass{color:#1a7f37;font-weight:600}.fail{color:#c0262d;font-weight:600}.chart{margin:8px 0 20px}svg text{font:11px system-ui,sans-serif;fill:#3b4252}
</style></head><body>
<h1>replay report</h1>
<div>started {{.Started}} · model {{.S.Model}}{{if .S.Steps}} · stages {{stages .S.Steps}}{{else if .S.TargetRate}} · target {{f2 (deref .S.TargetRate)}}/s{{end}}</div>
<div class="kpis">
<div class="kpi"><b>{{.S.Requests}}</b><span>requests</span></div>
<div class="kpi"><b>{{.S.Answered}}</b><span>answered ({{sub .S.Requests .S.Answered}} failed without an answer)</span></div>
<div class="kpi"><b>{{f2 .S.RPS}}/s</b><span>rate (answered / wall time)</span></div>
<div class="kpi"><b>{{pct .S.Succeeded .S.Requests}}</b><span>success</span></div>
{{if .S.Answered}}<div class="kpi"><b>{{ms .S.Latency.P50}}</b><span>latency p50 (answered, from due)</span></div>
<div class="kpi"><b>{{ms .S.Latency.P99}}</b><span>latency p99 (answered, from due)</span></div>
<div class="kpi"><b>{{ms .S.Service.P99}}</b><span>service p99 (answered, from sent)</span></div>
{{else}}<div class="kpi"><b class="fail">none</b><span>latency: no request was answered</span></div>
{{end}}
<div class="kpi"><b>{{.S.Dropped}}</b><span>dropped iterations</span></div>
</div>
{{range .Charts}}<div class="chart">{{.}}</div>{{end}}
{{if .S.Steps}}<h2>Steps</h2>
<table id="steps"><tr><th>step</th><th>target</th><th>duration</th><th>achieved</th><th>dropped</th><th>late</th><th>requests</th><th>failed</th><th>p50</th><th>p90</th><th>p99</th><th>service p99</th>{{range (index .S.Steps 0).E2E}}<th>e2e {{.Stage}} p99</th>{{end}}</tr>
{{range .S.Steps}}<tr class="step"><td>{{.Step}}</td><td>{{.Target}}</td><td>{{f2 .DurationS}} s</td><td>{{f2 .IterationRate}}{{if eq .Unit "rate"}}/s{{else}} it/s{{end}}</td><td>{{.Dropped}}</td><td>{{.Late}}</td><td>{{.Requests}}</td><td>{{.Failed}}</td>{{if .Answered}}<td>{{ms .Latency.P50}}</td><td>{{ms .Latency.P90}}</td><td>{{ms .Latency.P99}}</td><td>{{ms .Service.P99}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td>{{end}}{{range .E2E}}<td>{{if .Events}}{{ms .Latency.P99}}{{else}}-{{end}}</td>{{end}}</tr>
{{end}}</table>
<p>A request belongs to the step its iteration was due in; achieved is iterations begun per second of the step.</p>{{end}}
<h2>Endpoints</h2>
<table><tr><th>endpoint</th><th>requests</th><th>answered</th><th>ok</th><th>status</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>
{{$st := .EndpointStatus}}{{range $i, $e := .S.Endpoints}}<tr><td>{{.Name}}</td><td>{{.Requests}}</td><td>{{.Answered}}</td><td>{{pct .Succeeded .Requests}}</td><td class="status">{{index1 $st $i}}</td>{{if .Answered}}<td>{{ms .Latency.P50}}</td><td>{{ms .Latency.P90}}</td><td>{{ms .Latency.P99}}</td><td>{{ms .Latency.Max}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td>{{end}}</tr>
{{end}}</table>
{{if .Status}}<h2>Answers by status</h2>
<table id="status-codes"><tr><th>status</th><th>answers</th></tr>{{range .Status}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
{{if .GRPC}}<h2>gRPC status</h2>
<table><tr><th>grpc-status</th><th>answers</th></tr>{{range .GRPC}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>{{end}}</table>
<p>An answer to a gRPC call succeeds when its grpc-status is OK; any other is failed, whatever its HTTP status.</p>{{end}}
<h2>Errors</h2>
{{if .Errors}}<table><tr><th>kind</th><th>requests</th></tr>{{range .Errors}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{else}}<p>No request failed without an answer.</p>{{end}}
<h2>Thresholds</h2>
{{if .S.Thresholds}}<table><tr><th>threshold</th><th>measured</th><th>result</th></tr>
{{range .S.Thresholds}}<tr><td>{{.Name}}</td><td>{{f2 .Measured}} {{.Unit}}</td><td class="{{if .Pass}}pass">pass{{else}}fail">FAIL{{end}}</td></tr>
{{end}}</table>{{else}}<p>No --threshold given.</p>{{end}}
<h2>Comparison with the recorded responses</h2>
{{with .S.Compare}}<p>{{.Matched}} of {{.Compared}} match ({{f2 .MatchPct}}%){{if .Body}}, status and body{{else}}, status{{end}}.</p>
<table><tr><th>endpoint</th><th>compared</th><th>match</th></tr>{{range .Endpoints}}<tr><td>{{.Name}}</td><td>{{.Compared}}</td><td>{{f2 .MatchPct}}%</td></tr>{{end}}</table>
{{if .Mismatches}}<table><tr><th>mismatch</th><th>count</th><th>recorded</th><th>replayed</th></tr>{{range .Mismatches}}<tr><td>{{.Endpoint}} · {{.Kind}}</td><td>{{.Count}}</td><td>{{.Recorded}}</td><td>{{.Replayed}}</td></tr>{{end}}</table>{{end}}
{{else}}<p>Not compared (run with --compare).</p>{{end}}
{{with .S.E2E}}<h2>End-to-end: send → seen by a sink</h2>
<p>{{.Sent}} events sent, {{.Accepted}} accepted by the API{{if .Foreign}}, {{.Foreign}} foreign IDs{{end}}; waited {{f2 .DrainS}} s for the last.</p>
{{$known := .LossKnown}}<table><tr><th>stage</th><th>unique</th><th>duplicates</th><th>pending</th>{{if $known}}<th>lost</th>{{end}}<th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>{{range .Stages}}<tr><td>{{.Name}}</td><td>{{.Unique}}</td><td>{{.Duplicates}}</td><td>{{.Pending}} ({{f2 .PendingPct}}%)</td>{{if $known}}<td>{{.Lost}} ({{f2 .LostPct}}%)</td>{{end}}<td>{{ms .Latency.P50}}</td><td>{{ms .Latency.P90}}</td><td>{{ms .Latency.P99}}</td><td>{{ms .Latency.Max}}</td></tr>{{end}}</table>
{{if not $known}}<p>Loss not known: no sink can prove that an event will never come, so events accepted but not seen by the end of the drain are pending{{if .Pending}}; a longer --drain may see them{{end}}.</p>{{end}}
{{end}}{{if .S.Transforms}}<h2>Transforms</h2>
<table><tr><th>transform</th><th>changed</th><th>failed</th><th>skipped (gRPC)</th></tr>{{range .S.Transforms}}<tr><td>{{.Name}}</td><td>{{.Changed}}</td><td>{{.Failed}}</td><td>{{.SkippedGRPC}}</td></tr>{{end}}</table>
{{end}}<h2>Configuration</h2>
<table>{{range .Config}}<tr><td>{{.Name}}</td><td style="text-align:left">{{.Value}}</td></tr>{{end}}
<tr><td>requests · succeeded · failed</td><td style="text-align:left">{{.S.Requests}} · {{.S.Succeeded}} · {{.S.Failed}}</td></tr>
<tr><td>wall · issuing · wait</td><td style="text-align:left">{{f2 .S.WallS}} s · {{f2 .S.DurationS}} s · {{f2 .S.WaitS}} s</td></tr>
<tr><td>VUs · connections · reconnects</td><td style="text-align:left">{{.S.VUsMax}} · {{.S.Connections}} · {{.S.Reconnects}}</td></tr>
{{if .Protocols}}<tr><td>connections by protocol</td><td style="text-align:left">{{.Protocols}}</td></tr>{{end}}
{{if or .S.Downgraded .S.Upgraded .S.Retried}}<tr><td>downgraded · upgraded · retried</td><td style="text-align:left">{{.S.Downgraded}} · {{.S.Upgraded}} · {{.S.Retried}}</td></tr>{{end}}</table>
</body></html>
`))

// series is one line of a chart; a dashed one is a reference (a target),
// not a measurement.
type series struct {
	name   string
	color  string
	ys     []float64
	dashed bool
}

// band is a shaded stretch of a time chart's x axis: a step of --stages.
type band struct {
	x0, x1 float64
	label  string
}

var palette = []string{"#2f6fdf", "#d9480f", "#2b8a3e", "#ae3ec9", "#e67700", "#c92a2a", "#0b7285", "#5c940d", "#862e9c", "#495057"}

// Chart geometry, in SVG units.
const chartW, chartH, chartLeft, chartRight, chartBottom = 1040.0, 260.0, 64.0, 16.0, 40.0

// legendItem is where one legend entry goes.
type legendItem struct{ x, y float64 }

// legendLayout places the legend entries of names in rows under the title,
// wrapping within the chart's width so that no two overlap, and returns
// where each goes and the height the rows take.
func legendLayout(names []string) ([]legendItem, float64) {
	const rowH, gap, charW = 15.0, 18.0, 6.6
	out := make([]legendItem, len(names))
	x, y := chartLeft, 34.0 // under the title
	for i, n := range names {
		w := 16 + charW*float64(len([]rune(n)))
		if x > chartLeft && x+w > chartW-chartRight {
			x, y = chartLeft, y+rowH
		}
		out[i] = legendItem{x, y}
		x += w + gap
	}
	if len(names) == 0 {
		return out, 0
	}
	return out, y - 34 + rowH
}

// niceStep is the 1, 2 or 5 times a power of ten closest above span/n:
// the step of round ticks that cut span into at most about n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// lineChart draws series over xs as an SVG with axes, round ticks (1, 2, 5
// times a power of ten), units, a legend in rows that never overlap, and
// bands shaded behind the lines.
func lineChart(title, xLabel, yUnit string, xs []float64, ss []series, xTick func(float64) string, bands ...band) template.HTML {
	const W, H, left, right, bottom = chartW, chartH, chartLeft, chartRight, chartBottom
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.name
	}
	legend, legendH := legendLayout(names)
	top := 36 + legendH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, W, H+legendH, W, H+legendH, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="%.0f" y="14" style="font-weight:600;font-size:13px">%s</text>`, left, template.HTMLEscapeString(title))
	if len(xs) == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">no data</text></svg>`, W/2, H/2)
		return template.HTML(b.String())
	}
	bottomY := H + legendH - bottom
	xmin, xmax := xs[0], xs[len(xs)-1]
	for _, bd := range bands {
		xmax = math.Max(xmax, bd.x1)
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	ymax := 0.0
	for _, s := range ss {
		for _, y := range s.ys {
			if !math.IsNaN(y) {
				ymax = math.Max(ymax, y)
			}
		}
	}
	ystep := niceStep(ymax, 4)
	ymax = math.Max(ystep, math.Ceil(ymax/ystep-1e-9)*ystep)
	px := func(x float64) float64 { return left + (x-xmin)/(xmax-xmin)*(W-left-right) }
	py := func(y float64) float64 { return bottomY - y/ymax*(bottomY-top) }
	// Bands (steps), behind everything.
	for i, bd := range bands {
		x0, x1 := px(math.Max(bd.x0, xmin)), px(math.Min(bd.x1, xmax))
		if x1 <= x0 {
			continue
		}
		fill := "#eef1f8"
		if i%2 == 1 {
			fill = "#f8f9fc"
		}
		fmt.Fprintf(&b, `<rect class="step-band" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x0, top, x1-x0, bottomY-top, fill)
		fmt.Fprintf(&b, `<text class="step-label" x="%.1f" y="%.1f" style="fill:#6b7285">%s</text>`, x0+4, top+12, template.HTMLEscapeString(bd.label))
	}
	// Grid and y ticks.
	for y := 0.0; y <= ymax*(1+1e-9); y += ystep {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e6e8ef"/>`, left, W-right, py(y), py(y))
		fmt.Fprintf(&b, `<text class="ytick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left-6, py(y)+4, trimFloat(y))
	}
	fmt.Fprintf(&b, `<text x="12" y="%.1f" transform="rotate(-90 12 %.1f)" text-anchor="middle">%s</text>`, (bottomY+top)/2, (bottomY+top)/2, template.HTMLEscapeString(yUnit))
	// X ticks, at round values.
	xstep := niceStep(xmax-xmin, 6)
	for x := math.Ceil(xmin/xstep-1e-9) * xstep; x <= xmax*(1+1e-9)+1e-9; x += xstep {
		fmt.Fprintf(&b, `<text class="xtick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(x), bottomY+16, template.HTMLEscapeString(xTick(x)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (W+left)/2, H+legendH-6, template.HTMLEscapeString(xLabel))
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#8a90a0"/>`, left, W-right, bottomY, bottomY)
	// Lines and legend.
	for i, s := range ss {
		var pts []string
		for j, y := range s.ys {
			if j < len(xs) && !math.IsNaN(y) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[j]), py(y)))
			}
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>`, s.color, dash, strings.Join(pts, " "))
		l := legend[i]
		fmt.Fprintf(&b, `<rect class="legend" x="%.1f" y="%.1f" width="12" height="3" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`, l.x, l.y-4, s.color, l.x+16, l.y, template.HTMLEscapeString(s.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

func elapsedTicks(s *Summary) ([]float64, func(float64) string) {
	var xs []float64
	if len(s.Intervals) == 0 {
		return nil, nil
	}
	t0 := s.Intervals[0].T
	for _, iv := range s.Intervals {
		xs = append(xs, float64(iv.T-t0))
	}
	return xs, elapsedTick
}

// elapsedTick labels a tick of an elapsed-seconds axis.
func elapsedTick(x float64) string { return trimFloat(math.Round(x*10)/10) + "s" }

// stepOffset is where the run's start lies on an elapsed axis that starts
// at Unix second t0 (the first interval's).
func stepOffset(s *Summary, t0 int64) float64 {
	return float64(s.Started.UnixNano())/1e9 - float64(t0)
}

// stepBands are the steps of --stages as bands of an elapsed axis that
// starts at Unix second t0.
func stepBands(s *Summary, t0 int64) []band {
	off := stepOffset(s, t0)
	bands := make([]band, 0, len(s.Steps))
	for _, st := range s.Steps {
		bands = append(bands, band{off + st.StartS, off + st.StartS + st.DurationS, fmt.Sprintf("step %d: %s", st.Step, st.Target)})
	}
	return bands
}

// targetSeries is the target rate of an open-model run at each x (elapsed
// seconds from Unix second t0), dashed: a constant --rate, or the steps'
// targets, a ramp moving linearly; nil for a closed model.
func targetSeries(s *Summary, xs []float64, t0 int64) []series {
	var at func(x float64) float64
	switch {
	case len(s.Steps) > 0 && s.Steps[0].Unit == "rate":
		off := stepOffset(s, t0)
		at = func(x float64) float64 {
			for _, st := range s.Steps {
				from := off + st.StartS
				if x >= from && x < from+st.DurationS {
					return st.From + (st.To-st.From)*(x-from)/st.DurationS
				}
			}
			return math.NaN()
		}
	case len(s.Steps) == 0 && s.TargetRate != nil:
		rate := *s.TargetRate
		at = func(float64) float64 { return rate }
	default:
		return nil
	}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = at(x + 0.5) // a point stands for its whole second
	}
	return []series{{"target (iterations / s)", "#495057", ys, true}}
}

// chartT0 is the Unix second the time charts start at.
func chartT0(s *Summary) int64 {
	if len(s.Intervals) == 0 {
		return s.Started.Unix()
	}
	return s.Intervals[0].T
}

func throughputChart(s *Summary) template.HTML {
	if s.E2E != nil && len(s.E2E.Stages) > 0 {
		return sentReceivedChart(s)
	}
	xs, tick := elapsedTicks(s)
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
	ss := []series{{"requests", palette[0], req, false}, {label, palette[5], fail, false}}
	ss = append(append(ss, failedSeries(s)...), targetSeries(s, xs, t0)...)
	return lineChart("Throughput and failures over time", "elapsed", "requests / s",
		xs, ss, tick, stepBands(s, t0)...)
}

// failedSeries are the requests that failed without an answer, per second,
// one series per error kind (timeout, connect, ...), in kind order.
func failedSeries(s *Summary) []series {
	return keyedSeries(s, "no answer: ", 2, func(iv *Interval) map[string]int64 { return iv.Failed })
}

// keyedSeries are one series per key of the intervals' counts by key
// (of), in key order, named prefix+key, colored from palette[first] on.
func keyedSeries(s *Summary, prefix string, first int, of func(*Interval) map[string]int64) []series {
	var keys []string
	for i := range s.Intervals {
		for k := range of(&s.Intervals[i]) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	ss := make([]series, 0, len(keys))
	for i, k := range keys {
		ys := make([]float64, len(s.Intervals))
		for j := range s.Intervals {
			ys[j] = float64(of(&s.Intervals[j])[k])
		}
		ss = append(ss, series{prefix + k, palette[(first+i)%len(palette)], ys, false})
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
	xs := make([]float64, len(ts))
	for i, t := range ts {
		at[t], xs[i] = i, float64(t-ts[0])
	}
	sent := make([]float64, len(ts))
	for _, iv := range s.Intervals {
		sent[at[iv.T]] = float64(iv.Requests)
	}
	ss := []series{{"requests sent", palette[0], sent, false}}
	for k, st := range s.E2E.Stages {
		recv := make([]float64, len(ts))
		for _, iv := range st.Intervals {
			recv[at[iv.T]] = float64(iv.Received)
		}
		ss = append(ss, series{"events at " + st.Name, palette[(k+1)%len(palette)], recv, false})
	}
	ss = append(ss, targetSeries(s, xs, ts[0])...)
	return lineChart("Sent and received over time", "elapsed", "per second", xs, ss, elapsedTick, stepBands(s, ts[0])...)
}

func latencyChart(s *Summary) template.HTML {
	xs, tick := elapsedTicks(s)
	p50, p90, p99, mx := make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs))
	for i, iv := range s.Intervals {
		p50[i], p90[i], p99[i], mx[i] = iv.Latency.P50, iv.Latency.P90, iv.Latency.P99, iv.Latency.Max
	}
	return lineChart("Latency from due time, per second", "elapsed", "ms",
		xs, []series{{"p50", palette[0], p50, false}, {"p90", palette[2], p90, false}, {"p99", palette[1], p99, false}, {"max", palette[3], mx, false}},
		tick, stepBands(s, chartT0(s))...)
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
		return strings.TrimSuffix(trimFloat(p), ".") + "%"
	}
	return lineChart("Latency by percentile (HdrHistogram's 1/(1−p) axis)", "percentile", "ms",
		xs, []series{{"latency (from due)", palette[1], lat, false}, {"service time", palette[0], svc, false}}, tick)
}

func statusChart(s *Summary) template.HTML {
	xs, tick := elapsedTicks(s)
	var ss []series
	for c, class := range []string{"2xx", "3xx", "4xx", "5xx"} {
		ys := make([]float64, len(xs))
		any := false
		for i, iv := range s.Intervals {
			ys[i] = float64(iv.Status[class])
			any = any || ys[i] > 0
		}
		if any {
			ss = append(ss, series{class, palette[[]int{2, 0, 4, 5}[c]], ys, false})
		}
	}
	return lineChart("Answers by status class over time (by code: the table below)", "elapsed", "answers / s",
		xs, append(ss, grpcSeries(s, len(ss))...), tick, stepBands(s, chartT0(s))...)
}

// vusChart is the VUs busy each second (those that finished a request in
// it), against the VUs' target of a closed model's steps.
func vusChart(s *Summary) template.HTML {
	xs, tick := elapsedTicks(s)
	ys := make([]float64, len(xs))
	for i, iv := range s.Intervals {
		ys[i] = float64(iv.VUs)
	}
	ss := []series{{"VUs (finished a request in the second)", palette[0], ys, false}}
	t0 := chartT0(s)
	if len(s.Steps) > 0 && s.Steps[0].Unit == "vus" {
		off := stepOffset(s, t0)
		target := make([]float64, len(xs))
		for i, x := range xs {
			target[i] = math.NaN()
			for _, st := range s.Steps {
				if from := off + st.StartS; x >= from && x < from+st.DurationS {
					target[i] = st.From + (st.To-st.From)*(x-from)/st.DurationS
				}
			}
		}
		ss = append(ss, series{"target VUs", "#495057", target, true})
	}
	return lineChart("VUs over time", "elapsed", "VUs", xs, ss, tick, stepBands(s, t0)...)
}

// e2eLatencyChart is the end-to-end latency per second of each e2e stage
// (p50, p90, p99 of the events first seen at it in the second); "" for a
// run not followed to sinks.
func e2eLatencyChart(s *Summary) template.HTML {
	if s.E2E == nil || len(s.E2E.Stages) == 0 {
		return ""
	}
	t0 := chartT0(s)
	seconds := map[int64]bool{}
	for _, st := range s.E2E.Stages {
		for _, iv := range st.Intervals {
			if iv.Latency != nil {
				seconds[iv.T] = true
				t0 = min(t0, iv.T)
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
	xs := make([]float64, len(ts))
	for i, t := range ts {
		at[t], xs[i] = i, float64(t-t0)
	}
	var ss []series
	for k, st := range s.E2E.Stages {
		p50, p90, p99 := nanSeries(len(ts)), nanSeries(len(ts)), nanSeries(len(ts))
		for _, iv := range st.Intervals {
			if iv.Latency != nil {
				i := at[iv.T]
				p50[i], p90[i], p99[i] = iv.Latency.P50, iv.Latency.P90, iv.Latency.P99
			}
		}
		c := palette[(3*k)%len(palette)]
		ss = append(ss, series{st.Name + " p50", c, p50, false}, series{st.Name + " p90", palette[(3*k+1)%len(palette)], p90, false},
			series{st.Name + " p99", palette[(3*k+2)%len(palette)], p99, false})
	}
	return lineChart("End-to-end latency per second (send → seen, by the second first seen)", "elapsed", "ms", xs, ss, elapsedTick, stepBands(s, t0)...)
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
func grpcSeries(s *Summary, n int) []series {
	return keyedSeries(s, "gRPC ", n+1, func(iv *Interval) map[string]int64 { return iv.GRPCStatus })
}
