package capacity

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// sample is a search that found its knee.
func sample() *Result {
	steps := []Step{
		{N: 1, Phase: Ramp, Target: 100, Achieved: 99.8, Verdict: Pass, Latency: Latency{P50: 11, P99: 12}},
		{N: 2, Phase: Ramp, Target: 200, Achieved: 180, Verdict: Fail, Reason: "p99<50ms (measured 214 ms)", Latency: Latency{P50: 112, P99: 214}},
		{N: 3, Phase: Narrow, Target: 150, Achieved: 149, Verdict: Pass, Latency: Latency{P50: 30, P99: 47}},
		{N: 4, Phase: Confirm, Target: 150, Achieved: 149.5, Verdict: Pass, Latency: Latency{P50: 29, P99: 46}},
	}
	b := steps[1]
	return &Result{Outcome: Found, Sustainable: 150, Confirmed: true, FailedAt: 200, Broke: &b, Precision: 0.05, Steps: steps, TookS: 9.5, PerVCPU: 75, SUTCPUs: 2,
		Params: &Params{Thresholds: []string{"p99<50ms", "errors<1%"}, StartRate: 100, StepFactor: 2, HoldS: 1, WarmupS: 0.5, Tolerance: 0.1, BudgetS: 50}}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    2  ramp            200         180    112.00    214.00      0.00    0.00%        0      0  fail: p99<50ms (measured 214 ms)",
		"Result       sustainable rate 150/s (confirmed; it failed at 200/s, precision 5%)",
		"Broke at     step 2 (200/s): p99<50ms (measured 214 ms)",
		"Per vCPU     75/s (--sut-cpus 2)",
		"Took         9.5s, 4 steps",
		"thresholds p99<50ms, errors<1% · start 100/s ×2 · hold 1s after 0.5s warm-up · tolerance 10% · budget 50s",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestWriteJSONAndHTML(t *testing.T) {
	var js, page bytes.Buffer
	if err := WriteJSON(&js, sample()); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Sustainable != 150 || len(back.Steps) != 4 || back.Broke.N != 2 {
		t.Errorf("JSON round trip: %+v, %v", back, err)
	}
	if err := WriteHTML(&page, sample()); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	i, j := strings.Index(html, "<svg"), strings.Index(html, "</svg>")
	if i < 0 || j < i {
		t.Fatalf("no chart in:\n%s", html)
	}
	// The chart is well-formed XML: two curves, two points a step, the
	// confirmation's (a rate held again) two diamonds.
	var svg struct {
		Polylines []struct{} `xml:"polyline"`
		Circles   []struct{} `xml:"circle"`
		Diamonds  []struct{} `xml:"rect"`
	}
	if err := xml.Unmarshal([]byte(html[i:j+len("</svg>")]), &svg); err != nil {
		t.Fatalf("the chart is not well-formed: %v", err)
	}
	if len(svg.Polylines) != 2 || len(svg.Circles) != 6 || len(svg.Diamonds) != 2 {
		t.Errorf("%d curves, %d points and %d diamonds, want 2, 6 and 2", len(svg.Polylines), len(svg.Circles), len(svg.Diamonds))
	}
	for _, want := range []string{"sustainable 150/s", "fail: p99&lt;50ms", "<script"} {
		if got := strings.Contains(html, want); got != (want != "<script") {
			t.Errorf("HTML contains %q: %v", want, got)
		}
	}
}

// TestCurveInOrderOfRate: the curve joins the steps in order of the rate
// they achieved (the x axis), not of their target, even where a higher
// target achieved less; every step's p99 point carries its number; the
// x axis ends within a tick of the data; and the HTML's step table leaves
// out the dropped and late columns when every step had none.
func TestCurveInOrderOfRate(t *testing.T) {
	r := sample()
	r.Steps = append(r.Steps, Step{N: 5, Phase: Ramp, Target: 400, Achieved: 120, Verdict: Fail, Reason: "achieved 30% of the target", Latency: Latency{P50: 300, P99: 900}})
	c := curveOf(r)
	for _, l := range c.Lines {
		if !slices.IsSorted(l.X) {
			t.Errorf("a curve goes back along the x axis: %v", l.X)
		}
	}
	labels := 0
	for _, p := range c.Points {
		if p.Label != "" {
			labels++
		}
	}
	if labels != len(r.Steps) {
		t.Errorf("%d points labelled, want one a step (%d)", labels, len(r.Steps))
	}
	svg := c.SVG()
	var ticks []float64
	for _, m := range regexp.MustCompile(`class="xtick"[^>]*>([0-9.]+)</text>`).FindAllStringSubmatch(svg, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		ticks = append(ticks, v)
	}
	// Achieved rates reach 180 (step 5's target of 400 was not): ticks
	// every 50, the axis ends at 200, not at 500 (the round-up of the
	// target).
	if len(ticks) < 2 || ticks[len(ticks)-1] != 200 {
		t.Errorf("x ticks %v, want them to end at 200", ticks)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "<th>dropped</th>") || strings.Contains(page.String(), "<th>late</th>") {
		t.Error("the step table has dropped and late columns that are all zero")
	}
}

// TestHeldAgainShown: a hold held again after a pause, the hold that
// repeated it and the confirmation say so in the text, the HTML and the
// chart (diamonds for the rates held again, with their legend and
// titles), with each hold's generator CPU and the note of a hold judged
// on the SUT though behind its schedule.
func TestHeldAgainShown(t *testing.T) {
	r := sample()
	cpu := GeneratorCPU{CPUS: 0.3, WallS: 1, Cores: 2, UsedPct: 15}
	r.Steps = []Step{r.Steps[0],
		{N: 2, Phase: Ramp, Target: 200, Achieved: 150, Verdict: Fail, Reason: "p99<50ms (measured 214 ms)", Behind: true, Retried: true, Note: "behind, not short of CPU", CPU: cpu, Latency: Latency{P50: 112, P99: 214}},
		{N: 3, Phase: Ramp, Target: 200, Achieved: 180, Verdict: Fail, Reason: "p99<50ms (measured 90 ms)", RepeatOf: 2, CPU: cpu, Latency: Latency{P50: 60, P99: 90}},
		{N: 4, Phase: Narrow, Target: 150, Achieved: 149, Verdict: Pass, CPU: cpu, Latency: Latency{P50: 30, P99: 47}},
		{N: 5, Phase: Confirm, Target: 150, Achieved: 149.5, Verdict: Pass, CPU: cpu, Latency: Latency{P50: 29, P99: 46}},
	}
	var text, page bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gen CPU", "15%/2", "fail: p99<50ms (measured 214 ms) (held again after a pause)", "again (step 2): fail: p99<50ms (measured 90 ms)", "step 2: behind, not short of CPU"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"gen CPU", "15%/2", "(held again after a pause)", "again (step 2): fail", "Step 2: behind, not short of CPU", "◆ ◇ confirmed: a rate held again"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	diamonds := map[string]bool{}
	for _, p := range curveOf(r).Points {
		if p.Label != "" {
			diamonds[p.Label] = p.Diamond
		}
		if p.Diamond && !strings.Contains(p.Title, "held again") {
			t.Errorf("diamond titled %q: want it to say the rate was held again", p.Title)
		}
	}
	if want := map[string]bool{"1": false, "2": false, "3": true, "4": false, "5": true}; !maps.Equal(diamonds, want) {
		t.Errorf("diamonds by step %v, want %v (the repeat of step 2 and the confirmation)", diamonds, want)
	}
	// Without a rate held twice, no diamond and no word of them; without
	// a measured CPU (an earlier version's search), no CPU column.
	r = sample()
	r.Steps = r.Steps[:3]
	page.Reset()
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "◆") || strings.Contains(page.String(), "<rect") || strings.Contains(page.String(), "gen CPU") {
		t.Error("a search without a rate held again, or without CPU figures, shows them")
	}
}

// TestStepLog: the log line of a step held carries its figures, the
// generator's CPU and whether it was held again.
func TestStepLog(t *testing.T) {
	var buf bytes.Buffer
	st := Step{N: 4, Phase: Narrow, Target: 175, Verdict: Fail, Reason: "p99<50ms", LatePct: 8, Retried: true,
		CPU: GeneratorCPU{CPUS: 0.3, WallS: 1, Cores: 2, UsedPct: 15}}
	log := zerolog.New(&buf)
	st.Log(log.Info()).Msg("step held")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"step": 4.0, "target_rate": 175.0, "late_pct": 8.0, "generator_cpu": "15% of 2 cores", "verdict": "fail", "held_again": true}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s: got %v, want %v", k, m[k], v)
		}
	}
}
