package report

import (
	"bytes"
	"context"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/chartcheck"
	"github.com/replay-dev/replay/pkg/e2e"
)

// chromium finds Debian's chromium (package chartcheck: a loud skip
// without it, a failure with REPLAY_CI=1).
func chromium(t *testing.T) string { return chartcheck.Browser(t) }

func htmlFixture(t *testing.T) *Summary {
	s := recorded(t, "html")
	th, _ := ParseThreshold("p99<5ms")
	Evaluate(s, []Threshold{th})
	return s
}

func TestHTMLIsSelfContained(t *testing.T) {
	var buf bytes.Buffer
	s := htmlFixture(t)
	s.Settings = []Setting{{"target", "http://127.0.0.1:8080"}}
	if err := WriteHTML(&buf, s); err != nil {
		t.Fatal(err)
	}
	page := strings.ReplaceAll(buf.String(), `xmlns="http://www.w3.org/2000/svg"`, "")
	page = strings.ReplaceAll(page, "http://127.0.0.1:8080", "")
	for _, banned := range []string{"<script", "http://", "https://", "@import", "<link", "url("} {
		if strings.Contains(page, banned) {
			t.Errorf("the report contains %q: it must open offline", banned)
		}
	}
	if n := strings.Count(page, "<svg"); n != 5 {
		t.Errorf("%d charts, want 5", n)
	}
	for _, want := range []string{"Throughput and failures over time", "Latency from due time", "1/(1−p)", "Answers by status class", "VUs over time",
		"p99&lt;5ms", "FAIL", "POST /events", "timeout", `<table id="status-codes"><tr><th>status</th><th>answers</th></tr><tr><td>200</td>`, `<td class="status">200:`} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// TestHTMLInChromium renders the report in headless Chromium: the page
// loads, the charts are drawn, and a screenshot shows them.
func TestHTMLInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, htmlFixture(t)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + filepath.Join(dir, "profile")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a first start can be slow
	defer cancel()
	dom, err := exec.CommandContext(ctx, browser, append(args, "--dump-dom", "file://"+page)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if n := strings.Count(string(dom), "<polyline"); n < 9 {
		t.Errorf("the rendered page has %d chart lines, want the series of 5 charts", n)
	}
	shot := filepath.Join(os.TempDir(), "replay-report-screenshot.png")
	if out, err := exec.CommandContext(ctx, browser, append(args, "--window-size=1200,1800", "--screenshot="+shot, "file://"+page)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	t.Logf("screenshot of the HTML report: %s", shot)
	img, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	pic, err := png.Decode(img)
	if err != nil {
		t.Fatal(err)
	}
	// The charts' blue (#2f6fdf) must be on screen.
	blue := 0
	b := pic.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := pic.At(x, y).RGBA()
			if r>>8 < 90 && g>>8 > 80 && g>>8 < 140 && bl>>8 > 190 {
				blue++
			}
		}
	}
	if blue < 50 {
		t.Errorf("the screenshot shows %d blue chart pixels: the charts did not render", blue)
	}
}

func TestHTMLEndToEnd(t *testing.T) {
	s := htmlFixture(t)
	start := s.Started
	tr := e2e.NewTracker(3, 1, start, nil)
	for seq := range uint64(20) {
		tr.Stamped(0)
		tr.Accepted(0, seq, 0)
		tr.Seen(e2e.AppendID(nil, e2e.ID{Nonce: 3, Seq: seq, Sent: start.UnixMicro()}), "processed", start.Add(time.Duration(seq)*100*time.Millisecond))
	}
	s.E2E = tr.Summary(time.Second)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Sent and received over time", "events at processed", "End-to-end: send → seen by a sink",
		"<th>stage</th><th>unique</th><th>pending</th>", "<td>processed</td><td>20</td>"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// TestHTMLShowsFailuresWithoutAnswer: the requests that failed without an
// answer have a series per kind on the throughput chart, and a run where
// nothing was answered says so instead of showing a latency.
func TestHTMLShowsFailuresWithoutAnswer(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, htmlFixture(t)); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	throughput := page[strings.Index(page, "Throughput and failures over time"):]
	throughput = throughput[:strings.Index(throughput, "</svg>")]
	if !strings.Contains(throughput, "no answer: timeout") || strings.Count(throughput, `class="series"`) != 3 {
		t.Errorf("throughput chart: want requests, failed and a timeout series:\n%s", throughput)
	}
	if !strings.Contains(page, "answered (6 failed without an answer)") {
		t.Error("the report does not show answered against failed without an answer")
	}

	buf.Reset()
	if err := WriteHTML(&buf, recorded(t, "unanswered")); err != nil {
		t.Fatal(err)
	}
	if page := buf.String(); !strings.Contains(page, "latency: no request was answered") || strings.Contains(page, "latency p99") ||
		!strings.Contains(page, "no answer: connect") {
		t.Errorf("nothing answered: the report shows a latency, or no connect series")
	}
}

