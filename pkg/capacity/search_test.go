package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// fakeSUT is a step function with a knee: rates up to knee pass, above it
// fail, and from generator up the generator cannot offer the rate. Each
// step advances a fake clock by cost; flaky rates fail their second hold.
type fakeSUT struct {
	knee, generator float64
	generatorNarrow bool // the generator's limit shows only while narrowing
	flaky           map[float64]bool
	// shaky rates' first hold falls behind its schedule: a generator
	// limit, or with shakyFail a failure while behind (its lag in its
	// latency); their second hold is as any other.
	shaky     map[float64]bool
	shakyFail bool
	slept     []time.Duration
	held      map[float64]int
	now       time.Time
	cost      time.Duration
	calls     []float64
}

func (f *fakeSUT) step(_ context.Context, phase Phase, rate float64) (Step, error) {
	f.calls = append(f.calls, rate)
	f.now = f.now.Add(f.cost)
	if f.held == nil {
		f.held = map[float64]int{}
	}
	f.held[rate]++
	switch {
	case f.shaky[rate] && f.held[rate] == 1 && f.shakyFail:
		return Step{Verdict: Fail, LatePct: 8, LagP99: 240, Latency: Latency{P99: 900}, Reason: "p99<200ms (measured 900 ms)", Achieved: rate}, nil
	case f.shaky[rate] && f.held[rate] == 1:
		return Step{Verdict: GeneratorLimit, Behind: true, Reason: "the generator lacked CPU"}, nil
	case f.generator > 0 && rate >= f.generator && (!f.generatorNarrow || phase == Narrow):
		return Step{Verdict: GeneratorLimit, Reason: "--max-vus"}, nil
	case rate > f.knee || (f.flaky[rate] && f.held[rate] > 1):
		// Over the knee the generator starts late too (its VUs wait on a
		// slow SUT), the lag a small part of the latency.
		return Step{Verdict: Fail, LatePct: 12, LagP99: 200, Latency: Latency{P99: 900}, Reason: "p99<200ms (measured 900 ms)", Achieved: f.knee}, nil
	}
	return Step{Verdict: Pass, Achieved: rate}, nil
}

func (f *fakeSUT) search(s Search) (*Result, error) {
	if f.cost == 0 {
		f.cost = time.Minute
	}
	f.now = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return f.now }
	s.StepCost = f.cost
	s.Sleep = func(_ context.Context, d time.Duration) error {
		f.slept, f.now = append(f.slept, d), f.now.Add(d)
		return nil
	}
	return s.Run(context.Background(), f.step)
}

