package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	replay "github.com/replay-dev/replay"
)

// keepUpSummary is what the keep-up tests read of a run's summary.
type keepUpSummary struct {
	Started time.Time `json:"started"`
	Steps   []struct {
		Step      int      `json:"step"`
		StartS    float64  `json:"start_s"`
		DurationS float64  `json:"duration_s"`
		KeptUp    *bool    `json:"kept_up"`
		Behind    []string `json:"behind"`
		NotJudged []string `json:"not_judged"`
		E2E       []struct {
			Stage  string `json:"stage"`
			Window *struct {
				DelayMS      float64 `json:"delay_ms"`
				JudgedS      float64 `json:"judged_s"`
				Accepted     int64   `json:"accepted"`
				AcceptedRate float64 `json:"accepted_rate"`
				Seen         int64   `json:"seen"`
				SeenRate     float64 `json:"seen_rate"`
			} `json:"window"`
		} `json:"e2e"`
	} `json:"steps"`
	E2E struct {
		DrainS float64 `json:"drain_s"`
		Stages []struct {
			Pending int64 `json:"pending"`
		} `json:"stages"`
	} `json:"e2e"`
}

// verdicts lists the steps' end-to-end verdicts: "false" where a step
// fell behind at a stage (its backlog grew, or too few events were seen),
// "none" where it has no verdict, else "true". The steps' other check,
// the rate achieved, is the generator's as much as the SUT's on a busy
// machine (a 2-core machine at a load of 19 began 106 of 120 iterations a
// second in its first step): these tests are about the pipeline.
func (s *keepUpSummary) verdicts() []string {
	var out []string
	for _, st := range s.Steps {
		v := "none"
		if st.KeptUp != nil {
			v = "true"
			for _, b := range st.Behind {
				if strings.HasPrefix(b, "backlog at ") || strings.HasPrefix(b, "events seen ") {
					v = "false"
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// keepUpRun runs the demo against its SUT, one event a request (POST
// /events only, the demo's transforms but the order correlation, which
// that traffic has no use for), its worker delivering at most worker
// events a second, each no sooner than delay after it was queued, through
// stages, draining at most drain; it returns the summary, and the HTML
// report when asked for.
func keepUpRun(t *testing.T, stages string, worker int, delay, drain string, withHTML bool) (*keepUpSummary, string) {
	t.Helper()
	dir := t.TempDir()
	transforms := filepath.Join(dir, "transforms.yaml")
	tr, _, _ := bytes.Cut(replay.DemoTransforms, []byte("  - correlate:"))
	if err := os.WriteFile(transforms, tr, 0o644); err != nil {
		t.Fatal(err)
	}
	out, page := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	args := []string{"demo", "--keep", "endpoint=POST /events", "--transforms", transforms, "--stages", stages,
		"--worker-rate", strconv.Itoa(worker), "--worker-delay", delay, "--drain", drain, "--out", out, "-q", "--log-level", "error"}
	if withHTML {
		args = append(args, "--html", page)
	}
	if r := runMain(t, context.Background(), "", args...); r.code != 0 && r.code != 99 {
		t.Fatalf("replay %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	var s keepUpSummary
	if b, err := os.ReadFile(out); err != nil || json.Unmarshal(b, &s) != nil {
		t.Fatalf("the run's summary: %v", err)
	}
	for _, st := range s.Steps {
		if len(st.E2E) != 1 || st.E2E[0].Window == nil {
			t.Fatalf("step %d: e2e %+v, want the processed stage's window", st.Step, st.E2E)
		}
	}
	var text string
	if withHTML {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text = string(b)
	}
	return &s, text
}

// expectByCapacity checks each step's verdict against what the machine
// delivered: a step whose accepted events came at most 0.9 of the
// worker's capacity must have kept up, one at 1.1 of it or more must
// have fallen behind (between the two, either may be right).
func expectByCapacity(t *testing.T, s *keepUpSummary, capacity float64) {
	t.Helper()
	for _, st := range s.Steps {
		w := st.E2E[0].Window
		v := s.verdicts()[st.Step-1]
		switch r := w.AcceptedRate; {
		case r <= 0.9*capacity && v != "true":
			t.Errorf("step %d: %.0f events/s accepted against a worker at %.0f/s: fell behind (%v), want kept up", st.Step, r, capacity, st.Behind)
		case r >= 1.1*capacity && v != "false":
			t.Errorf("step %d: %.0f events/s accepted against a worker at %.0f/s: kept up (seen %.0f/s), want fell behind", st.Step, r, capacity, w.SeenRate)
		}
	}
}

// landed reports whether each step's accepted events came on the side of
// the worker's capacity its offer was meant for (at most 0.9 of it below,
// at least 1.1 above; plan holds each step's offer over the capacity).
// An idle machine lands every step; a busy one may begin fewer
// iterations than came due, leaving a step in between, where either
// verdict is right and expectByCapacity alone judges it.
func landed(t *testing.T, s *keepUpSummary, capacity float64, plan []float64) bool {
	t.Helper()
	ok := len(s.Steps) == len(plan)
	for i, st := range s.Steps {
		r := st.E2E[0].Window.AcceptedRate / capacity
		if i < len(plan) && (plan[i] < 1 && r > 0.9 || plan[i] > 1 && r < 1.1) {
			t.Logf("step %d: %.2f of the worker's capacity accepted, offered %.2f: the machine did not deliver the offer", st.Step, r, plan[i])
			ok = false
		}
	}
	return ok
}

// A worker capped at 300 events a second, sent 150 then 450 a second
// (one event a request): the steps keep up then fall behind whatever the
// drain — 1s cuts the final accounting short (events pending, unless
// the run took as long to end as the backlog to clear), 15s and 30s wait
// until the pipeline is empty, which takes less than either.
// The HTML's seen/s of each step is what its chart drew for the same
// seconds. Kept up, then fell behind, is asked of the runs whose steps
// landed where offered.
func TestKeepUpVerdictIgnoresDrain(t *testing.T) {
	const capacity = 300
	var first []string
	allLanded := true
	for _, drain := range []string{"1s", "15s", "30s"} {
		s, page := keepUpRun(t, "150req/s@3s,450req/s@3s", capacity, "0s", drain, drain == "15s")
		allLanded = landed(t, s, capacity, []float64{0.5, 1.5}) && allLanded
		t.Logf("--drain %s: kept up %v, drained %.2fs, pending %d", drain, s.verdicts(), s.E2E.DrainS, s.E2E.Stages[0].Pending)
		expectByCapacity(t, s, capacity)
		if got := s.verdicts(); first == nil {
			first = got
		} else if !slices.Equal(got, first) {
			t.Errorf("--drain %s: kept up %v, want %v as with --drain 1s", drain, got, first)
		}
		if drain == "30s" && s.E2E.DrainS >= 10 {
			t.Errorf("--drain 30s: drained %.1fs, want the drain to end once the pipeline was empty", s.E2E.DrainS)
		}
		if page != "" {
			checkSeenAgainstChart(t, s, page)
		}
	}
	if want := []string{"true", "false"}; !slices.Equal(first, want) && allLanded {
		t.Errorf("kept up %v, want %v (150/s then 450/s against a worker at 300/s)", first, want)
	}
}

// checkSeenAgainstChart checks that each step's "seen / s at processed"
// in the HTML's steps table is what the sent-and-received chart drew for
// the seconds of the step's window (shifted by the stage's delay): the
// events it stands for (the rate times the window's length) are at least
// those the chart drew in the whole seconds inside the window, and at
// most those of every second the window touches (2% and an event of
// slack: the chart's seconds count an event that reached the recorder
// late in the next second).
func checkSeenAgainstChart(t *testing.T, s *keepUpSummary, page string) {
	t.Helper()
	m := regexp.MustCompile(`<polyline [^>]*data-series="events at processed" data-values="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the HTML has no chart series of the events at processed")
	}
	chart := map[float64]float64{} // the middle of a second on the page's axis → events
	for _, p := range strings.Fields(m[1]) {
		x, y, _ := strings.Cut(p, ":")
		xv, err1 := strconv.ParseFloat(x, 64)
		yv, err2 := strconv.ParseFloat(y, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("chart point %q", p)
		}
		chart[xv] = yv
	}
	table := stepsColumn(t, page, "seen / s at processed")
	if len(table) != len(s.Steps) {
		t.Fatalf("%d rows of seen/s in the steps table, want %d", len(table), len(s.Steps))
	}
	t0 := float64(s.Started.Unix()) // the page's axis starts at the run's first second
	for i, st := range s.Steps {
		w := st.E2E[0].Window
		from := float64(s.Started.UnixNano())/1e9 + st.StartS + w.DelayMS/1000
		to := from + w.JudgedS
		inside, touched := 0.0, 0.0
		for sec := math.Floor(from); sec < to; sec++ {
			y := chart[sec-t0+0.5]
			touched += y
			if sec >= from && sec+1 <= to {
				inside += y
			}
		}
		got := table[i] * w.JudgedS
		t.Logf("step %d: seen/s %.2f over %.2fs (%.0f events); the chart's seconds: %.0f inside, %.0f touched", st.Step, table[i], w.JudgedS, got, inside, touched)
		if got < 0.98*inside-1 || got > 1.02*touched+1 {
			t.Errorf("step %d: the table's seen/s %.2f over %.2fs is %.0f events; the chart drew %.0f in the whole seconds of that window and %.0f in those it touches", st.Step, table[i], w.JudgedS, got, inside, touched)
		}
	}
}

// stepsColumn reads the column named head of the HTML's steps table.
func stepsColumn(t *testing.T, page, head string) []float64 {
	t.Helper()
	tbl := page[strings.Index(page, `<table id="steps">`):]
	tbl = tbl[:strings.Index(tbl, "</table>")]
	cell := regexp.MustCompile(`<t[hd][^>]*>(.*?)</t[hd]>`)
	col := -1
	var out []float64
	for _, row := range strings.Split(tbl, "</tr>") {
		cells := cell.FindAllStringSubmatch(row, -1)
		if col < 0 {
			for i, c := range cells {
				if html.UnescapeString(c[1]) == head {
					col = i
				}
			}
			if col < 0 {
				t.Fatalf("the steps table has no column %q", head)
			}
			continue
		}
		if col < len(cells) {
			v, err := strconv.ParseFloat(cells[col][1], 64)
			if err != nil {
				t.Fatalf("steps table, %s: %q", head, cells[col][1])
			}
			out = append(out, v)
		}
	}
	return out
}

// A worker capped at C: every step below 0.9·C keeps up, the first above
// 1.1·C falls behind, judged by what each step's accepted events were
// (expectByCapacity), and as planned where the steps landed as offered.
func TestKeepUpAroundCapacity(t *testing.T) {
	const capacity = 300
	s, _ := keepUpRun(t, fmt.Sprintf("%dreq/s@2s,%dreq/s@2s,%dreq/s@2s", capacity*2/5, capacity*17/20, capacity*23/20), capacity, "0s", "10s", false)
	t.Logf("kept up %v", s.verdicts())
	expectByCapacity(t, s, capacity)
	if got := s.verdicts(); landed(t, s, capacity, []float64{0.4, 0.85, 1.15}) && (got[0] != "true" || got[1] != "true" || got[2] != "false") {
		t.Errorf("kept up %v, want true, true, false (0.4, 0.85, 1.15 of the capacity)", got)
	}
}

// A pipeline with a constant delay of 3 s and throughput to spare keeps
// up in every step: its latency is for a threshold to judge. A 1s drain
// ends before most of the last step's events are due at the sink: that
// step is judged over what the sinks saw of it when that is at least
// half of it, else it has no verdict and says why; it never falls behind.
func TestKeepUpSlowPipeline(t *testing.T) {
	for _, drain := range []string{"10s", "1s"} {
		s, _ := keepUpRun(t, "100req/s@2s,200req/s@2s", 3000, "3s", drain, false)
		last := s.Steps[len(s.Steps)-1]
		t.Logf("--drain %s: kept up %v, drained %.2fs, last step judged over %.2fs %v", drain, s.verdicts(), s.E2E.DrainS, last.E2E[0].Window.JudgedS, last.NotJudged)
		got := s.verdicts()
		switch {
		case drain == "10s" && !slices.Equal(got, []string{"true", "true"}):
			t.Errorf("--drain %s: kept up %v, want true, true: %v", drain, got, last.Behind)
		case drain == "1s" && (got[0] != "true" || got[1] == "false" || (got[1] == "none") != (len(last.NotJudged) == 1)):
			t.Errorf("--drain %s: kept up %v (%v, not judged %v), want step 1 kept up, step 2 kept up or not judged, saying why", drain, got, last.Behind, last.NotJudged)
		}
		for _, st := range s.Steps {
			if w := st.E2E[0].Window; w.DelayMS < 3000 {
				t.Errorf("--drain %s, step %d: delay %.0fms, want at least the worker's 3s", drain, st.Step, w.DelayMS)
			}
		}
	}
}
