package report

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The formats the text, end-to-end and HTML renderers share.

// formatMillis formats a duration given in milliseconds with about three
// significant digits in a unit that suits it: 0s, 210µs, 1.23ms, 12.3ms,
// 123ms, 1.23s, 12.3s, then whole seconds as in 2m5s. Trailing zeros are
// dropped: 3s, 1.2ms.
func formatMillis(ms float64) string {
	us := math.Round(ms * 1000)
	switch {
	case us <= 0:
		return "0s"
	case us < 1000:
		return strconv.FormatFloat(us, 'f', 0, 64) + "µs"
	case ms < 999.5:
		return sig3(ms) + "ms"
	case ms < 59_950:
		return sig3(ms/1000) + "s"
	default:
		return time.Duration(math.Round(ms/1000) * float64(time.Second)).String()
	}
}

// sig3 formats v (from 1 to below 1000) with three significant digits,
// trailing zeros dropped.
func sig3(v float64) string {
	decimals := 0
	switch {
	case v < 9.995:
		decimals = 2
	case v < 99.95:
		decimals = 1
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// writeTable writes rows as columns: the first left-aligned, the others
// right-aligned, the last one left-aligned when lastLeft.
func writeTable(buf *bytes.Buffer, rows [][]string, lastLeft bool) {
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	last := len(width) - 1
	for _, row := range rows {
		buf.WriteString("  ")
		for i, cell := range row {
			switch i {
			case 0:
				fmt.Fprintf(buf, "%-*s", width[i], cell)
			case last:
				if lastLeft {
					buf.WriteString(cell)
				} else {
					fmt.Fprintf(buf, "%*s", width[i], cell)
				}
			default:
				fmt.Fprintf(buf, "%*s", width[i], cell)
			}
			if i != last {
				buf.WriteString("  ")
			}
		}
		buf.WriteByte('\n')
	}
}

// countList returns counts as key:count, the largest first (ties by key).
func countList(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	list := make([]string, len(keys))
	for i, k := range keys {
		list[i] = k + ":" + strconv.FormatInt(m[k], 10)
	}
	return list
}
