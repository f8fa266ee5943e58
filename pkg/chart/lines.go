package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Lines is a line chart: series over a shared x axis, both axes linear,
// the y axis from 0. It has a title, round ticks on both axes (1, 2 or 5
// times a power of ten), the y unit beside the y axis, the x label under
// it, a legend in rows under the title that never overlap, and bands
// shaded behind the lines with their labels.
type Lines struct {
	Title  string
	XLabel string
	YUnit  string
	// X are the points' x values, ascending; a chart without any says
	// "no data".
	X      []float64
	Series []Series
	// XTick labels an x tick (Label, or "12s", "99.9%").
	XTick func(x float64) string
	// Bands are shaded behind everything; the x axis reaches the end of
	// the last.
	Bands []Band
	// XFrom and XTo, when XTo > XFrom, are where the x axis starts and
	// ends (it still reaches the points and the bands): a per-second point
	// drawn at the middle of its second has an axis from the start of the
	// first second to the end of the last.
	XFrom, XTo float64
	// YWhole says that y counts whole things (VUs): y ticks are whole
	// numbers.
	YWhole bool
}

// Series is one line of a Lines chart. Its polyline carries its name
// (data-series) and the values it draws (data-values: "x:y x:y ..."),
// for a reader of the page that wants the numbers, not the pixels.
type Series struct {
	Name  string // in the legend
	Color string
	// Y has a value per X; NaN is no point: the line joins the points on
	// either side.
	Y []float64
	// Dashed draws a reference (a target), not a measurement.
	Dashed bool
}

// Band is a shaded stretch of a Lines chart's x axis with its label: a
// step of --stages. Bands alternate between two shades; each draws as a
// rect of class "step-band" and its label as a text of class "step-label".
type Band struct {
	From, To float64
	Label    string
}

// Geometry of a Lines chart, in SVG units: its width, its height without
// the legend, and the margins left, right and below the plot.
const width, height, marginLeft, marginRight, marginBottom = 1040.0, 260.0, 64.0, 16.0, 40.0

// charW is the width of a character of the charts' 11px labels, in SVG
// units: a little over the average of system-ui's digits and lower case,
// so that an estimate errs on the wide side.
const charW = 6.6

// textWidth estimates how wide a label of the charts' font draws.
func textWidth(s string) float64 { return charW * float64(len([]rune(s))) }

// tickPlace is where an x tick's label of width w goes for a tick at x on
// a chart w wide: centred under the tick, or, where the centred label
// would run past the chart's edge, ending at the edge (starting at it on
// the left), so that no label is clipped.
func tickPlace(x, w, chartW float64) (float64, string) {
	switch {
	case x+w/2 > chartW-2:
		return chartW - 2, "end"
	case x-w/2 < 2:
		return 2, "start"
	}
	return x, "middle"
}

// fitLabel is the label of band n that fits in room: the whole label,
// else "step n", else "n", else "" (a band too narrow for any).
func fitLabel(label string, n int, room float64) string {
	for _, l := range []string{label, fmt.Sprintf("step %d", n), fmt.Sprint(n)} {
		if textWidth(l) <= room {
			return l
		}
	}
	return ""
}

// legendItem is where one legend entry goes.
type legendItem struct{ x, y float64 }

// legendLayout places the legend entries of names in rows under the title,
// wrapping within the chart's width so that no two overlap, and returns
// where each goes and the height the rows take.
func legendLayout(names []string) ([]legendItem, float64) {
	const rowH, gap = 15.0, 18.0
	out := make([]legendItem, len(names))
	x, y := marginLeft, 34.0 // under the title
	for i, n := range names {
		w := 16 + charW*float64(len([]rune(n)))
		if x > marginLeft && x+w > width-marginRight {
			x, y = marginLeft, y+rowH
		}
		out[i] = legendItem{x, y}
		x += w + gap
	}
	if len(names) == 0 {
		return out, 0
	}
	return out, y - 34 + rowH
}

// SVG draws the chart as one svg element (role img, labelled by its
// title). The series draw as polylines of class "series", the y ticks as
// texts of class "ytick", the x ticks of class "xtick", the legend's
// swatches as rects of class "legend".
func (c *Lines) SVG() string {
	const W, H, left, bottom = width, height, marginLeft, marginBottom
	names := make([]string, len(c.Series))
	for i, s := range c.Series {
		names[i] = s.Name
	}
	legend, legendH := legendLayout(names)
	top := 36 + legendH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, W, H+legendH, W, H+legendH, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%.0f" y="14" style="font-weight:600;font-size:13px">%s</text>`, left, esc(c.Title))
	if len(c.X) == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">no data</text></svg>`, W/2, H/2)
		return b.String()
	}
	s := linesScale{top: top, bottomY: H + legendH - bottom}
	s.xmin, s.xmax = c.xRange()
	// The y axis ends on the first round tick a little above the data,
	// so that no line runs along the top, under the band labels.
	ymax := c.yMax()
	ystep := niceStep(ymax*1.08, 4)
	if c.YWhole {
		ystep = math.Max(1, math.Round(ystep))
	}
	s.ymax = math.Max(ystep, math.Ceil(ymax*1.08/ystep-1e-9)*ystep)
	c.writeBands(&b, s)
	c.writeAxes(&b, s, ystep, legendH)
	c.writeSeries(&b, s, legend)
	b.WriteString(`</svg>`)
	return b.String()
}

