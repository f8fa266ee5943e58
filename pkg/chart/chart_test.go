package chart

import (
	"encoding/xml"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLegendRowsDoNotOverlap: twelve series with long names wrap into
// rows within the chart, no entry on top of another.
func TestLegendRowsDoNotOverlap(t *testing.T) {
	var names []string
	for i := range 12 {
		names = append(names, strings.Repeat("x", 10+3*i))
	}
	items, height := legendLayout(names)
	if height < 30 {
		t.Errorf("legend height %v: twelve long names should take more than one row", height)
	}
	for i, a := range items {
		aw := 16 + 6.6*float64(len(names[i]))
		if a.x+aw > width-marginRight+1 && a.x > marginLeft {
			t.Errorf("entry %d runs past the chart: x %v, width %v", i, a.x, aw)
		}
		for j := i + 1; j < len(items); j++ {
			b := items[j]
			bw := 16 + 6.6*float64(len(names[j]))
			if a.y == b.y && a.x < b.x+bw && b.x < a.x+aw {
				t.Errorf("entries %d and %d overlap: %+v %+v", i, j, a, b)
			}
		}
	}
}

// TestNiceSteps: axis ticks fall on 1, 2 or 5 times a power of ten.
func TestNiceSteps(t *testing.T) {
	for _, tc := range []struct {
		span float64
		n    int
		want float64
	}{{100, 4, 25 * 2}, {7, 6, 2}, {0.9, 4, 0.5}, {1234, 4, 500}, {5, 6, 1}, {60, 6, 10}} {
		if got := niceStep(tc.span, tc.n); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("niceStep(%v, %d) = %v, want %v", tc.span, tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct{ v, want float64 }{{0, 1}, {-3, 1}, {1, 1}, {1.2, 2}, {180, 200}, {201, 500}, {501, 1000}, {0.03, 0.05}} {
		if got := niceCeil(tc.v); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestLabel(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0"}, {-0.0001, "0"}, {2.5, "2.5"}, {10, "10"}, {0.125, "0.125"}, {1e-4, "0"}, {1234.5678, "1234.568"}} {
		if got := Label(tc.v); got != tc.want {
			t.Errorf("Label(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// svgOf parses an SVG drawn by a chart: it must be well-formed XML.
type svgOf struct {
	Polylines []struct {
		Class  string `xml:"class,attr"`
		Points string `xml:"points,attr"`
		Dash   string `xml:"stroke-dasharray,attr"`
	} `xml:"polyline"`
	Rects []struct {
		Class string `xml:"class,attr"`
	} `xml:"rect"`
	Circles []struct {
		R     string `xml:"r,attr"`
		Fill  string `xml:"fill,attr"`
		Title string `xml:"title"`
	} `xml:"circle"`
	Texts []struct {
		Class string `xml:"class,attr"`
		Text  string `xml:",chardata"`
	} `xml:"text"`
}

func parse(t *testing.T, svg string) svgOf {
	t.Helper()
	var s svgOf
	if err := xml.Unmarshal([]byte(svg), &s); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, svg)
	}
	return s
}

// TestLines: a line a series, NaN points left out, a dashed reference,
// bands with their labels, names escaped, and "no data" without points.
func TestLines(t *testing.T) {
	c := Lines{Title: "a <b> & c", XLabel: "elapsed", YUnit: "ms", X: []float64{0, 1, 2, 3},
		Series: []Series{{Name: "p50", Color: Palette[0], Y: []float64{1, math.NaN(), 3, 4}}, {Name: "target", Color: "#495057", Y: []float64{2, 2, 2, 2}, Dashed: true}},
		XTick:  func(x float64) string { return Label(x) + "s" },
		Bands:  []Band{{From: 0, To: 2, Label: "step 1: 10/s"}, {From: 2, To: 5, Label: "step 2: 10/s→20/s"}}}
	s := parse(t, c.SVG())
	if len(s.Polylines) != 2 || strings.Count(s.Polylines[0].Points, ",") != 3 || s.Polylines[1].Dash != "6 4" || s.Polylines[0].Dash != "" {
		t.Errorf("lines: %+v; want 2, the first with its 3 points that are numbers, the second dashed", s.Polylines)
	}
	var bands, labels, xticks int
	for _, r := range s.Rects {
		if r.Class == "step-band" {
			bands++
		}
	}
	for _, tx := range s.Texts {
		switch tx.Class {
		case "step-label":
			labels++
		case "xtick":
			xticks++
			if !strings.HasSuffix(tx.Text, "s") {
				t.Errorf("x tick %q, want XTick's label", tx.Text)
			}
		}
	}
	if bands != 2 || labels != 2 || xticks < 5 { // the axis reaches the last band's end
		t.Errorf("%d bands, %d band labels, %d x ticks; want 2, 2, at least 5", bands, labels, xticks)
	}
	if !strings.Contains(c.SVG(), `aria-label="a &lt;b&gt; &amp; c"`) {
		t.Error("the title is not escaped")
	}
	empty := Lines{Title: "none"}
	if got := empty.SVG(); !strings.Contains(got, ">no data<") || strings.Contains(got, "polyline") {
		t.Errorf("a chart without points: %s", got)
	}
}

// TestCurve: x linear from 0 to a round value, y by decades, a polyline a
// path, a circle a point, filled or hollow, the marks and the legend.
func TestCurve(t *testing.T) {
	c := Curve{Label: "rate against latency", XLabel: "rate", YUnit: "ms",
		Lines:  []Path{{X: []float64{99, 149}, Y: []float64{12, 47}, Color: "#888"}, {X: []float64{99, 149}, Y: []float64{11, 30}, Color: "#888", Dash: "3 3"}},
		Points: []Point{{X: 99, Y: 12, Color: "#1a7f37", Title: "step 1"}, {X: 99, Y: 11, Color: "#1a7f37", Hollow: true, Title: "step 1 p50"}},
		Marks:  []Mark{{X: 150, Color: "#1a7f37", Label: "sustainable 150/s"}},
		Legend: "● p99  ○ p50"}
	svg := c.SVG()
	s := parse(t, svg)
	if len(s.Polylines) != 2 || s.Polylines[1].Dash != "3 3" || len(s.Circles) != 2 || s.Circles[0].R != "5" || s.Circles[1].Fill != "none" || s.Circles[0].Title != "step 1" {
		t.Errorf("got %+v", s)
	}
	for _, want := range []string{">10 ms<", ">100 ms<", ">200<", ">sustainable 150/s<", ">● p99  ○ p50<", `stroke-dasharray="4 3"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the curve lacks %q:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, ">1 ms<") || strings.Contains(svg, ">1000 ms<") {
		t.Errorf("the y axis spans more decades than its points:\n%s", svg)
	}
}

// TestLabelsStayInside: an x tick's label at the axis' ends is moved in
// rather than clipped (the percentile chart's "99.999%" at its right
// edge), and a step band too narrow for its label gets a shorter one or
// none, never one spilling over the next band.
func TestLabelsStayInside(t *testing.T) {
	c := Lines{Title: "percentiles", X: []float64{0, 1, 2, 3, 4, 5}, Series: []Series{{Name: "p", Y: []float64{1, 2, 3, 4, 5, 6}}},
		XTick: func(x float64) string { return Label(100*(1-math.Pow(10, -x))) + "%" },
		Bands: []Band{{From: 0, To: 4.8, Label: "step 1: 10/s"}, {From: 4.8, To: 4.9, Label: "step 2: 10/s→2000/s"}, {From: 4.9, To: 5, Label: "step 3: 2000/s"}}}
	svg := c.SVG()
	s := parse(t, svg)
	for _, m := range regexp.MustCompile(`<text class="xtick" x="([0-9.]+)" y="[0-9.]+" text-anchor="(\w+)">([^<]+)<`).FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		w := textWidth(m[3])
		x0 := map[string]float64{"start": x, "middle": x - w/2, "end": x - w}[m[2]]
		if x0 < 0 || x0+w > width {
			t.Errorf("x tick %q spans %.1f to %.1f, outside the chart's 0 to %v", m[3], x0, x0+w, width)
		}
	}
	var labels []string
	for _, tx := range s.Texts {
		if tx.Class == "step-label" {
			labels = append(labels, tx.Text)
		}
	}
	// Bands 2 and 3 are 19.2 units wide: room for their number alone.
	if !slices.Equal(labels, []string{"step 1: 10/s", "2", "3"}) {
		t.Errorf("band labels %q, want the first band's whole, then the numbers", labels)
	}
	if got := fitLabel("step 2: 10/s→2000/s", 2, 5); got != "" {
		t.Errorf("fitLabel in 5 units: %q, want none", got)
	}
	if got := fitLabel("step 2: 10/s→2000/s", 2, 60); got != "step 2" {
		t.Errorf("fitLabel in 60 units: %q, want step 2", got)
	}
}

// TestTimeAxis: with XFrom and XTo the x axis spans them, so that a point
// at the middle of a second sits half a second from the axis' start and
// a band from 1 to 2 spans the second from 1 to 2.
func TestTimeAxis(t *testing.T) {
	c := Lines{Title: "per second", X: []float64{0.5, 1.5, 2.5}, XFrom: 0, XTo: 3, XTick: Label,
		Series: []Series{{Name: "n", Y: []float64{1, 1, 1}}}, Bands: []Band{{From: 1, To: 2, Label: "s"}}}
	s := parse(t, c.SVG())
	plotW := width - marginLeft - marginRight
	pts := strings.Fields(s.Polylines[0].Points)
	first, _ := strconv.ParseFloat(strings.Split(pts[0], ",")[0], 64)
	if want := marginLeft + plotW/6; math.Abs(first-want) > 0.1 {
		t.Errorf("the first point at x %v, want %v (half a second of 3 into the plot)", first, want)
	}
	if !strings.Contains(c.SVG(), fmt.Sprintf(`<rect class="step-band" x="%.1f"`, marginLeft+plotW/3)) {
		t.Errorf("the band does not start a third into the plot:\n%s", c.SVG())
	}
}

// TestCurveLegendAbovePlot: the Curve's legend sits above the plot, where
// no point or line is drawn, and point labels overlap neither each other
// nor the marks' labels.
func TestCurveLegendAbovePlot(t *testing.T) {
	c := Curve{Legend: "● p99  ○ p50", Marks: []Mark{{X: 98, Label: "sustainable 98/s"}}}
	for i := range 6 { // close together: the labels must make room
		c.Points = append(c.Points, Point{X: 90 + float64(i), Y: 10 + float64(i), Label: strconv.Itoa(i + 1)})
	}
	svg := c.SVG()
	m := regexp.MustCompile(`<text class="legend" x="[0-9.]+" y="([0-9.]+)"`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no legend:\n%s", svg)
	}
	if y, _ := strconv.ParseFloat(m[1], 64); y > padT {
		t.Errorf("the legend's baseline at y %v, inside the plot (which starts at %d)", y, padT)
	}
	var boxes []box
	for _, m := range regexp.MustCompile(`<text class="point-label" x="([0-9.]+)" y="([0-9.]+)" text-anchor="middle">([^<]+)<`).FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		w := textWidth(m[3])
		b := box{x - w/2, y - 10, x + w/2, y}
		for _, o := range boxes {
			if b.overlaps(o) {
				t.Errorf("point labels overlap: %+v %+v", b, o)
			}
		}
		boxes = append(boxes, b)
	}
	if len(boxes) < 4 {
		t.Errorf("%d of 6 close points labelled, want at least 4", len(boxes))
	}
}

// TestYAxisRoom: the y axis ends a little above the data, so that no line
// runs along the top under the band labels, and a chart of whole things
// (VUs) has whole ticks: a flat line at 1 VU gets ticks 0, 1, 2.
func TestYAxisRoom(t *testing.T) {
	c := Lines{Title: "VUs", X: []float64{0.5, 1.5}, XTick: Label, YWhole: true, Series: []Series{{Name: "VUs", Y: []float64{1, 1}}}}
	var ticks []string
	for _, tx := range parse(t, c.SVG()).Texts {
		if tx.Class == "ytick" {
			ticks = append(ticks, tx.Text)
		}
	}
	if !slices.Equal(ticks, []string{"0", "1", "2"}) {
		t.Errorf("y ticks %q, want 0 1 2", ticks)
	}
}
