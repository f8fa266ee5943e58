package chart

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Curve is a chart of measured points and the lines through them: x
// linear from 0 to the first round tick at or past the data, y on a log
// scale by whole decades (a grid line and a tick a decade). A y of 0 or
// less sits on the x axis; a chart whose points all have one has the
// decades 1 to 10. Its legend is a line above the plot, never on it.
type Curve struct {
	Label  string // what the chart shows, for assistive technology
	XLabel string // under the x axis
	YUnit  string // after each y tick: "ms"
	Lines  []Path
	Points []Point
	Marks  []Mark
	// Legend is a line of text above the plot.
	Legend string
}

// Path is a line through points of a Curve, in the order given.
type Path struct {
	X, Y  []float64
	Color string
	Dash  string // stroke-dasharray ("3 3"); "" for a solid line
}

// Point is one measured point of a Curve: a dot (radius 5), or with
// Hollow a ring (radius 4), or with Diamond a square on its corner (a
// point of another kind: a repeated measure), whose title shows on hover.
type Point struct {
	X, Y    float64
	Color   string
	Hollow  bool
	Diamond bool
	Title   string
	// Label is a short text drawn beside the point ("3", its step), where
	// it overlaps no other label; "" for none.
	Label string
}

// Mark is a vertical dashed line across a Curve's plot at X, labelled at
// its top.
type Mark struct {
	X     float64
	Color string
	Label string
}

// Geometry of a Curve, in SVG units: its size and the margins of its plot.
const (
	curveW, curveH         = 760, 360
	padL, padR, padT, padB = 64, 24, 40, 48
)

// SVG draws the chart as one svg element: the decades' grid and ticks, five
// x ticks, the marks, the lines (polylines), the points (circles) and the
// legend, in that order.
func (c *Curve) SVG() string {
	maxX, minY, maxY := c.extent()
	if maxY == 0 {
		minY, maxY = 1, 10
	}
	lo, hi := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
	if hi <= lo {
		hi = lo + 1
	}
	// The axis ends on the first round tick past the data, with room for
	// a point's dot at the end.
	xStep := niceStep(maxX, 5)
	if maxX <= 0 {
		maxX = 1
	}
	maxX = math.Ceil(maxX*1.02/xStep) * xStep
	s := curveScale{maxX: maxX, lo: lo, hi: hi}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, curveW, curveH, esc(c.Label))
	c.writeGrid(&b, s, xStep)
	placed := c.writeMarks(&b, s)
	c.writeLines(&b, s)
	c.writePoints(&b, s)
	c.writePointLabels(&b, s, placed)
	fmt.Fprintf(&b, `<text class="legend" x="%d" y="%d">%s</text></svg>`, padL, padT-12, esc(c.Legend))
	return b.String()
}

// extent is the largest x of the points, lines and marks, and the smallest
// and largest positive y of the points and lines (+Inf and 0 when none).
func (c *Curve) extent() (maxX, minY, maxY float64) {
	maxX, minY, maxY = 0.0, math.Inf(1), 0.0
	see := func(x, y float64) {
		maxX = max(maxX, x)
		if y > 0 {
			minY, maxY = min(minY, y), max(maxY, y)
		}
	}
	for _, p := range c.Points {
		see(p.X, p.Y)
	}
	for _, l := range c.Lines {
		for i := range min(len(l.X), len(l.Y)) {
			see(l.X[i], l.Y[i])
		}
	}
	for _, m := range c.Marks {
		maxX = max(maxX, m.X)
	}
	return maxX, minY, maxY
}

// curveScale maps a Curve's values to SVG units: x linear from 0 to maxX,
// y by decades from 10^lo to 10^hi.
type curveScale struct{ maxX, lo, hi float64 }

// x is where value v lies across the plot.
func (s curveScale) x(v float64) float64 { return padL + v/s.maxX*(curveW-padL-padR) }

// y is where value v lies up the plot; values under 10^lo lie on the axis.
func (s curveScale) y(v float64) float64 {
	return curveH - padB - (math.Log10(max(v, math.Pow(10, s.lo)))-s.lo)/(s.hi-s.lo)*(curveH-padT-padB)
}

