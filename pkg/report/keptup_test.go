package report

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/hist"
)

// A step keeps up when its achieved rate is within the tolerance of its
// target, its thresholds held, and its sinks saw 90% of the events the
// API accepted in it; the verdict's line names the first that did not.
func TestJudgeSteps(t *testing.T) {
	step := func(n int, target, throughput float64, accepted, seen int64, p99 float64) Step {
		st := Step{Step: n, Unit: "rate", From: target, To: target, DurationS: 10, Requests: int64(throughput * 10),
			Answered: int64(throughput * 10), Iterations: int64(throughput * 10), Throughput: throughput, Accepted: accepted,
			AcceptedRate: float64(accepted) / 10}
		if accepted > 0 {
			st.E2E = []StepE2E{{Stage: "processed", Events: seen, Seen: seen, SeenRate: float64(seen) / 10, Latency: Latency{P99: p99}}}
		}
		return st
	}
	for _, c := range []struct {
		name    string
		steps   []Step
		through int
		behind  int
		line    string
	}{
		{"all kept up", []Step{step(1, 500, 499, 4990, 4990, 8.9), step(2, 1000, 950, 9500, 9400, 12)}, 2, 0,
			"kept up through every step (the last, step 2: 1,000/s), e2e p99 8.9ms → 12ms"},
		{"rate below the tolerance", []Step{step(1, 500, 499, 0, 0, 0), step(2, 1000, 880, 0, 0, 0)}, 1, 2,
			"fell behind in step 2 (1,000/s): achieved 880/s of 1,000/s (below 90%)"},
		{"events not seen", []Step{step(1, 1000, 1000, 10000, 10000, 8.9), step(2, 1500, 1500, 15000, 14800, 9), step(3, 1500, 1500, 15000, 9000, 550)}, 2, 3,
			"kept up through step 2 (1,500/s); fell behind in step 3 (1,500/s): events seen 900/s of 1,500/s accepted at processed, e2e p99 9ms → 550ms"},
		{"the first behind", []Step{step(1, 1000, 10, 0, 0, 0)}, 0, 1, "fell behind from step 1 (1,000/s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Summary{Steps: c.steps}
			s.JudgeSteps(DefaultTolerance)
			v := s.StepsVerdict
			if v == nil {
				t.Fatal("no verdict")
			}
			if v.KeptUpThrough != c.through || v.FellBehind != c.behind || !strings.Contains(v.Line, c.line) {
				t.Errorf("through %d, behind %d, line %q\nwant %d, %d, %q", v.KeptUpThrough, v.FellBehind, v.Line, c.through, c.behind, c.line)
			}
		})
	}
	// A threshold on a step that failed puts it behind, though its rate kept up.
	s := &Summary{Steps: []Step{step(1, 100, 100, 0, 0, 0), step(2, 100, 100, 0, 0, 0)},
		Thresholds: []ThresholdResult{{Threshold: "step 2: p99<5ms", Step: 2, Measured: 7, Unit: "ms"}}}
	s.JudgeSteps(DefaultTolerance)
	if s.StepsVerdict.FellBehind != 2 || !strings.Contains(s.StepsVerdict.Line, "step 2: p99<5ms (measured 7 ms)") {
		t.Errorf("a failed step threshold: %+v", s.StepsVerdict)
	}
	// VU stages, no thresholds, no sinks: nothing to judge, no verdict.
	s = &Summary{Steps: []Step{{Step: 1, Unit: "vus", DurationS: 5}}}
	s.JudgeSteps(DefaultTolerance)
	if s.StepsVerdict != nil || s.Steps[0].KeptUp != nil {
		t.Errorf("VU stages judged: %+v", s.StepsVerdict)
	}
}

// pipeline simulates a queue-backed SUT on constructed series: events
// accepted at each step's rate (evenly spaced), delivered to one stage
// in order after delay, by a worker of capacity events a second (0: no
// limit), counted by sinks until the drain ends (every event seen, or
// drain after the last send). It returns the run's summary with its
// steps and e2e section, as a run fills them.
func pipeline(t *testing.T, rates []float64, stepS float64, capacity float64, delay, drain time.Duration) *Summary {
	t.Helper()
	return stalledPipeline(t, rates, stepS, capacity, delay, drain, 0)
}