// xRange is the x axis' span: the data's, widened to [XFrom, XTo] when
// set and to the bands' ends, and never empty.
func (c *Lines) xRange() (xmin, xmax float64) {
	xmin, xmax = c.X[0], c.X[len(c.X)-1]
	if c.XTo > c.XFrom {
		xmin, xmax = math.Min(xmin, c.XFrom), math.Max(xmax, c.XTo)
	}
	for _, bd := range c.Bands {
		xmax = math.Max(xmax, bd.To)
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	return xmin, xmax
}

// yMax is the largest value of the series (NaN, no value, left out), 0
// when none.
func (c *Lines) yMax() float64 {
	ymax := 0.0
	for _, s := range c.Series {
		for _, y := range s.Y {
			if !math.IsNaN(y) {
				ymax = math.Max(ymax, y)
			}
		}
	}
	return ymax
}

// linesScale maps a Lines chart's values to SVG units: x linear from xmin
// to xmax, y from 0 at bottomY to ymax at top.
type linesScale struct{ xmin, xmax, ymax, top, bottomY float64 }

// px is where x lies across the plot.
func (s linesScale) px(x float64) float64 {
	return marginLeft + (x-s.xmin)/(s.xmax-s.xmin)*(width-marginLeft-marginRight)
}

// py is where y lies up the plot.
func (s linesScale) py(y float64) float64 { return s.bottomY - y/s.ymax*(s.bottomY-s.top) }

// writeBands draws the bands (steps), behind everything, shaded in turn,
// each labelled when its label fits.
func (c *Lines) writeBands(b *strings.Builder, s linesScale) {
	for i, bd := range c.Bands {
		x0, x1 := s.px(math.Max(bd.From, s.xmin)), s.px(math.Min(bd.To, s.xmax))
		if x1 <= x0 {
			continue
		}
		fill := "#eef1f8"
		if i%2 == 1 {
			fill = "#f8f9fc"
		}
		fmt.Fprintf(b, `<rect class="step-band" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x0, s.top, x1-x0, s.bottomY-s.top, fill)
		if label := fitLabel(bd.Label, i+1, x1-x0-8); label != "" {
			fmt.Fprintf(b, `<text class="step-label" x="%.1f" y="%.1f" style="fill:#6b7285">%s</text>`, x0+4, s.top+12, esc(label))
		}
	}
}

// writeAxes draws the grid and y ticks every ystep, the x ticks at round
// values, the axes' labels and the x axis.
func (c *Lines) writeAxes(b *strings.Builder, s linesScale, ystep, legendH float64) {
	const W, H, left, right = width, height, marginLeft, marginRight
	for y := 0.0; y <= s.ymax*(1+1e-9); y += ystep {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e6e8ef"/>`, left, W-right, s.py(y), s.py(y))
		fmt.Fprintf(b, `<text class="ytick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left-6, s.py(y)+4, Label(y))
	}
	fmt.Fprintf(b, `<text x="12" y="%.1f" transform="rotate(-90 12 %.1f)" text-anchor="middle">%s</text>`, (s.bottomY+s.top)/2, (s.bottomY+s.top)/2, esc(c.YUnit))
	// X ticks, at round values.
	xstep := niceStep(s.xmax-s.xmin, 6)
	for x := math.Ceil(s.xmin/xstep-1e-9) * xstep; x <= s.xmax*(1+1e-9)+1e-9; x += xstep {
		label := c.XTick(x)
		at, anchor := tickPlace(s.px(x), textWidth(label), W)
		fmt.Fprintf(b, `<text class="xtick" x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, at, s.bottomY+16, anchor, esc(label))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (W+left)/2, H+legendH-6, esc(c.XLabel))
	fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#8a90a0"/>`, left, W-right, s.bottomY, s.bottomY)
}

// writeSeries draws each series as a polyline carrying its values, and its
// legend entry.
func (c *Lines) writeSeries(b *strings.Builder, s linesScale, legend []legendItem) {
	xs := c.X
	for i, sr := range c.Series {
		var pts, data []string
		for j, y := range sr.Y {
			if j < len(xs) && !math.IsNaN(y) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", s.px(xs[j]), s.py(y)))
				data = append(data, strconv.FormatFloat(xs[j], 'g', -1, 64)+":"+strconv.FormatFloat(y, 'g', 6, 64))
			}
		}
		dash := ""
		if sr.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(b, `<polyline class="series" fill="none" stroke="%s" stroke-width="1.8"%s points="%s" data-series="%s" data-values="%s"/>`,
			sr.Color, dash, strings.Join(pts, " "), esc(sr.Name), strings.Join(data, " "))
		l := legend[i]
		fmt.Fprintf(b, `<rect class="legend" x="%.1f" y="%.1f" width="12" height="3" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`, l.x, l.y-4, sr.Color, l.x+16, l.y, esc(sr.Name))
	}
}