// writeGrid draws a grid line and tick a decade up, one every xStep across,
// and the x axis' label.
func (c *Curve) writeGrid(b *strings.Builder, s curveScale, xStep float64) {
	for e := s.lo; e <= s.hi; e++ { // one grid line a decade
		v := math.Pow(10, e)
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text class="ytick" x="%d" y="%.1f" text-anchor="end">%s %s</text>`, padL, curveW-padR, s.y(v), s.y(v), padL-6, s.y(v)+4, Label(v), esc(c.YUnit))
	}
	for v := 0.0; v <= s.maxX*(1+1e-9); v += xStep {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/><text class="xtick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, s.x(v), s.x(v), padT, curveH-padB, s.x(v), curveH-padB+16, Label(v))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, (curveW+padL)/2, curveH-8, esc(c.XLabel))
}

// writeMarks draws the marks, each label right of its line unless it would
// run past the chart; it returns the labels' boxes.
func (c *Curve) writeMarks(b *strings.Builder, s curveScale) []box {
	var placed []box // the labels drawn so far, that none overlaps
	for _, m := range c.Marks {
		w := textWidth(m.Label)
		at, anchor := s.x(m.X)+4, "start"
		if at+w > curveW-padR { // it would run past the chart: left of the line
			at, anchor = s.x(m.X)-4, "end"
		}
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-dasharray="4 3"/><text x="%.1f" y="%d" text-anchor="%s">%s</text>`,
			s.x(m.X), s.x(m.X), padT, curveH-padB, m.Color, at, padT+12, anchor, esc(m.Label))
		if anchor == "end" {
			at -= w
		}
		placed = append(placed, box{at, padT, at + w, padT + 14})
	}
	return placed
}

// writeLines draws the lines as polylines.
func (c *Curve) writeLines(b *strings.Builder, s curveScale) {
	for _, l := range c.Lines {
		var pts []string
		for i := range min(len(l.X), len(l.Y)) {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", s.x(l.X[i]), s.y(l.Y[i])))
		}
		dash := ""
		if l.Dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, l.Dash)
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s"%s/>`, strings.Join(pts, " "), l.Color, dash)
	}
}

// writePoints draws the points: diamonds or circles, filled or hollow,
// each with its title.
func (c *Curve) writePoints(b *strings.Builder, s curveScale) {
	for _, p := range c.Points {
		if p.Diamond {
			fill, stroke := p.Color, "none"
			if p.Hollow {
				fill, stroke = "none", p.Color
			}
			fmt.Fprintf(b, `<rect class="point" x="%.1f" y="%.1f" width="8" height="8" fill="%s" stroke="%s" transform="rotate(45 %.1f %.1f)"><title>%s</title></rect>`,
				s.x(p.X)-4, s.y(p.Y)-4, fill, stroke, s.x(p.X), s.y(p.Y), esc(p.Title))
			continue
		}
		if p.Hollow {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="none" stroke="%s"><title>%s</title></circle>`, s.x(p.X), s.y(p.Y), p.Color, esc(p.Title))
		} else {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"><title>%s</title></circle>`, s.x(p.X), s.y(p.Y), p.Color, esc(p.Title))
		}
	}
}

// writePointLabels draws the points' labels where each overlaps no label
// already placed and no point; a label that fits nowhere is left out.
func (c *Curve) writePointLabels(b *strings.Builder, s curveScale, placed []box) {
	for _, p := range c.Points { // a label covers no point (a diamond is 11.3 across)
		r := 5.0
		if p.Diamond {
			r = 6
		}
		placed = append(placed, box{s.x(p.X) - r, s.y(p.Y) - r, s.x(p.X) + r, s.y(p.Y) + r})
	}
	for _, p := range c.Points {
		if p.Label == "" {
			continue
		}
		if at, ok := placeLabel(s.x(p.X), s.y(p.Y), textWidth(p.Label), placed); ok {
			placed = append(placed, at)
			fmt.Fprintf(b, `<text class="point-label" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (at.x0+at.x1)/2, at.y1-2, esc(p.Label))
		}
	}
}

// box is a label's extent in SVG units.
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }

// placeLabel finds where a label w wide goes beside the point at (px, py):
// above it, below it, then further up and down, then to its right and
// left, the first place inside the plot that overlaps nothing placed (a
// label, a point);
// false when there is none (the point's title still names it on hover).
func placeLabel(px, py, w float64, placed []box) (box, bool) {
	const h = 12.0
	for _, d := range [][2]float64{{0, -8 - h}, {0, 8}, {0, -20 - h}, {0, 20}, {w/2 + 8, -h / 2}, {-w/2 - 8, -h / 2}, {0, -32 - h}, {0, 32}} {
		at := box{px + d[0] - w/2, py + d[1], px + d[0] + w/2, py + d[1] + h}
		if at.x0 < padL || at.x1 > curveW-padR || at.y0 < padT || at.y1 > curveH-padB {
			continue
		}
		if !slices.ContainsFunc(placed, at.overlaps) {
			return at, true
		}
	}
	return box{}, false
}