// stalledPipeline is pipeline whose worker stalls for 200 ms before
// stall (from the run's start; 0: never): the events sent in those 200 ms
// are delivered at stall, as a busy machine's pause would.
func stalledPipeline(t *testing.T, rates []float64, stepS float64, capacity float64, delay, drain, stall time.Duration) *Summary {
	t.Helper()
	return shardedPipeline(t, rates, stepS, capacity, delay, drain, stall, 1)[0]
}

// shardedPipeline is stalledPipeline run as shards (event k sent by
// shard k mod shards, each with its own share of the targets, its own
// sink and series): one summary a shard.
func shardedPipeline(t *testing.T, rates []float64, stepS float64, capacity float64, delay, drain, stall time.Duration, shards int) []*Summary {
	t.Helper()
	start := time.Date(2026, 11, 28, 6, 0, 0, 123e6, time.UTC)
	type ev struct {
		step       int
		sent, seen time.Time
	}
	var evs []ev
	free := start // when the worker is next free
	for i, r := range rates {
		for k := range int(r * stepS) {
			sent := start.Add(time.Duration((float64(i)*stepS + (float64(k)+0.5)/r) * float64(time.Second)))
			at := sent.Add(delay)
			if end := start.Add(stall); stall > 0 && !sent.Before(end.Add(-200*time.Millisecond)) && at.Before(end) {
				at = end
			}
			if capacity > 0 {
				at = later(at, free)
				free = at.Add(time.Duration(float64(time.Second) / capacity))
			}
			evs = append(evs, ev{i, sent, at})
		}
	}
	end := start.Add(time.Duration(float64(len(rates)) * stepS * float64(time.Second)))
	until := end.Add(drain)
	if last := evs[len(evs)-1].seen; last.Before(until) {
		until = last // every event seen: the drain ends
	}
	out := make([]*Summary, shards)
	for sh := range out {
		s := &Summary{Version: SummaryVersion, Started: start, DurationS: end.Sub(start).Seconds(), WallS: end.Sub(start).Seconds(), Model: "rate"}
		acc, seen := &e2e.Series{}, &e2e.Series{}
		n := make([]int64, len(rates))
		lat := make([]*hdrhistogram.Histogram, len(rates))
		for i := range lat {
			lat[i] = newHistogram()
		}
		for k, e := range evs {
			if k%shards != sh {
				continue
			}
			n[e.step]++
			acc.Add(e.sent.UnixMilli())
			if !e.seen.After(until) {
				seen.Add(e.seen.UnixMilli())
				hist.RecordNanos(lat[e.step], e.seen.Sub(e.sent).Nanoseconds())
			}
		}
		for i, r := range rates {
			r /= float64(shards)
			s.Steps = append(s.Steps, Step{Step: i + 1, StartS: float64(i) * stepS, DurationS: stepS, Unit: "rate", From: r, To: r, Target: TargetText(r, r, false, false),
				Iterations: n[i], Requests: n[i], Succeeded: n[i], Answered: n[i], Accepted: n[i], Status: map[string]int64{"202": n[i]}, Errors: map[string]int64{}})
			st := &s.Steps[i]
			e := StepE2E{Stage: "processed", Events: lat[i].TotalCount(), Seen: lat[i].TotalCount()}
			if e.Events > 0 {
				e.Latency, e.Histogram = latencyOf(lat[i]), encodeHistogram(lat[i])
			}
			st.E2E = []StepE2E{e}
			st.SetRates()
			s.Requests += n[i]
			s.Succeeded += n[i]
			s.Answered += n[i]
		}
		s.Status = map[string]int64{"202": s.Requests}
		s.E2E = &e2e.Summary{Accepted: s.Requests, AcceptedSeries: acc, SeenUntilMS: until.UnixMilli(),
			Stages: []e2e.Stage{{Name: "processed", SeenSeries: seen}}}
		s.SetStepWindows()
		out[sh] = s
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// keptUp lists the steps' verdicts.
func keptUp(s *Summary) []string {
	var out []string
	for _, st := range s.Steps {
		switch {
		case st.KeptUp == nil:
			out = append(out, "none")
		case *st.KeptUp:
			out = append(out, "kept up")
		default:
			out = append(out, "behind")
		}
	}
	return out
}

// A step keeps up by what happened in its own window: the verdict is the
// same whatever the drain, a capped worker falls behind above its
// capacity and keeps up below it, and a long constant delay is no
// backlog. (By the end of the drain, as the steps were judged before,
// the capped worker "kept up" at 450/s with a 15 s drain.)
func TestKeepUpByWindow(t *testing.T) {
	for _, c := range []struct {
		name     string
		rates    []float64
		capacity float64
		delay    time.Duration
		want     []string
		// with a drain of 1s, when the delay leaves too little of the
		// last step to judge: no verdict for it
		want1s []string
	}{
		{"capped worker (the issue's)", []float64{150, 450}, 300, time.Millisecond, []string{"kept up", "behind"}, nil},
		{"0.9 and 1.1 of the capacity", []float64{100, 270, 330}, 300, time.Millisecond, []string{"kept up", "kept up", "behind"}, nil},
		{"behind, then catching up", []float64{450, 100}, 300, time.Millisecond, []string{"behind", "kept up"}, nil},
		{"constant 3s delay", []float64{100, 200}, 0, 3 * time.Second, []string{"kept up", "kept up"}, []string{"kept up", "none"}},
		{"delay and capacity", []float64{100, 400}, 300, 2 * time.Second, []string{"kept up", "behind"}, nil},
	} {
		for _, drain := range []time.Duration{time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second} {
			t.Run(fmt.Sprintf("%s, drain %s", c.name, drain), func(t *testing.T) {
				s := pipeline(t, c.rates, 3, c.capacity, c.delay, drain)
				s.JudgeSteps(DefaultTolerance)
				want := c.want
				if drain == time.Second && c.want1s != nil {
					want = c.want1s
				}
				if got := keptUp(s); !slices.Equal(got, want) {
					t.Errorf("got %v, want %v\n%s", got, want, windows(s))
				}
			})
		}
	}
}

// A stall of 200 ms as a step ends, on a busy machine, is no backlog: the
// window's end waits the stage's p99 delay where least loaded, which
// the stall's events set. (With the median, the events the stall held
// counted as a backlog grown in the step.)
func TestKeepUpThroughAStall(t *testing.T) {
	s := stalledPipeline(t, []float64{141, 450}, 3, 300, 4*time.Millisecond, 15*time.Second, 3*time.Second)
	s.JudgeSteps(DefaultTolerance)
	if got, want := keptUp(s), []string{"kept up", "behind"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v\n%s", got, want, windows(s))
	}
}

// windows shows the steps' windows, for a failure message.
func windows(s *Summary) string {
	var b strings.Builder
	for _, st := range s.Steps {
		for _, e := range st.E2E {
			fmt.Fprintf(&b, "step %d %s: %+v %v\n", st.Step, e.Stage, *e.Window, st.Behind)
		}
	}
	return b.String()
}

// A pipeline that delivers nothing falls behind in every step; a drain
// that ended before the stage's delay passed judges the part of the step
// it could see, and a step of which it saw nothing is not judged by the
// stage (its rate still is).
func TestKeepUpWindowEdges(t *testing.T) {
	s := pipeline(t, []float64{100, 100}, 3, 0, time.Millisecond, time.Second)
	s.E2E.Stages[0].SeenSeries = nil
	for i := range s.Steps {
		s.Steps[i].E2E[0] = StepE2E{Stage: "processed"}
	}
	s.SetStepWindows()
	s.JudgeSteps(DefaultTolerance)
	if got := keptUp(s); !slices.Equal(got, []string{"behind", "behind"}) {
		t.Errorf("nothing delivered: got %v, want behind twice", got)
	}
	if b := strings.Join(s.Steps[0].Behind, "; "); !regexp.MustCompile(`^backlog at processed grew from [0-3] to 30[0-3] events: seen 0/s of (99\.\d+|100)/s accepted \(delay 0s\)$`).MatchString(b) {
		t.Errorf("why step 1 fell behind: got %q", b)
	}

	s = pipeline(t, []float64{100, 100}, 3, 0, 3*time.Second, time.Second)
	w := s.Steps[1].E2E[0].Window
	if w.JudgedS < 0.9 || w.JudgedS > 1.1 {
		t.Errorf("3s delay, drain 1s: step 2 judged over %gs, want the 1s the sinks could see", w.JudgedS)
	}
	// Steps of 1s, a delay of 3s, a drain of 1s: the sinks stopped
	// before any event of steps 2 and 3 was due at the stage: they have
	// no verdict, and say why; one whose rate fell short still fell behind.
	s = pipeline(t, []float64{100, 100, 100}, 1, 0, 3*time.Second, time.Second)
	s.Steps[2].Throughput = 50
	s.JudgeSteps(DefaultTolerance)
	if w := s.Steps[0].E2E[0].Window; math.Abs(w.JudgedS-1) > 0.01 || s.Steps[0].KeptUp == nil || !*s.Steps[0].KeptUp {
		t.Errorf("step 1 seen whole: window %+v, kept up %v: want judged over 1s, kept up", *w, s.Steps[0].KeptUp)
	}
	st := s.Steps[1]
	if w := st.E2E[0].Window; w.JudgedS != 0 || st.KeptUp != nil || len(st.NotJudged) != 1 ||
		st.NotJudged[0] != "processed saw 0s of the step's 1s: its events are due there 3s after they are sent, and the drain ended 0s after the run; a --drain longer than that delay judges it" {
		t.Errorf("step 2 unseen: window %+v, kept up %v, not judged %q: want no verdict, and why", *w, st.KeptUp, st.NotJudged)
	}
	if st := s.Steps[2]; st.KeptUp == nil || *st.KeptUp || st.NotJudged != nil {
		t.Errorf("step 3 unseen, its rate short: kept up %v, not judged %q: want fell behind", st.KeptUp, st.NotJudged)
	}
	if v := s.StepsVerdict; v == nil || v.KeptUpThrough != 1 || v.FellBehind != 3 ||
		!strings.HasPrefix(v.Line, "kept up through step 1 (100/s); step 2 (100/s) not judged: processed saw 0s of the step's 1s") ||
		!strings.Contains(v.Line, "; fell behind in step 3 (100/s): achieved 50/s of 100/s (below 90%)") {
		t.Errorf("verdict %+v: want kept up through 1, step 2 not judged, fell behind in 3", v)
	}
}

// The windows come from series the shards' summaries add exactly:
// report merge of a run made by three shards judges its steps as the
// run made by one, window for window.
func TestStepWindowsMerge(t *testing.T) {
	whole := shardedPipeline(t, []float64{150, 450}, 3, 300, time.Millisecond, time.Second, 0, 1)[0]
	whole.JudgeSteps(DefaultTolerance)
	m, err := Merge(shardedPipeline(t, []float64{150, 450}, 3, 300, time.Millisecond, time.Second, 0, 3))
	if err != nil {
		t.Fatal(err)
	}
	m.JudgeSteps(DefaultTolerance)
	for i := range whole.Steps {
		got, want := m.Steps[i].E2E[0].Window, whole.Steps[i].E2E[0].Window
		if got == nil || *got != *want {
			t.Errorf("step %d: merged window %+v, want %+v", i+1, got, *want)
		}
	}
	if got, want := keptUp(m), keptUp(whole); !slices.Equal(got, want) || want[0] != "kept up" || want[1] != "behind" {
		t.Errorf("merged: kept up %v, the whole run %v; want kept up, behind", got, want)
	}
}
