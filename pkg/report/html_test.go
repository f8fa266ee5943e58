package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/result"
)

// chromium finds Debian's chromium. Without it the test skips loudly,
// unless REPLAY_CI=1 (CI installs it), where it fails.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("REPLAY_CI") == "1" {
		t.Fatal("chromium is not installed, and REPLAY_CI=1: .ci/run should have installed it (apt-get install chromium)")
	}
	t.Skip("SKIPPED LOUDLY: chromium is not installed; apt-get install chromium to render the HTML report in a real browser")
	return ""
}

func htmlFixture() *Summary {
	base := t0.Unix()
	var rs []result.Result
	for sec := int64(0); sec < 6; sec++ {
		for i := int64(0); i < 50+sec*10; i++ {
			status := uint16(200)
			if i%17 == 0 {
				status = 503
			}
			rs = append(rs, atSecond(base+sec, 1+i%9+sec, status, result.ErrNone))
		}
		rs = append(rs, atSecond(base+sec, 0, 0, result.ErrTimeout))
	}
	s := record(testEndpoints, rs).Summary(Meta{Run: result.Counters{Started: t0}, Model: "closed"})
	th, _ := ParseThreshold("p99<5ms")
	Evaluate(s, []Threshold{th})
	return s
}

func TestHTMLIsSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, htmlFixture(), []Setting{{"target", "http://127.0.0.1:8080"}}); err != nil {
		t.Fatal(err)
	}
	page := strings.ReplaceAll(buf.String(), `xmlns="http://www.w3.org/2000/svg"`, "")
	page = strings.ReplaceAll(page, "http://127.0.0.1:8080", "")
	for _, banned := range []string{"<script", "http://", "https://", "@import", "<link", "url("} {
		if strings.Contains(page, banned) {
			t.Errorf("the report contains %q: it must open offline", banned)
		}
	}
	if n := strings.Count(page, "<svg"); n != 4 {
		t.Errorf("%d charts, want 4", n)
	}
	for _, want := range []string{"Throughput and failures over time", "Latency from due time", "1/(1−p)", "Answers by status class", "p99&lt;5ms", "FAIL", "POST /events", "timeout"} {
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
	if err := WriteHTML(f, htmlFixture(), nil); err != nil {
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
	if n := strings.Count(string(dom), "<polyline"); n < 8 {
		t.Errorf("the rendered page has %d chart lines, want the series of 4 charts", n)
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
	s := htmlFixture()
	start := s.Started
	tr := e2e.NewTracker(3, 1, start, nil)
	for seq := range uint64(20) {
		tr.Stamped(0)
		tr.Accepted(0, seq)
		tr.Seen(e2e.AppendID(nil, e2e.ID{Nonce: 3, Seq: seq, Sent: start.UnixMicro()}), "processed", start.Add(time.Duration(seq)*100*time.Millisecond))
	}
	s.E2E = tr.Summary(time.Second)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, s, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Sent and received over time", "events at processed", "End-to-end: send → seen by a sink",
		"<th>stage</th><th>unique</th><th>duplicates</th>", "<td>processed</td><td>20</td>"} {
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
	if err := WriteHTML(&buf, htmlFixture(), nil); err != nil {
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

	base := t0.Unix()
	var rs []result.Result
	for i := range 5 {
		rs = append(rs, atSecond(base+int64(i), 0, 0, result.ErrConnect))
	}
	buf.Reset()
	if err := WriteHTML(&buf, record(testEndpoints, rs).Summary(Meta{Run: result.Counters{Started: t0}}), nil); err != nil {
		t.Fatal(err)
	}
	if page := buf.String(); !strings.Contains(page, "latency: no request was answered") || strings.Contains(page, "latency p99") ||
		!strings.Contains(page, "no answer: connect") {
		t.Errorf("nothing answered: the report shows a latency, or no connect series")
	}
}
