package capacity

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/replay-dev/replay/pkg/chart/charttest"
)

// TestHTMLLayoutInChromium renders find-max's report in headless Chromium
// and measures through the DOM that no two text labels of its chart
// overlap (the step labels, the sustainable mark's, the legend, the
// ticks) and nothing is drawn outside it: a real search against the demo
// SUT (testdata/demo-search.json, find-max --out against replay demo
// --serve: seven ramp steps up to a generator limit), and a bisection
// whose narrowing and confirming steps crowd one rate.
// REPLAY_SCREENSHOTS=DIR leaves their screenshots.
func TestHTMLLayoutInChromium(t *testing.T) {
	b, err := os.ReadFile("testdata/demo-search.json")
	if err != nil {
		t.Fatal(err)
	}
	var demo Result
	if err := json.Unmarshal(b, &demo); err != nil {
		t.Fatal(err)
	}
	bisect := sample()
	bisect.Steps = append(bisect.Steps[:2],
		Step{N: 3, Phase: Narrow, Target: 150, Achieved: 149, Verdict: Pass, Latency: Latency{P50: 30, P99: 47}},
		Step{N: 4, Phase: Narrow, Target: 175, Achieved: 171, Verdict: Fail, Reason: "p99<50ms (measured 61 ms)", Latency: Latency{P50: 41, P99: 61}},
		Step{N: 5, Phase: Narrow, Target: 162, Achieved: 160, Verdict: Pass, Latency: Latency{P50: 35, P99: 49}},
		Step{N: 6, Phase: Confirm, Target: 162, Achieved: 161, Verdict: Pass, Latency: Latency{P50: 34, P99: 48}})
	bisect.Sustainable = 162
	for _, tc := range []struct {
		name string
		r    *Result
	}{{"find-max", &demo}, {"find-max-bisect", bisect}} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.r.Steps) == 0 {
				t.Fatal("no steps in the fixture")
			}
			var page bytes.Buffer
			if err := WriteHTML(&page, tc.r); err != nil {
				t.Fatal(err)
			}
			charttest.Check(t, tc.name, page.String(), 1000, 1)
		})
	}
}
