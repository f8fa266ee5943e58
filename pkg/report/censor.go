package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/replay-dev/replay/pkg/e2e"
)

// An end-to-end latency threshold is judged over the events the API
// accepted, not over those a sink happened to see: an accepted event not
// seen by the end of the drain (pending, or lost where the sinks prove
// loss) is slower than any bound, as a request without an answer counts
// against status.202>99%. Its latency is censored, not dropped. Of the
// statistics:
//
//   - a percentile pN sits among the unseen events, +Inf, when they are
//     more than (100−N)% of the events (seen and unseen); below that it is
//     the seen events' latency at the rank pN has among all of them, read
//     from the stage's histogram (so 1% pending moves p50 up, as the same
//     share of slow answers would);
//   - max and mean are +Inf as soon as one event is unseen;
//   - min is the fastest event seen: the unseen ones are slower still;
//   - with no event seen, every statistic is +Inf when some were accepted
//     ("no event seen (N pending)"), and nothing is measured when none was.
//
// +Inf fails every bound from above (e2e.p99<2s) and passes one from below;
// a result shows it as what it is ("slower than any bound: 30 of 100
// events pending"), never as a number.

// census is what an end-to-end latency measured at one stage rests on: the
// events seen there and those accepted and not seen (pending, or lost:
// word). The zero census is that of no stage measured.
type census struct {
	seen, unseen int64
	word         string // "pending" or "lost"; "" for no stage measured
	// at is a stage a threshold named that the run does not list (no
	// event reached it, or no such stage), and stages those it lists.
	at     string
	stages []string
	// noun names what was counted: "events" when empty ("messages" for
	// WebSocket messages).
	noun string
}

func (c census) nouns() string {
	if c.noun == "" {
		return "events"
	}
	return c.noun
}

// unseenWord is what e calls an event not seen: lost where its sinks
// prove loss, else pending.
func unseenWord(e *e2e.Summary) string {
	if e.LossKnown {
		return "lost"
	}
	return "pending"
}

// stageNames are the names of e's stages.
func stageNames(e *e2e.Summary) []string {
	names := make([]string, len(e.Stages))
	for i, st := range e.Stages {
		names[i] = st.Name
	}
	return names
}

// stageCensus is the census of stage st.
func stageCensus(st *e2e.Stage) census {
	c := census{seen: st.Unique, unseen: st.Pending + st.Lost, word: "pending"}
	if st.Lost > 0 {
		c.word = "lost"
	}
	return c
}

// note says what the unseen events did to a latency measured as value
// (+Inf: slower than any bound; NaN: nothing to measure), for the
// threshold's result: "" when every event was seen.
func (c census) note(value float64) string {
	switch {
	case c.seen == 0 && len(c.stages) > 0:
		return fmt.Sprintf("no event seen (%d %s); no event reached %q, the run's stages: %s", c.unseen, c.word, c.at, strings.Join(c.stages, ", "))
	case c.seen == 0 && c.noun != "":
		return fmt.Sprintf("none answered (%d %s %s)", c.unseen, c.noun, c.word)
	case c.seen == 0:
		return fmt.Sprintf("no event seen (%d %s)", c.unseen, c.word)
	case c.unseen == 0:
		return ""
	case math.IsInf(value, 1):
		return fmt.Sprintf("slower than any bound: %d of %d %s %s", c.unseen, c.seen+c.unseen, c.nouns(), c.word)
	}
	return fmt.Sprintf("%d of %d %s %s, counted as slower", c.unseen, c.seen+c.unseen, c.nouns(), c.word)
}

// censoredStat is statistic stat (latencyStats) of the end-to-end latency
// of stage st over the events seen there and the unseen ones, those
// counted as slower than any bound: +Inf when the statistic falls among
// them, NaN when there is no event at all (none seen, none accepted).
func censoredStat(st *e2e.Stage, stat string) float64 {
	return censoredOf(st.Latency, st.Histogram, stageCensus(st), stat)
}

