package report

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
)

// chartOf is the SVG of the report's chart titled title.
func chartOf(t *testing.T, page, title string) string {
	t.Helper()
	i := strings.Index(page, `aria-label="`+title)
	if i < 0 {
		t.Fatalf("no chart %q", title)
	}
	return page[i : i+strings.Index(page[i:], "</svg>")]
}

// TestHTMLPointsAtMidSecond: a per-second point is drawn at the middle of
// its second, so that it lines up with the step bands: in the stepped
// run (which starts on a whole second), the first point lies a quarter
// into the first band, two seconds long.
func TestHTMLPointsAtMidSecond(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, steppedFixture(t)); err != nil {
		t.Fatal(err)
	}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	for _, title := range []string{"Sent and received over time", "Latency from due time", "Answers by status class", "VUs over time"} {
		svg := chartOf(t, buf.String(), title)
		bands := regexp.MustCompile(`class="step-band" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`).FindAllStringSubmatch(svg, -1)
		line := regexp.MustCompile(`class="series"[^>]* points="([0-9.]+),`).FindStringSubmatch(svg)
		if len(bands) != 3 || line == nil {
			t.Fatalf("%s: %d bands, line %v", title, len(bands), line)
		}
		x0, w := num(bands[0][1]), num(bands[0][2])
		if got, want := num(line[1]), x0+w/4; math.Abs(got-want) > 0.2 {
			t.Errorf("%s: the first point at x %.1f, want %.1f (the middle of the first second of a two-second band at %.1f)", title, got, want, x0)
		}
	}
}

// TestHTMLTargetPerSecond: the target rate of a second is what was due in
// it: the steps' targets through the second, and only the part of a
// second that the run covers (it started a quarter into its first).
func TestHTMLTargetPerSecond(t *testing.T) {
	s := steppedFixture(t)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if got := targetSeries(s, intervalSeconds(s), chartT0(s))[0].Y; !slices.EqualFunc(got, []float64{40, 40, 55, 85, 100, 100}, near) {
		t.Errorf("target %v, want 40 40 55 85 100 100", got)
	}
	s.Started = s.Started.Add(250 * time.Millisecond)
	got := targetSeries(s, intervalSeconds(s), chartT0(s))[0].Y
	if math.Abs(got[0]-30) > 0.01 || math.Abs(got[1]-40) > 0.01 {
		t.Errorf("target %v: want 30 in the first second (three quarters of 40), then 40", got)
	}
}

// TestHTMLTargetVUs: during a ramp of the VUs, the target of a second is
// the most VUs the second had, as the VUs that finished a request in it
// are counted: 5→15 over seconds 2 to 4 has 10 in the third second and
// 15 in the fourth, not the 5 and 10 of each second's start.
func TestHTMLTargetVUs(t *testing.T) {
	s := &Summary{Version: SummaryVersion, Started: t0, Model: "closed", Steps: []Step{
		{Step: 1, StartS: 0, DurationS: 2, Unit: "vus", From: 5, To: 5, Target: "5 VUs"},
		{Step: 2, StartS: 2, DurationS: 2, Unit: "vus", From: 5, To: 15, Ramp: true, Target: "5→15 VUs"},
		{Step: 3, StartS: 4, DurationS: 2, Unit: "vus", From: 15, To: 15, Target: "15 VUs"}}}
	for i := range 6 {
		s.Intervals = append(s.Intervals, Interval{T: t0.Unix() + int64(i), VUs: []int{5, 5, 10, 15, 15, 15}[i]})
	}
	if got := targetVUs(s, intervalSeconds(s), stepOffset(s, chartT0(s))); !slices.Equal(got, []float64{5, 5, 10, 15, 15, 15}) {
		t.Errorf("target VUs %v, want 5 5 10 15 15 15, the VUs measured", got)
	}
}

// TestHTMLDeltasAndEmptyColumns: the e2e time between stages is in the
// HTML as in the text; columns and sections that are all zero or do not
// apply are left out (duplicates, dropped, late, skipped (gRPC), errors,
// thresholds, comparison, a closed run's dropped iterations).
func TestHTMLDeltasAndEmptyColumns(t *testing.T) {
	s := steppedFixture(t)
	for i := range s.Steps {
		s.Steps[i].Dropped, s.Steps[i].Late = 0, 0
	}
	s.Transforms = []Transform{{Name: "timestamps", Changed: 10}}
	tr := e2e.NewTracker(3, 1, t0, nil)
	tr.Deltas(time.Minute)
	for seq := range uint64(10) {
		sent := t0.Add(time.Duration(seq) * 100 * time.Millisecond)
		tr.Stamped(0)
		tr.Accepted(0, seq, sent.UnixMicro())
		id := e2e.AppendID(nil, e2e.ID{Nonce: 3, Seq: seq, Sent: sent.UnixMicro()})
		tr.Seen(id, "queued", sent.Add(5*time.Millisecond))
		tr.Seen(id, "delivered", sent.Add(25*time.Millisecond))
	}
	s.E2E = tr.Summary(time.Second)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, s); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`<table id="e2e-deltas">`, "<td>queued → delivered</td><td>10</td><td>20ms</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	for _, unwanted := range []string{"<th>duplicates</th>", "<th>dropped</th>", "<th>late</th>", "skipped (gRPC)", "<h2>Errors</h2>", "<h2>Thresholds</h2>", "No --threshold", "Not compared", "<h2>Comparison"} {
		if strings.Contains(page, unwanted) {
			t.Errorf("the report has %q, all zero or not applicable", unwanted)
		}
	}
	buf.Reset()
	closed := recorded(t, "closed")
	if err := WriteHTML(&buf, closed); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "dropped iterations") {
		t.Error("a closed run's report has dropped iterations, which only an open model has")
	}
	closed.Transforms = []Transform{{Name: "jwt", Changed: 3, SkippedGRPC: 2}}
	buf.Reset()
	if err := WriteHTML(&buf, closed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "<th>skipped (gRPC)</th>") {
		t.Error("a transform skipped gRPC bodies, and the column is missing")
	}
}
