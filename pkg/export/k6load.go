package export

import (
	"errors"

	"github.com/replay-dev/replay/pkg/schedule"
)

// K6LoadOf is the k6 load of l, a run's load (validated, defaults set:
// as run.Load.Typed gives it), or the reasons a k6 script cannot carry
// it, all at once, so that nothing asked for is dropped without a word.
// given says which load flags were given (by name, without "--"): k6
// carries --speed only with --think recorded (it divides the recorded
// gaps), and neither --late-after nor --precise-pacing.
func K6LoadOf(l schedule.Load, given func(flag string) bool) (K6Load, error) {
	var errs []error
	if l.Model == schedule.Recorded {
		errs = append(errs, errors.New("--pace recorded: k6 has no executor that sends each request at its recorded time; export a --vus or --rate load, or replay it with replay run"))
	} else if given("speed") && !l.Think {
		errs = append(errs, errors.New("--speed: export k6 carries it with --think recorded only (it divides the recorded gaps); leave it out"))
	}
	if given("late-after") {
		errs = append(errs, errors.New("--late-after: k6 counts no late requests (its arrival-rate executors count dropped_iterations); leave it out"))
	}
	if given("precise-pacing") {
		errs = append(errs, errors.New("--precise-pacing: k6 paces its executors itself; leave it out"))
	}
	if l.Iterations > 0 && (l.Model == schedule.Rate || len(l.Stages) > 0) {
		errs = append(errs, errors.New("--iterations: k6's arrival-rate and ramping executors take no iteration limit; give --duration instead"))
	}
	if err := errors.Join(errs...); err != nil {
		return K6Load{}, err
	}
	k := K6Load{VUs: l.VUs, MostVUs: l.MostVUs(), Duration: l.Duration, Iterations: l.Iterations,
		RateStages: l.Model == schedule.Rate, Think: l.Think, Speed: l.Speed}
	if k.RateStages {
		k.Rate = l.Rate
	}
	for _, s := range l.Stages {
		k.Stages = append(k.Stages, K6Stage{Duration: s.Duration, Target: s.Target})
	}
	return k, nil
}