// TestSearchBisects: the decider ramps by the factor, bisects to the
// precision, confirms, and reports the best rate held, below the knee and
// within the precision of it, without a clock or a SUT.
func TestSearchBisects(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		knee, start, factor  float64
		precision            float64
		wantSteps, wantRamps int
	}{
		// 100 200 400 800 | 600 500 450 425 438 | 425
		{"knee between ramp steps", 430, 100, 2, 0.05, 10, 4},
		// 100 200 400 800 | 600 500 450 425 413 | 400
		{"knee on a ramp step", 400, 100, 2, 0.05, 10, 4},
		{"finer precision", 430, 100, 2, 0.01, 12, 4},
		{"factor 1.5", 1000, 50, 1.5, 0.05, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSUT{knee: tt.knee}
			res, err := f.search(Search{StartRate: tt.start, StepFactor: tt.factor, Precision: tt.precision})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != Found || !res.Confirmed {
				t.Fatalf("outcome %s confirmed %v, want found", res.Outcome, res.Confirmed)
			}
			if res.Sustainable > tt.knee || res.Sustainable < tt.knee/(1+tt.precision) {
				t.Errorf("sustainable %v, want in [%v, %v]", res.Sustainable, tt.knee/(1+tt.precision), tt.knee)
			}
			if res.FailedAt <= tt.knee || res.FailedAt-res.Sustainable > tt.precision*res.Sustainable {
				t.Errorf("failed at %v, want above the knee %v and within %v of %v", res.FailedAt, tt.knee, tt.precision, res.Sustainable)
			}
			held := map[float64]bool{}
			for _, st := range res.Steps {
				if st.Verdict == Pass {
					held[st.Target] = true
				}
			}
			if !held[res.Sustainable] {
				t.Errorf("reported %v, a rate no hold passed (steps %v)", res.Sustainable, f.calls)
			}
			last := res.Steps[len(res.Steps)-1]
			if last.Phase != Confirm || last.Target != res.Sustainable {
				t.Errorf("last step %+v, want the confirmation of %v", last, res.Sustainable)
			}
			if res.Broke == nil || res.Broke.Phase != Ramp || res.Broke.Verdict != Fail {
				t.Errorf("broke %+v, want the ramp step that failed", res.Broke)
			}
			ramps := 0
			for i, st := range res.Steps {
				if st.N != i+1 {
					t.Errorf("step %d numbered %d", i+1, st.N)
				}
				if st.Phase == Ramp {
					ramps++
				}
			}
			if tt.wantSteps > 0 && (len(res.Steps) != tt.wantSteps || ramps != tt.wantRamps) {
				t.Errorf("%d steps (%d ramp): %v; want %d (%d ramp)", len(res.Steps), ramps, f.calls, tt.wantSteps, tt.wantRamps)
			}
		})
	}
}

