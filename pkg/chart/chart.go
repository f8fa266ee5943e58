// Package chart draws the inline SVG charts of replay's HTML reports: Lines,
// series over a shared linear x axis (the run report's time charts and its
// percentile distribution), and Curve, points and the lines through them on
// a linear x axis against a logarithmic y axis (find-max's achieved rate
// against latency). A chart is drawn from plain data to a string of SVG;
// what the data means, its colours and its labels are the caller's.
//
// It owns the look the reports share: 1, 2 or 5 times a power of ten for
// round axis steps, numbers with at most three decimals, legends laid out
// in rows that never overlap. It imports nothing of replay.
package chart

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// Palette is the colours the run report gives its series, in order.
var Palette = []string{"#2f6fdf", "#d9480f", "#2b8a3e", "#ae3ec9", "#e67700", "#c92a2a", "#0b7285", "#5c940d", "#862e9c", "#495057"}

// Label writes v as the axes label it: at most three decimals, trailing
// zeros dropped (2.5, 10, 0.125); never "-0".
func Label(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
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

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, for an axis that
// ends on a round value; 1 for v ≤ 0.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// esc escapes text for an SVG attribute or element.
func esc(s string) string { return template.HTMLEscapeString(s) }