// censoredOf is statistic stat of a latency (its statistics l, its
// encoded histogram hist) over the c.seen measured and the c.unseen that
// never came, ranked after them: the end-to-end latency's events never
// seen, the WebSocket messages never answered.
func censoredOf(l Latency, hist string, c census, stat string) float64 {
	switch {
	case c.seen == 0 && c.unseen == 0:
		return math.NaN()
	case c.unseen == 0:
		return statOf(l, stat)
	case c.seen == 0:
		return math.Inf(1)
	}
	switch stat {
	case "min":
		return l.Min
	case "mean", "max":
		return math.Inf(1)
	}
	q := quantileOf(stat)
	if h, err := DecodeHistogram(hist); err == nil && h.TotalCount() > 0 {
		n := h.TotalCount()
		r := censoredRank(q, n, c.unseen)
		if r > n {
			return math.Inf(1)
		}
		// The r-th of n seen: hdrhistogram's rank of 100·r/n is r.
		return float64(h.ValueAtPercentile(100*float64(r)/float64(n))) / 1000
	}
	// No histogram (a summary written by hand or cut short): the stored
	// statistic at or above the rank among the seen, which never reads
	// faster than the events were.
	r := censoredRank(q, c.seen, c.unseen)
	if r > c.seen {
		return math.Inf(1)
	}
	return atOrAbove(l, 100*float64(r)/float64(c.seen))
}

// censoredRank is the rank (from 1) that percentile q has among seen
// events and unseen ones ranked after them, as hdrhistogram ranks it: the
// rank above seen is among the unseen.
func censoredRank(q float64, seen, unseen int64) int64 {
	total := seen + unseen
	r := int64(q/100*float64(total) + 0.5)
	return min(max(r, 1), total)
}

// quantileOf is the percentile a statistic names: p99 is 99, p999 99.9.
func quantileOf(stat string) float64 {
	switch stat {
	case "p50":
		return 50
	case "p90":
		return 90
	case "p95":
		return 95
	case "p99":
		return 99
	case "p999":
		return 99.9
	}
	return 100
}

// atOrAbove is the first statistic of l whose percentile is at least q
// (max for any q above 99.9).
func atOrAbove(l Latency, q float64) float64 {
	for _, p := range []struct {
		q float64
		v float64
	}{{50, l.P50}, {90, l.P90}, {95, l.P95}, {99, l.P99}, {99.9, l.P999}} {
		if q <= p.q+1e-9 {
			return p.v
		}
	}
	return l.Max
}

// worstStage measures the statistic q asks for at the stage it names, or
// at every stage: the worst value (a number over NaN; at equal values, the
// stage that missed more events), its stage's census, and whether a stage
// was measured.
func worstStage(e *e2e.Summary, q query) (worst float64, at census, found bool) {
	worst = math.NaN()
	for i := range e.Stages {
		st := &e.Stages[i]
		if q.stage != "" && st.Name != q.stage {
			continue
		}
		x, c := censoredStat(st, q.stat), stageCensus(st)
		if !found || x > worst || math.IsNaN(worst) && !math.IsNaN(x) || x == worst && c.unseen > at.unseen {
			worst, at = x, c
		}
		found = true
	}
	return worst, at, found
}

// e2eLatency measures an end-to-end latency statistic, censored
// (censoredStat): of the stage the threshold names, or the worst stage.
// A run whose sinks listed no stage but whose API accepted events saw
// none of them: +Inf. It returns the census of the stage measured.
func e2eLatency(v *view, q query) (float64, string, census) {
	e := v.e2e
	if e == nil || len(e.Stages) == 0 {
		if e != nil && e.Accepted > 0 {
			return math.Inf(1), "", census{unseen: e.Accepted, word: unseenWord(e), at: q.stage}
		}
		return math.NaN(), "(no event seen by a sink)", census{}
	}
	worst, at, found := worstStage(e, q)
	if !found {
		if e.Accepted > 0 { // accepted, and none seen there
			return math.Inf(1), "", census{unseen: e.Accepted, word: unseenWord(e), at: q.stage, stages: stageNames(e)}
		}
		return math.NaN(), fmt.Sprintf("(no stage %q)", q.stage), census{}
	}
	if math.IsNaN(worst) {
		return worst, "ms (no event seen, none accepted)", at
	}
	return worst, "", at
}

// MarshalJSON writes e with "latency_ms": null when the stage saw no event
// of the step: no latency, not a zero one (as e2e.Stage writes it).
func (e StepE2E) MarshalJSON() ([]byte, error) {
	type plain StepE2E
	if e.Events > 0 {
		return json.Marshal(plain(e))
	}
	return json.Marshal(struct {
		plain
		Latency *Latency `json:"latency_ms"`
	}{plain: plain(e)})
}