// TestSearchEnds covers every other way a search ends.
func TestSearchEnds(t *testing.T) {
	t.Run("start rate fails", func(t *testing.T) {
		f := &fakeSUT{knee: 50}
		res, err := f.search(Search{StartRate: 100, StepFactor: 2, Precision: 0.05})
		if err != nil || res.Outcome != StartFailed || res.Sustainable != 0 || len(res.Steps) != 1 || res.Broke == nil {
			t.Errorf("got %+v, %v; want start_failed after one step", res, err)
		}
	})
	t.Run("max rate", func(t *testing.T) {
		f := &fakeSUT{knee: 1e9}
		res, _ := f.search(Search{StartRate: 100, StepFactor: 2, Precision: 0.05, MaxRate: 700})
		if res.Outcome != AtLeast || res.Sustainable != 700 || res.Stopped != "max rate" || fmt.Sprint(f.calls) != "[100 200 400 700]" {
			t.Errorf("got %s %v %q after %v; want at least 700 after 100 200 400 700", res.Outcome, res.Sustainable, res.Stopped, f.calls)
		}
	})
	t.Run("budget", func(t *testing.T) {
		f := &fakeSUT{knee: 1e9}
		res, _ := f.search(Search{StartRate: 100, StepFactor: 2, Precision: 0.05, Budget: 3*time.Minute + time.Second})
		if res.Outcome != AtLeast || res.Sustainable != 400 || res.Stopped != "budget" || len(res.Steps) != 3 {
			t.Errorf("got %s %v %q after %v; want at least 400 after 3 steps", res.Outcome, res.Sustainable, res.Stopped, f.calls)
		}
	})
	t.Run("generator limit", func(t *testing.T) {
		f := &fakeSUT{knee: 1e9, generator: 400}
		res, _ := f.search(Search{StartRate: 100, StepFactor: 2, Precision: 0.05})
		if res.Outcome != AtLeast || res.Sustainable != 200 || res.GeneratorLimitAt != 400 {
			t.Errorf("got %s %v, generator limit %v; want at least 200, generator limit at 400", res.Outcome, res.Sustainable, res.GeneratorLimitAt)
		}
	})
	t.Run("generator limit while narrowing", func(t *testing.T) {
		f := &fakeSUT{knee: 700, generator: 600, generatorNarrow: true}
		res, _ := f.search(Search{StartRate: 100, StepFactor: 2, Precision: 0.05})
		if res.Outcome != AtLeast || res.Sustainable != 400 || res.GeneratorLimitAt != 600 || res.FailedAt != 800 {
			t.Errorf("got %s %v, generator %v, failed %v (%v); want at least 400, generator limit 600, failed 800", res.Outcome, res.Sustainable, res.GeneratorLimitAt, res.FailedAt, f.calls)
		}
	})
	t.Run("generator limit at the start", func(t *testing.T) {
		f := &fakeSUT{knee: 1e9, generator: 1}
		res, _ := f.search(Search{StartRate: 100, StepFactor: 2, Precision: 0.05})
		if res.Outcome != GeneratorLimited || res.Sustainable != 0 {
			t.Errorf("got %s %v; want generator_limit, nothing sustained", res.Outcome, res.Sustainable)
		}
	})
	t.Run("confirmation fails", func(t *testing.T) {
		// 425 passes once then fails its confirmation: the SUT is unstable
		// at 425, and the search says so with both holds rather than step
		// down to a rate whose pass may be as much a matter of timing.
		f := &fakeSUT{knee: 430, flaky: map[float64]bool{425: true}}
		res, _ := f.search(Search{StartRate: 100, StepFactor: 2, Precision: 0.05})
		u := res.Unsteady
		if res.Outcome != Unstable || res.Sustainable != 0 || u == nil || u.Passed.Target != 425 || u.Failed.Target != 425 || u.Failed.Phase != Confirm {
			t.Errorf("got %s %v, unsteady %+v after %v; want unstable at 425, both holds", res.Outcome, res.Sustainable, u, f.calls)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		s := Search{StartRate: 100, StepFactor: 2, Precision: 0.05}
		res, err := s.Run(ctx, func(context.Context, Phase, float64) (Step, error) {
			if n++; n == 2 {
				cancel()
			}
			return Step{Verdict: Pass}, nil
		})
		if err != nil || res.Outcome != Interrupted || res.Sustainable != 200 {
			t.Errorf("got %+v, %v; want interrupted at least 200", res, err)
		}
	})
	t.Run("step error", func(t *testing.T) {
		boom := errors.New("boom")
		s := Search{StartRate: 100, StepFactor: 2, Precision: 0.05}
		if _, err := s.Run(context.Background(), func(context.Context, Phase, float64) (Step, error) { return Step{}, boom }); !errors.Is(err, boom) {
			t.Errorf("got %v, want the step's error", err)
		}
	})
}

func TestSearchValidate(t *testing.T) {
	for _, tt := range []struct {
		s    Search
		want string
	}{
		{Search{StartRate: 0, StepFactor: 2, Precision: 0.05}, "--start-rate"},
		{Search{StartRate: 10, StepFactor: 1, Precision: 0.05}, "--step-factor"},
		{Search{StartRate: 10, StepFactor: 2, Precision: 0}, "--precision"},
		{Search{StartRate: 10, StepFactor: 2, Precision: 0.05, MaxRate: 5}, "--max-rate"},
		{Search{StartRate: 10, StepFactor: 2, Precision: 0.05, Budget: time.Second, StepCost: time.Minute}, "--budget"},
		{Search{StartRate: math.Inf(1), StepFactor: 2, Precision: 0.05}, "--start-rate"},
	} {
		if err := tt.s.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want an error naming %s", tt.s, err, tt.want)
		}
	}
}

func TestRoundRate(t *testing.T) {
	for in, want := range map[float64]float64{287.5: 288, 412.5: 413, 1.2345: 1.23, 150000: 150000, 123456: 123000} {
		if got := roundRate(in); math.Abs(got-want) > 1e-9 {
			t.Errorf("roundRate(%v) = %v, want %v", in, got, want)
		}
	}
}

// scripted is a step function that passes or fails as pass says, on a
// fake clock that each step moves by its cost.
type scripted struct {
	pass  func(n int, phase Phase, rate float64, at time.Duration) bool
	cost  time.Duration
	now   time.Time
	steps int
}