// steppedFixture is the recorded run of a three-step arrival rate (a hold,
// a ramp, a hold), followed to a sink.
func steppedFixture(t *testing.T) *Summary { return recorded(t, "stepped") }

// TestHTMLSteps: a stepped run shades its steps on every time chart, draws
// its target rate dashed on the throughput chart in the chart's unit
// (requests a second), lists the steps in a table with the events
// accepted and seen a second and whether each kept up, says where the run
// stopped keeping up, and charts the end-to-end latency per second.
func TestHTMLSteps(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, steppedFixture(t)); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	charts := strings.Count(page, "<svg")
	if n := strings.Count(page, `class="step-band"`); n != 3*(charts-1) { // every chart but the percentile one
		t.Errorf("%d step bands on %d charts, want 3 on each time chart", n, charts)
	}
	for _, want := range []string{"stages 40/s 2s, 40/s→100/s 2s, 100/s 2s", `<table id="steps">`, "step 2: 40/s→100/s",
		"<td>40/s→100/s</td>", `stroke-dasharray="6 4"`, "target (requests / s)", "End-to-end latency per second", "queued p99", "<th>e2e queued p99</th>",
		"<th>accepted / s</th>", "<th>seen / s at queued</th>", `<td><span class="fail">no</span></td></tr>`, `<li>step 3 (100/s) fell behind: backlog at queued grew from 0 to 5 events: seen 2.45/s of 5/s accepted (delay 10ms)</li>`,
		`<p id="steps-verdict"><b>Kept up through step 2 (40/s→100/s); fell behind in step 3 (100/s)`} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if n := strings.Count(page, `<tr class="step">`); n != 3 {
		t.Errorf("%d step rows, want 3", n)
	}
}

// TestHTMLTicksAreNice: the y ticks of every chart fall on 1, 2 or 5
// times a power of ten, multiples of their step (package chart's round
// ticks).
func TestHTMLTicksAreNice(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, htmlFixture(t)); err != nil {
		t.Fatal(err)
	}
	for _, svg := range strings.Split(buf.String(), "<svg")[1:] {
		var ys []float64
		for _, m := range regexp.MustCompile(`class="ytick"[^>]*>([0-9.]+)<`).FindAllStringSubmatch(svg, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			ys = append(ys, v)
		}
		if len(ys) < 2 {
			continue
		}
		step := ys[1] - ys[0]
		mant := step / math.Pow(10, math.Floor(math.Log10(step)))
		if math.Abs(mant-1) > 1e-6 && math.Abs(mant-2) > 1e-6 && math.Abs(mant-5) > 1e-6 {
			t.Errorf("y ticks %v: a step of %v, not 1, 2 or 5 times a power of ten", ys, step)
		}
		for k, y := range ys {
			if math.Abs(y-float64(k)*step) > 1e-6*step {
				t.Errorf("y ticks %v are not multiples of their step", ys)
				break
			}
		}
	}
}

// TestHTMLStepsInChromium renders a stepped run's report in headless
// Chromium and finds the step bands and the step table in the DOM.
func TestHTMLStepsInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "steps.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, steppedFixture(t)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dom, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--dump-dom", "file://"+page).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if n := strings.Count(string(dom), `class="step-band"`); n < 12 {
		t.Errorf("the rendered page has %d step bands, want 3 on each of at least 4 time charts", n)
	}
	if n := strings.Count(string(dom), `<tr class="step">`); n != 3 {
		t.Errorf("the rendered step table has %d rows, want 3", n)
	}
}

// TestSettingsOnlyInHTML: the run's configuration travels in the summary
// to the HTML report, and never into the summary JSON.
func TestSettingsOnlyInHTML(t *testing.T) {
	s := &Summary{Version: SummaryVersion, Started: t0, Settings: []Setting{{"target", "http://127.0.0.1:9"}}}
	var page, js bytes.Buffer
	if err := WriteHTML(&page, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `<tr><td>target</td><td style="text-align:left">http://127.0.0.1:9</td></tr>`) {
		t.Error("the HTML report lacks the setting")
	}
	if strings.Contains(js.String(), "127.0.0.1:9") || strings.Contains(js.String(), "ettings") {
		t.Errorf("the summary JSON has the settings:\n%s", js.String())
	}
}
