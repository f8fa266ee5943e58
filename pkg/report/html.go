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
	data.Charts = append(data.Charts,
		throughputChart(s), latencyChart(s), distributionChart(s), statusChart(s))
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
<div>started {{.Started}} · model {{.S.Model}}{{if .S.TargetRate}} · target {{f2 (deref .S.TargetRate)}}/s{{end}}</div>
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
<h2>Endpoints</h2>
<table><tr><th>endpoint</th><th>requests</th><th>answered</th><th>ok</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>
{{range .S.Endpoints}}<tr><td>{{.Name}}</td><td>{{.Requests}}</td><td>{{.Answered}}</td><td>{{pct .Succeeded .Requests}}</td>{{if .Answered}}<td>{{ms .Latency.P50}}</td><td>{{ms .Latency.P90}}</td><td>{{ms .Latency.P99}}</td><td>{{ms .Latency.Max}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td>{{end}}</tr>
{{end}}</table>
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

// series is one line of a chart.
type series struct {
	name  string
	color string
	ys    []float64
}

var palette = []string{"#2f6fdf", "#d9480f", "#2b8a3e", "#ae3ec9", "#e67700", "#c92a2a"}

// lineChart draws series over xs as an SVG with axes, ticks, units and a
// legend. logX puts x on HdrHistogram's log scale.
func lineChart(title, xLabel, yUnit string, xs []float64, ss []series, xTick func(float64) string) template.HTML {
	const W, H, left, right, top, bottom = 1040.0, 260.0, 64.0, 16.0, 28.0, 40.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, W, H, W, H, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="%.0f" y="16" style="font-weight:600;font-size:13px">%s</text>`, left, template.HTMLEscapeString(title))
	if len(xs) == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">no data</text></svg>`, W/2, H/2)
		return template.HTML(b.String())
	}
	xmin, xmax := xs[0], xs[len(xs)-1]
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
	ymax = niceCeil(ymax)
	px := func(x float64) float64 { return left + (x-xmin)/(xmax-xmin)*(W-left-right) }
	py := func(y float64) float64 { return H - bottom - y/ymax*(H-top-bottom) }
	// Grid and y ticks.
	for i := 0; i <= 4; i++ {
		y := ymax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e6e8ef"/>`, left, W-right, py(y), py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left-6, py(y)+4, trimFloat(y))
	}
	fmt.Fprintf(&b, `<text x="12" y="%.1f" transform="rotate(-90 12 %.1f)" text-anchor="middle">%s</text>`, (H-bottom+top)/2, (H-bottom+top)/2, template.HTMLEscapeString(yUnit))
	// X ticks.
	for i := 0; i <= 5; i++ {
		x := xmin + (xmax-xmin)*float64(i)/5
		anchor := map[int]string{0: "start", 5: "end"}[i]
		if anchor == "" {
			anchor = "middle"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, px(x), H-bottom+16, anchor, template.HTMLEscapeString(xTick(x)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (W+left)/2, H-6, template.HTMLEscapeString(xLabel))
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#8a90a0"/>`, left, W-right, H-bottom, H-bottom)
	// Lines and legend.
	for i, s := range ss {
		var pts []string
		for j, y := range s.ys {
			if j < len(xs) && !math.IsNaN(y) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[j]), py(y)))
			}
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`, s.color, strings.Join(pts, " "))
		lx := W - right - float64(len(ss)-i)*150
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="3" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`, lx, 10.0, s.color, lx+16, 14.0, template.HTMLEscapeString(s.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
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
	ss := []series{{"requests", palette[0], req}, {label, palette[5], fail}}
	return lineChart("Throughput and failures over time", "elapsed", "requests / s",
		xs, append(ss, failedSeries(s)...), tick)
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
		ss = append(ss, series{prefix + k, palette[(first+i)%len(palette)], ys})
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
	ss := []series{{"requests sent", palette[0], sent}}
	for k, st := range s.E2E.Stages {
		recv := make([]float64, len(ts))
		for _, iv := range st.Intervals {
			recv[at[iv.T]] = float64(iv.Received)
		}
		ss = append(ss, series{"events at " + st.Name, palette[(k+1)%len(palette)], recv})
	}
	return lineChart("Sent and received over time", "elapsed", "per second", xs, ss, elapsedTick)
}

func latencyChart(s *Summary) template.HTML {
	xs, tick := elapsedTicks(s)
	p50, p90, p99, mx := make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs))
	for i, iv := range s.Intervals {
		p50[i], p90[i], p99[i], mx[i] = iv.Latency.P50, iv.Latency.P90, iv.Latency.P99, iv.Latency.Max
	}
	return lineChart("Latency from due time, per second", "elapsed", "ms",
		xs, []series{{"p50", palette[0], p50}, {"p90", palette[2], p90}, {"p99", palette[1], p99}, {"max", palette[3], mx}}, tick)
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
		xs, []series{{"latency (from due)", palette[1], lat}, {"service time", palette[0], svc}}, tick)
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
			ss = append(ss, series{class, palette[[]int{2, 0, 4, 5}[c]], ys})
		}
	}
	return lineChart("Answers by status class over time", "elapsed", "answers / s", xs, append(ss, grpcSeries(s, len(ss))...), tick)
}

// grpcSeries are the answers to gRPC calls per second, one series per
// grpc-status name (OK, NOT_FOUND, ...), in name order; colors follow the
// first n series'.
func grpcSeries(s *Summary, n int) []series {
	return keyedSeries(s, "gRPC ", n+1, func(iv *Interval) map[string]int64 { return iv.GRPCStatus })
}
