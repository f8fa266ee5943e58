package capacity

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/chartcheck"
)

// TestHTMLLayoutInChromium renders find-max's report in headless Chromium
// and measures through the DOM that no two text labels of its chart
// overlap (the step labels, the sustainable mark's, the legend, the
// ticks) and nothing is drawn outside it: a real search against the demo
// SUT (testdata/demo-search.json, find-max --out against replay demo
// --serve: seven ramp steps up to a generator limit), a bisection
// whose narrowing and confirming steps crowd one rate, and a search whose
// hold behind its schedule was held again and confirmed at the knee
// (the diamonds of rates held again, their legend, the generator CPU
// column and the notes).
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
	// Held again: a narrowing hold that fell behind its schedule, held
	// again after a pause, and the confirmation, each a diamond by the
	// hold it repeats, crowded at the knee; each hold with its
	// generator's CPU, a note and a long reason in the table.
	again := sample()
	cpu := func(pct float64) GeneratorCPU { return GeneratorCPU{CPUS: pct / 50, WallS: 1, Cores: 2, UsedPct: pct} }
	for i := range again.Steps {
		again.Steps[i].CPU = cpu(12)
	}
	behind := "p99<50ms (measured 231.4 ms)"
	note := "61 of 412 requests begun late (14.8%, over 5%), scheduler lag p99 212.0 ms (over 50 ms), with the generator at 14% of 2 cores (under 50%): not short of CPU, so the SUT is judged, the lag counted in its latency"
	again.Steps = append(again.Steps[:3],
		Step{N: 4, Phase: Narrow, Target: 175, Achieved: 171, Verdict: Fail, Reason: behind, Behind: true, Retried: true, Note: note, CPU: cpu(14), Latency: Latency{P50: 41, P99: 231}},
		Step{N: 5, Phase: Narrow, Target: 175, Achieved: 172, Verdict: Pass, RepeatOf: 4, CPU: cpu(11), Latency: Latency{P50: 36, P99: 48}},
		Step{N: 6, Phase: Narrow, Target: 188, Achieved: 181, Verdict: Fail, Reason: "p99<50ms (measured 66 ms)", CPU: cpu(13), Latency: Latency{P50: 44, P99: 66}},
		Step{N: 7, Phase: Confirm, Target: 175, Achieved: 173, Verdict: Pass, CPU: cpu(12), Latency: Latency{P50: 35, P99: 49}})
	again.Sustainable, again.FailedAt = 175, 188
	for _, tc := range []struct {
		name string
		r    *Result
	}{{"find-max", &demo}, {"find-max-bisect", bisect}, {"find-max-held-again", again}} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.r.Steps) == 0 {
				t.Fatal("no steps in the fixture")
			}
			var page bytes.Buffer
			if err := WriteHTML(&page, tc.r); err != nil {
				t.Fatal(err)
			}
			chartcheck.Check(t, tc.name, page.String(), 1000, 1)
		})
	}
}
