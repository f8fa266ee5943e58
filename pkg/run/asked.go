package run

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/rs/zerolog"
)

// What is asked is what runs: the flags that say how long a run lasts,
// and the flags a load model uses, are held to one answer before any
// traffic, so that none is cut short by another, or ignored, without a
// word. checkLength holds the flags against each other (parse);
// checkAsked holds the load against the traffic file (Prepare), where
// what the file holds decides whether an iteration limit can be reached.

// checkStagesLength refuses, with --stages, the flags that would end the
// run at another time than the stages: a --duration that differs,
// --iterations and --mode once.
func checkStagesLength(m *schedule.Load) error {
	span := schedule.StagesDuration(m.Stages)
	switch {
	case m.Duration > 0 && m.Duration != span:
		what := "cut them short"
		if m.Duration > span {
			what = "run past them"
		}
		return fmt.Errorf("--duration %v and --stages (%v in all): the stages set the run's length, and --duration would %s; leave --duration out, or make it %v", m.Duration, span, what, span)
	case m.Iterations > 0:
		return fmt.Errorf("--iterations %d and --stages: the stages set the run's length, and an iteration limit would end it at another time; leave --iterations out", m.Iterations)
	case m.Walk == schedule.Once:
		return errors.New("--mode once and --stages: the stages set the run's length, and a walk once through the file would end it at another time; leave --mode out (stages walk the file round and round)")
	}
	return nil
}

// checkLength holds the flags that say how long a run lasts, and those a
// model would ignore, to one answer. --stages set the run's length: an
// explicit --duration that differs is refused, and so are --iterations
// and --mode once (each would end the run at another time); a --duration
// that was not given (the demo's default) yields to the flags that say
// how long: --stages, --iterations, --mode once. --speed divides recorded
// times and --late-after counts requests begun late: a run without
// recorded pacing or think time would ignore the first, and the closed
// model without think time begins every request when its VU is free, so
// never late.
func checkLength(l *Load, m *schedule.Load) error {
	if !l.DurationGiven && (l.Stages != "" || l.Iterations > 0 || l.Mode == "once") {
		m.Duration = 0
	}
	if len(m.Stages) > 0 {
		if err := checkStagesLength(m); err != nil {
			return err
		}
	}
	if m.Speed != 1 && m.Model != schedule.Recorded && !m.Think {
		return fmt.Errorf("--speed %v: divides recorded times, for --pace recorded or --think recorded; this run has neither, so it would change nothing", m.Speed)
	}
	if l.LateAfter != 0 && l.LateAfter != DefaultLateAfter && m.Model == schedule.Closed && !m.Think {
		return fmt.Errorf("--late-after %v: the closed model begins each request as soon as its VU is free, so none is ever late; it counts under --rate, --pace recorded or --think recorded", l.LateAfter)
	}
	return nil
}

// checkRateDue refuses, under a constant --rate for a --duration, an
// iteration limit, or a walk once through the file's n iterations, beyond
// the iterations that come due.
func checkRateDue(l schedule.Load, n int64) error {
	due := int64(math.Ceil(l.Rate * l.Duration.Seconds()))
	if k := l.Iterations; k > due {
		return fmt.Errorf("--iterations %d: at %s for --duration %v only %d iterations come due; lengthen --duration to %v, or leave --iterations out",
			k, rateText(l), l.Duration, due, seconds(float64(k)/l.Rate))
	}
	if l.Walk == schedule.Once && n > due {
		return fmt.Errorf("--mode once: the file's %d iterations take %v at %s, and --duration %v would cut the walk after %d; leave --duration out, or make it %v",
			n, seconds(float64(n)/l.Rate), rateText(l), l.Duration, due, seconds(float64(n)/l.Rate))
	}
	return nil
}

// checkAsked holds the options' load l (whole, as given) against the
// traffic file f, whose iterations the run walks (the shard's, of
// shards): an iteration limit beyond what the walk or the schedule can
// begin is refused (the run would do less than asked); two limits of
// which either may end the run first (the closed model's --iterations, or
// a walk once through the file, and --duration), and shards that run more
// VUs or iterations in all than asked, are said before traffic.
func checkAsked(whole schedule.Load, f *rrpair.File, shards int, log zerolog.Logger) error {
	l := whole.InIterations(f.PerIteration())
	l.SetDefaults()
	if shards > 1 {
		l = l.Share(f.Shard().Index, shards)
		if whole.ShareExceeds(shards) {
			log.Warn().Int("vus", whole.VUs).Int64("iterations", whole.Iterations).Int("shards", shards).
				Msg("fewer VUs (or iterations, or a stage's VUs) than shards: every shard runs at least one, so the shards run more in all than asked")
		}
	}
	n := int64(f.Iterations())
	if l.Walk == schedule.Once && l.Iterations > n {
		return fmt.Errorf("--iterations %d: --mode once begins each of the file's %d iterations once, so the run would end after %d; leave --iterations out, or walk the file round and round (--mode loop)", l.Iterations, n, n)
	}
	if l.Model == schedule.Rate && l.Duration > 0 && len(l.Stages) == 0 {
		if err := checkRateDue(l, n); err != nil {
			return err
		}
	}
	if l.Model == schedule.Closed && l.Duration > 0 && (l.Iterations > 0 || l.Walk == schedule.Once) {
		what := fmt.Sprintf("--iterations %d", l.Iterations)
		if l.Iterations == 0 {
			what = fmt.Sprintf("--mode once (the file's %d iterations)", n)
		}
		log.Warn().Dur("duration", l.Duration).Int64("iterations", l.Iterations).
			Msgf("--duration %v and %s: the run stops at whichever comes first; the report's iterations say which", l.Duration, what)
	}
	return nil
}

// rateText writes l's rate for an error, in iterations: "100/s"; with
// the rate the user wrote beside it when that was in requests.
func rateText(l schedule.Load) string {
	s := schedule.FormatRate(l.Rate, schedule.Iterations)
	if l.Unit == schedule.Requests {
		s += " (" + schedule.FormatRate(l.Rate*l.PerIteration, schedule.Requests) + ")"
	}
	return s
}

// seconds is s seconds as a duration, to the millisecond.
func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}