func (s *scripted) search(t *testing.T, sr Search) *Result {
	t.Helper()
	s.now = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	start := s.now
	sr.Now = func() time.Time { return s.now }
	if sr.StepCost == 0 {
		sr.StepCost = s.cost
	}
	res, err := sr.Run(context.Background(), func(_ context.Context, phase Phase, rate float64) (Step, error) {
		s.steps++
		at := s.now.Sub(start)
		s.now = s.now.Add(s.cost)
		if s.pass(s.steps, phase, rate, at) {
			return Step{Verdict: Pass, Achieved: rate}, nil
		}
		return Step{Verdict: Fail, Reason: "p99<200ms (measured 900 ms)"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// contradiction finds, independently of the search, a hold that failed
// at or below a rate another hold passed.
func contradiction(steps []Step) bool {
	for _, a := range steps {
		for _, b := range steps {
			if a.Verdict == Pass && b.Verdict == Fail && b.Target <= a.Target {
				return true
			}
		}
	}
	return false
}

// Finding 7: a start rate that passed its ramp hold and failed only
// later is not "even the start rate failed" (exit 99): the fall-back rate
// after a failed confirmation became 0 and read as start_failed. The SUT
// is unstable there.
func TestStartRateHeldIsNotStartFailed(t *testing.T) {
	s := &scripted{cost: time.Minute, pass: func(n int, _ Phase, _ float64, _ time.Duration) bool { return n == 1 }}
	res := s.search(t, Search{StartRate: 100, StepFactor: 2, Precision: 0.05})
	if res.Outcome == StartFailed || strings.Contains(res.Headline(), "start rate failed") {
		t.Fatalf("got %s: %s; the start rate passed step 1", res.Outcome, res.Headline())
	}
	if u := res.Unsteady; res.Outcome != Unstable || u == nil || u.Passed.N != 1 || u.Passed.Target != 100 || u.Failed.Target != 100 {
		t.Errorf("got %s, unsteady %+v; want unstable at 100/s: step 1 passed, its confirmation failed", res.Outcome, res.Unsteady)
	}
}

// Finding 8: the failed hold is the one named. The search used to narrow
// below a failed confirmation (182/s), fail again (175/s), and say "at
// least 150/s (held once, but its confirming hold failed)" of a rate
// never confirmed.
func TestUnstableNamesTheHolds(t *testing.T) {
	s := &scripted{cost: time.Minute, pass: func(_ int, phase Phase, rate float64, _ time.Duration) bool {
		return rate <= 182 && phase != Confirm
	}}
	res := s.search(t, Search{StartRate: 100, StepFactor: 2, Precision: 0.05})
	u := res.Unsteady
	if res.Outcome != Unstable || u == nil || u.Passed.Target != 182 || u.Failed.Target != 182 || u.Failed.Phase != Confirm {
		t.Fatalf("got %s, unsteady %+v (%d steps); want unstable at 182/s: the narrow hold passed, the confirmation failed", res.Outcome, u, len(res.Steps))
	}
	h := res.Headline()
	if !strings.Contains(h, "held 182/s") || !strings.Contains(h, "failed 182/s") || strings.Contains(h, "150") || strings.Contains(h, "at least") {
		t.Errorf("headline %q: want both holds of 182/s named, no rate reported", h)
	}
	var b strings.Builder
	WriteText(&b, res)
	if !strings.Contains(b.String(), "Unstable     step ") || !strings.Contains(b.String(), "p99<200ms (measured 900 ms)") {
		t.Errorf("text report lists neither hold:\n%s", b.String())
	}
}

// Finding 9: a SUT that stalls 1 s every 7 s, held 4 s at a time, gave
// 175/s, 325/s or "start failed" by where the stall fell. Whatever the
// phase, a search whose holds contradict each other says unstable, with
// both holds, and reports no rate; one that reports a rate reports one no
// hold failed at or below; "start failed" means the start failed.
func TestFlappingSUT(t *testing.T) {
	outcomes := map[Outcome]int{}
	for phase := time.Duration(0); phase < 7*time.Second; phase += 250 * time.Millisecond {
		s := &scripted{cost: 4 * time.Second, pass: func(_ int, _ Phase, rate float64, at time.Duration) bool {
			// stalls are [phase+7k, phase+7k+1s): a hold [at, at+4s) that
			// overlaps one fails, and so does any rate above 350/s.
			for k := -1; k < 100; k++ {
				stall := phase + time.Duration(k)*7*time.Second
				if at < stall+time.Second && stall < at+4*time.Second {
					return false
				}
			}
			return rate <= 350
		}}
		res := s.search(t, Search{StartRate: 100, StepFactor: 2, Precision: 0.05})
		outcomes[res.Outcome]++
		c := contradiction(res.Steps)
		switch {
		case c != (res.Outcome == Unstable):
			t.Errorf("phase %v: outcome %s, contradicting holds %v: want unstable exactly when holds contradict", phase, res.Outcome, c)
		case res.Outcome == Unstable && (res.Sustainable != 0 || res.Unsteady == nil):
			t.Errorf("phase %v: unstable but reports %v/s, holds %+v", phase, res.Sustainable, res.Unsteady)
		case res.Outcome == StartFailed && res.Steps[0].Verdict != Fail:
			t.Errorf("phase %v: start_failed, but step 1 passed", phase)
		case res.Outcome == Found && failedAtOrBelow(res.Steps, res.Sustainable):
			t.Errorf("phase %v: found %v/s, but a hold failed at or below it", phase, res.Sustainable)
		}
	}
	if outcomes[Unstable] == 0 {
		t.Errorf("outcomes by phase %v: want the flapping seen as unstable at some phase", outcomes)
	}
	t.Logf("outcomes over 28 phases: %v", outcomes)
}

// failedAtOrBelow reports a hold that failed at or below rate.
func failedAtOrBelow(steps []Step, rate float64) bool {
	for _, st := range steps {
		if st.Verdict == Fail && st.Target <= rate {
			return true
		}
	}
	return false
}

// Finding 10: no step starts that could end past the budget, counting its
// worst case; every step here takes its worst case.
func TestBudgetIsAPromise(t *testing.T) {
	for _, budget := range []time.Duration{10 * time.Second, 20 * time.Second, 95 * time.Second} {
		s := &scripted{cost: 9500 * time.Millisecond, pass: func(int, Phase, float64, time.Duration) bool { return true }}
		res := s.search(t, Search{StartRate: 100, StepFactor: 2, Precision: 0.05, Budget: budget})
		if took := time.Duration(res.TookS * float64(time.Second)); took > budget || res.Stopped != "budget" {
			t.Errorf("budget %v: took %v, stopped %q", budget, took, res.Stopped)
		}
		if want := int(budget / s.cost); len(res.Steps) != want {
			t.Errorf("budget %v: %d steps of 9.5s, want %d", budget, len(res.Steps), want)
		}
	}
}

// TestSearchHoldsAgain: a hold that looks like the generator's limit, or
// fails while behind its schedule, is held once more after the pause, and
// that hold decides: a moment's lateness neither ends the search nor
// fails the SUT, and a limit that stays ends it after the second hold.
func TestSearchHoldsAgain(t *testing.T) {
	base := Search{StartRate: 100, StepFactor: 2, Precision: 0.05, Pause: 7 * time.Second}
	for _, tt := range []struct {
		name    string
		f       *fakeSUT
		outcome Outcome
		good    float64
		limit   float64
		held    map[float64]int // holds of these rates
		retried []int           // steps held again
		pauses  int
	}{
		// 100 200 400! 400 800 | 600 500 450 425 | 413... as without the shaky hold
		{"a generator limit once", &fakeSUT{knee: 430, shaky: map[float64]bool{400: true}}, Found, 425, 0, map[float64]int{400: 2}, []int{3}, 1},
		{"a failure behind schedule once", &fakeSUT{knee: 430, shaky: map[float64]bool{400: true}, shakyFail: true}, Found, 425, 0, map[float64]int{400: 2}, []int{3}, 1},
		// the confirmation fell behind once: held again, not unstable
		{"a confirmation behind once", &fakeSUT{knee: 430, shaky: map[float64]bool{425: true}, shakyFail: true}, Found, 425, 0, nil, nil, 1},
		{"a limit that stays", &fakeSUT{knee: 1e9, generator: 400}, AtLeast, 200, 400, map[float64]int{400: 2}, []int{3}, 1},
		{"a limit at the start", &fakeSUT{knee: 1e9, generator: 1}, GeneratorLimited, 0, 100, map[float64]int{100: 2}, []int{1}, 1},
		{"a failure with a few late is not held again", &fakeSUT{knee: 430}, Found, 425, 0, map[float64]int{800: 1, 600: 1}, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.f.search(base)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.outcome || res.Sustainable != tt.good || res.GeneratorLimitAt != tt.limit {
				t.Fatalf("got %s %v, generator limit %v (%v); want %s %v, limit %v", res.Outcome, res.Sustainable, res.GeneratorLimitAt, tt.f.calls, tt.outcome, tt.good, tt.limit)
			}
			for rate, n := range tt.held {
				if tt.f.held[rate] != n {
					t.Errorf("%v/s held %d times, want %d (%v)", rate, tt.f.held[rate], n, tt.f.calls)
				}
			}
			var retried []int
			for i, st := range res.Steps {
				if st.Retried {
					retried = append(retried, st.N)
					if next := res.Steps[i+1]; next.RepeatOf != st.N || next.Target != st.Target || next.Phase != st.Phase {
						t.Errorf("step %d after the retried step %d: repeat of %d at %v/s (%s), want a repeat of it", next.N, st.N, next.RepeatOf, next.Target, next.Phase)
					}
				}
			}
			if tt.retried != nil && fmt.Sprint(retried) != fmt.Sprint(tt.retried) {
				t.Errorf("steps held again %v, want %v", retried, tt.retried)
			}
			if len(tt.f.slept) != tt.pauses || (tt.pauses > 0 && tt.f.slept[0] != base.Pause) {
				t.Errorf("paused %v, want %d pauses of %v", tt.f.slept, tt.pauses, base.Pause)
			}
		})
	}
}

// TestRetry: which holds are held again: the generator's limits, and
// failures behind their schedule where the lag may be what failed them;
// never a hold already held again or repeating one.
func TestRetry(t *testing.T) {
	lagged := Step{Verdict: Fail, LatePct: 8, LagP99: 60, Latency: Latency{P99: 120}}
	for _, tt := range []struct {
		name string
		edit func(*Step)
		want bool
	}{
		{"failed, late, the lag half the latency", func(*Step) {}, true},
		{"failed, late, the lag a quarter", func(s *Step) { s.Latency.P99 = 240 }, true},
		{"failed, late, the latency many times the lag", func(s *Step) { s.Latency.P99 = 900 }, false},
		{"failed, 2% late: enough to make its p99", func(s *Step) { s.LatePct = 2 }, true},
		{"failed, a few late", func(s *Step) { s.LatePct = 0.8 }, false},
		{"failed behind its schedule, the latency many times the lag", func(s *Step) { s.LagP99, s.Latency.P99, s.Behind = 120, 1080, true }, false},
		{"passed, late", func(s *Step) { s.Verdict = Pass }, false},
		{"a generator limit", func(s *Step) { s.Verdict, s.LatePct = GeneratorLimit, 0 }, true},
		{"held again already", func(s *Step) { s.Retried = true }, false},
		{"a repeat", func(s *Step) { s.Verdict, s.RepeatOf = GeneratorLimit, 3 }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := lagged
			tt.edit(&st)
			if got := Retry(st); got != tt.want {
				t.Errorf("got %v, want %v for %+v", got, tt.want, st)
			}
		})
	}
}
