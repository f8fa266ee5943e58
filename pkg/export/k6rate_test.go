package export

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestK6RatesOf: every rate becomes a whole count per the shortest
// timeUnit of whole seconds that keeps it exact, one unit shared by all
// the rates of a scenario; a rate no unit up to an hour writes exactly
// gets the nearest, with its error.
func TestK6RatesOf(t *testing.T) {
	for _, tt := range []struct {
		name   string
		rates  []float64
		unit   time.Duration
		counts []int64
		exact  bool
	}{
		{"whole", []float64{1000}, time.Second, []int64{1000}, true},
		{"1200 req/s at 6.06 requests an iteration", []float64{1200 / 6.06}, 101 * time.Second, []int64{20000}, true},
		{"150/m", []float64{150.0 / 60}, 2 * time.Second, []int64{5}, true},
		{"1/h", []float64{1.0 / 3600}, time.Hour, []int64{1}, true},
		{"stages share one unit", []float64{0, 2.5, 1.0 / 3, 10}, 6 * time.Second, []int64{0, 15, 2, 60}, true},
		{"stages of req/s at 6.06", []float64{0, 1200 / 6.06, 600 / 6.06}, 101 * time.Second, []int64{0, 20000, 10000}, true},
		{"pi: the shortest within a millionth", []float64{math.Pi}, 113 * time.Second, []int64{355}, false},
		{"0.0123/s: none within a millionth, the nearest", []float64{0.0123}, 813 * time.Second, []int64{10}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := K6RatesOf(tt.rates)
			if got.Unit != tt.unit || !equalCounts(got.Counts, tt.counts) || (got.RelErr == 0) != tt.exact {
				t.Fatalf("got %d per %s (error %g), want %d per %s (exact %v)", got.Counts, got.Unit, got.RelErr, tt.counts, tt.unit, tt.exact)
			}
			// The counts per the unit are the rates, within the error stated.
			for i, r := range tt.rates {
				written := float64(got.Counts[i]) / got.Unit.Seconds()
				if r == 0 && written != 0 || r > 0 && math.Abs(written-r)/r > max(got.RelErr, K6ExactRate)*1.0000001 {
					t.Errorf("rate %d: got %g/s written, want %g/s within %g", i, written, r, got.RelErr)
				}
			}
		})
	}
}

var wholeRate = regexp.MustCompile(`\n      rate: [0-9]+,\n      timeUnit: '[0-9]+s',\n`)

func equalCounts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestK6RateWarnsOrRefuses: a rate written exactly says nothing; one
// written within K6MostRateError is exported with a warning naming the
// rate asked for and the one written; one further off is refused before
// anything is written, naming the flags.
func TestK6RateWarnsOrRefuses(t *testing.T) {
	for _, tt := range []struct {
		name    string
		load    K6Load
		warning string
		err     string
	}{
		{"exact", K6Load{VUs: 1, RateStages: true, Rate: 1200 / 6.06}, "", ""},
		{"near", K6Load{VUs: 1, RateStages: true, Rate: math.Pi}, "3.14159 iterations/s exactly: written as 355 per 113s, 8.5e-06% off at most", ""},
		// One iteration every two hours at the start, then 1/s: within an
		// hour the start is 0.5 or 1 a unit, 50% or 100% off.
		{"refused", K6Load{VUs: 1, RateStages: true, Rate: 1.0 / 7200, Stages: []K6Stage{{time.Minute, 1}}}, "", "--rate/--stages: k6 takes a whole number of iterations per timeUnit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var script, data bytes.Buffer
			st, err := K6(&script, &data, "./load.data.json", open(t), K6Options{Target: "http://127.0.0.1:8080", Source: "traffic.jsonl", Load: tt.load}, func(int, string) {})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || data.Len() > 0 {
					t.Fatalf("got error %v (%d bytes of data written), want %q and nothing written", err, data.Len(), tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.warning == "" && st.Warning != "" || !strings.Contains(st.Warning, tt.warning) {
				t.Errorf("got warning %q, want %q", st.Warning, tt.warning)
			}
			if !wholeRate.MatchString(script.String()) {
				t.Errorf("got no whole rate per a timeUnit of whole seconds in the script:\n%s", script.String())
			}
		})
	}
}
