package export

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// k6 reads an arrival rate as a whole number of iterations (an int64: a
// script with "rate: 198.02" is refused) per timeUnit. A rate of a replay
// load is any positive number of iterations a second (a rate in requests
// a second divided by the requests an iteration holds: 1200 req/s of
// iterations of 6.06 requests is 60000/303 iterations/s), so the export
// writes it as a count per a timeUnit of whole seconds.
const (
	// K6MaxTimeUnit is the longest timeUnit the export writes.
	K6MaxTimeUnit = time.Hour
	// K6ExactRate is the relative error under which a rate is written
	// exactly (float64 rounding of a quotient such as 60000/303).
	K6ExactRate = 1e-9
	// K6NearRate is the relative error under which, when no timeUnit
	// writes the rates exactly, the shortest timeUnit is taken rather than
	// a longer one that comes nearer still.
	K6NearRate = 1e-6
	// K6MostRateError is the largest relative error the export accepts,
	// with a warning, when no timeUnit up to K6MaxTimeUnit writes every
	// rate exactly; beyond it the export is refused.
	K6MostRateError = 0.01
)

// K6Rates is how one k6 scenario writes its arrival rates: each a whole
// Counts[i] iterations per Unit (one timeUnit for the scenario: k6 has
// one a scenario), within RelErr of the rate asked for.
type K6Rates struct {
	Unit   time.Duration // whole seconds, 1s to K6MaxTimeUnit
	Counts []int64
	RelErr float64 // the largest relative error of a count; 0 when exact
}

// K6RatesOf writes rates (iterations a second, none negative) as k6
// takes them: the shortest timeUnit of whole seconds up to K6MaxTimeUnit
// that makes every rate a whole number of iterations (to K6ExactRate),
// else the shortest that does within K6NearRate, else the timeUnit whose
// counts come nearest (the least of their largest relative error; the
// shorter on a tie). A zero rate (a stage's target) is 0 in any unit; a
// positive rate is never written 0.
func K6RatesOf(rates []float64) K6Rates {
	best := K6Rates{RelErr: math.Inf(1)}
	var near time.Duration // the shortest unit within K6NearRate
	for unit := int64(1); unit <= int64(K6MaxTimeUnit/time.Second); unit++ {
		worst := worstRateErr(rates, unit, best.RelErr)
		if worst < best.RelErr {
			best = K6Rates{Unit: time.Duration(unit) * time.Second, RelErr: worst}
			if worst <= K6ExactRate {
				best.RelErr = 0
				break
			}
		}
		if near == 0 && worst <= K6NearRate {
			near = time.Duration(unit) * time.Second
		}
	}
	if best.RelErr > 0 && near > 0 {
		best = K6Rates{Unit: near}
		for _, r := range rates {
			if x := r * near.Seconds(); r > 0 {
				best.RelErr = max(best.RelErr, math.Abs(max(math.Round(x), 1)-x)/x)
			}
		}
	}
	secs := best.Unit.Seconds()
	best.Counts = make([]int64, len(rates))
	for i, r := range rates {
		if r > 0 {
			best.Counts[i] = max(int64(math.Round(r*secs)), 1)
		}
	}
	return best
}

// worstRateErr is the largest relative error of the positive rates written
// as whole iterations per unit seconds (at least one); it stops as soon as
// it reaches bound, the best unit's so far.
func worstRateErr(rates []float64, unit int64, bound float64) float64 {
	worst := 0.0
	for _, r := range rates {
		if r <= 0 {
			continue
		}
		x := r * float64(unit)
		n := math.Round(x)
		if n < 1 {
			n = 1
		}
		worst = max(worst, math.Abs(n-x)/x)
		if worst >= bound {
			// No better than best: the unit is not taken, nor is it the
			// first within K6NearRate (best, found before, would be).
			break
		}
	}
	return worst
}

// k6Rates are the rates of l's arrival-rate scenario as k6 writes them
// (the start rate first, then each stage's target), a warning when they
// are not exact, or the error when they are further than K6MostRateError
// from the load asked for; none for a load with no arrival rate.
func k6Rates(l K6Load) (r K6Rates, warning string, err error) {
	rampsRate := l.RateStages && len(l.Stages) > 0
	if !rampsRate && l.Rate <= 0 {
		return K6Rates{}, "", nil
	}
	rates := []float64{l.Rate}
	if rampsRate {
		for _, s := range l.Stages {
			rates = append(rates, s.Target)
		}
	}
	r = K6RatesOf(rates)
	if r.RelErr == 0 {
		return r, "", nil
	}
	var asked, written []string
	for i, x := range rates {
		asked = append(asked, rateFigure(x))
		written = append(written, fmt.Sprint(r.Counts[i]))
	}
	what := fmt.Sprintf("k6 takes a whole number of iterations per timeUnit, and no timeUnit up to %s writes %s iterations/s exactly: written as %s per %s, %s off at most",
		k6Duration(K6MaxTimeUnit), strings.Join(asked, ", "), strings.Join(written, ", "), k6Duration(r.Unit), percent(r.RelErr))
	if r.RelErr > K6MostRateError {
		return r, "", fmt.Errorf("--rate/--stages: %s, more than the %g%% the export accepts: give rates k6 can write (a whole number of iterations per second, minute or hour)", what, 100*K6MostRateError)
	}
	return r, what, nil
}

// rateFigure writes a rate to six significant figures (0.0001, 198.02).
func rateFigure(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

// percent writes a relative error as a percentage: two significant
// figures below 1% (8.6e-06%), one decimal above (180.0%).
func percent(e float64) string {
	if e < 0.01 {
		return fmt.Sprintf("%.2g%%", 100*e)
	}
	return fmt.Sprintf("%.1f%%", 100*e)
}
