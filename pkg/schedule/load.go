// Package schedule is the one answer to "what does the load ask for at
// time t". It owns the typed load of a run (Load: the model, the VUs, the
// arrival rate, the stages, how long, how many iterations, the file walk)
// and the Schedule a load makes, which says, for every load model, the
// target at an offset from the start (a rate in iterations per second, or
// a number of VUs), which step of --stages an offset falls in, where each
// step ends, when the run stops issuing, and, under an arrival rate, when
// the k-th iteration is due.
//
// The VUs pace and ramp by it, the recorder and the end-to-end tracker
// count by its steps, the run draws its live target and its step table
// from it, and find-max builds a load per hold. It is pure arithmetic on
// offsets, tested without a clock, and imports nothing of the project.
package schedule

import (
	"errors"
	"fmt"
	"time"
)

// Model is the load model (docs/design.md, "Iterations, sessions and load
// models").
type Model int

const (
	// Closed runs iterations back to back on VUs (--vus, or VU --stages).
	Closed Model = iota
	// Rate starts iterations at a rate on a clock (--rate, rate --stages).
	Rate
	// Recorded sends each request at its recorded time / speed (--pace recorded).
	Recorded
)

func (m Model) String() string {
	switch m {
	case Rate:
		return "rate"
	case Recorded:
		return "recorded"
	}
	return "closed"
}

// Walk is how the VUs walk the file (docs/design.md, "file walk").
type Walk int

const (
	// Once runs every iteration once in total, spread over the VUs.
	Once Walk = iota
	// Loop has each VU walk all iterations in file order from a staggered
	// start, round and round, until the duration or the iteration limit.
	Loop
)

func (w Walk) String() string {
	if w == Loop {
		return "loop"
	}
	return "once"
}

// ParseWalk reads "once" or "loop".
func ParseWalk(s string) (Walk, error) {
	switch s {
	case "once":
		return Once, nil
	case "loop":
		return Loop, nil
	}
	return Once, fmt.Errorf("want once or loop, got %q", s)
}

// Load is a run's load, typed: what the load flags mean once read. Check
// it with Validate, then fill its defaults with SetDefaults.
type Load struct {
	Model      Model
	Walk       Walk          // Once or Loop
	VUs        int           // VUs at the start (open models: the pool they start with)
	MaxVUs     int           // open models: the pool may grow to this many VUs
	Duration   time.Duration // stop issuing after this long (0: no limit)
	Iterations int64         // stop after this many iterations in all (0: no limit)
	// Rate is the arrival rate at the start, in iterations (sessions) per
	// second: k6's arrival rate, the unit every model schedules. Written
	// in requests (Unit), it is requests a second until InIterations.
	Rate float64
	// Stages ramp the rate (Rate) or the number of VUs (Closed).
	Stages []Stage
	// Unit is the unit the user wrote the rates in. With Requests, Rate
	// and the stages' rates are requests a second until InIterations
	// divides them by the mean number of requests an iteration of the run
	// holds (PerIteration): a schedule paces iterations, so that each
	// session's requests still go in order.
	Unit Unit
	// PerIteration is the mean number of requests an iteration holds, set
	// by InIterations; 0 before.
	PerIteration float64
	// Speed divides recorded times: Recorded pacing, and Think.
	Speed float64
	// Think keeps a session's recorded gaps between requests (Closed).
	Think bool
}

// DefaultMaxVUs caps the pool of an open model unless --max-vus says.
const DefaultMaxVUs = 1000

// MostVUs is the most VUs a run with l (validated, defaults set) can
// have: VU numbers go from 0 to MostVUs()-1. A closed run starts that
// many: --vus, or the highest stage target.
func (l *Load) MostVUs() int {
	if l.Model != Closed {
		return max(l.VUs, l.MaxVUs)
	}
	n := l.VUs
	for _, st := range l.Stages {
		n = max(n, int(st.Target+0.5))
	}
	return n
}

// Validate checks the load, changing nothing. Its errors name the flag a
// user would fix, all of them at once.
func (l *Load) Validate() error {
	var errs []error
	if l.VUs < 1 {
		errs = append(errs, fmt.Errorf("--vus: want at least 1, got %d", l.VUs))
	}
	if l.Duration < 0 {
		errs = append(errs, fmt.Errorf("--duration: want a positive duration, got %v", l.Duration))
	}
	errs = l.modelErrs(errs)
	if l.Speed < 0 {
		errs = append(errs, fmt.Errorf("--speed: want a positive factor such as 2, got %v", l.Speed))
	}
	if l.Think && l.Model != Closed {
		errs = append(errs, errors.New("--think: recorded think time is for the closed model; recorded pacing keeps the gaps already"))
	}
	if l.Iterations < 0 {
		errs = append(errs, fmt.Errorf("--iterations: want at least 1, got %d", l.Iterations))
	}
	return errors.Join(errs...)
}

// modelErrs appends to errs what the load model rules out: a rate model
// without a rate, stages with recorded pacing, and a --max-vus below --vus
// or with the closed model.
func (l *Load) modelErrs(errs []error) []error {
	switch l.Model {
	case Rate:
		if l.Rate < 0 || (l.Rate == 0 && len(l.Stages) == 0) {
			errs = append(errs, fmt.Errorf("--rate: want a positive rate such as 1000/s (or --stages), got %v/s", l.Rate))
		}
	case Recorded:
		if len(l.Stages) > 0 {
			errs = append(errs, errors.New("--stages: recorded pacing follows the recording; stages ramp a --rate or --vus"))
		}
	}
	if l.Model != Closed && l.MaxVUs != 0 && l.MaxVUs < l.VUs {
		errs = append(errs, fmt.Errorf("--max-vus: want at least --vus (%d), got %d", l.VUs, l.MaxVUs))
	}
	if l.Model == Closed && l.MaxVUs != 0 {
		errs = append(errs, errors.New("--max-vus: only an arrival rate or recorded pacing grows the pool; the closed model runs --vus (or its --stages)"))
	}
	return errs
}

// SetDefaults fills what l leaves zero: the speed, an open model's pool
// cap, and a closed model's duration from its stages. It checks nothing
// (Validate does) and changes nothing set, so a second call is a no-op.
func (l *Load) SetDefaults() {
	if l.Speed == 0 {
		l.Speed = 1
	}
	if l.Model != Closed && l.MaxVUs == 0 {
		l.MaxVUs = max(l.VUs, DefaultMaxVUs)
	}
	if l.Model == Closed && len(l.Stages) > 0 && l.Duration == 0 {
		l.Duration = StagesDuration(l.Stages)
	}
}

// InIterations is l with its rates in iterations a second, ready to be
// scheduled: written in requests (Unit Requests), Rate and the stages'
// rates are divided by perIteration, the mean number of requests an
// iteration of the run holds (after filters and the shard), which it
// keeps in PerIteration, as it does for a load written in iterations. A
// load converted already is returned as it is; perIteration ≤ 0 (a file
// with no iteration) counts as 1.
func (l Load) InIterations(perIteration float64) Load {
	if l.PerIteration > 0 {
		return l
	}
	if !(perIteration > 0) {
		perIteration = 1
	}
	l.PerIteration = perIteration
	if l.Unit != Requests || l.Model != Rate {
		return l
	}
	l.Rate /= perIteration
	stages := make([]Stage, len(l.Stages))
	for i, st := range l.Stages {
		st.Target /= perIteration
		stages[i] = st
	}
	l.Stages = stages
	return l
}

// Share is shard i's share of l, of n shards (k6's execution segments):
// the VUs (at least one), the pool cap, the iteration limit, the rate and
// the stage targets, so that the shares of all shards add up to l. n ≤ 1
// is the whole load.
func (l Load) Share(i, n int) Load {
	if n <= 1 {
		return l
	}
	l.VUs = max(share(l.VUs, i, n), 1)
	if l.MaxVUs > 0 {
		l.MaxVUs = max(share(l.MaxVUs, i, n), l.VUs)
	}
	if l.Iterations > 0 {
		l.Iterations = max(int64(share(int(l.Iterations), i, n)), 1)
	}
	fn := float64(n)
	l.Rate /= fn
	stages := make([]Stage, len(l.Stages))
	for k, st := range l.Stages {
		st.Target /= fn
		if l.Model == Closed {
			st.Target = float64(max(share(int(st.Target*fn+0.5), i, n), 1))
		}
		stages[k] = st
	}
	l.Stages = stages
	return l
}

// ShareExceeds reports whether the shares of n shards (Share) ask for
// more in all than l does: an iteration limit below n (each shard begins
// at least one), or under the closed model fewer VUs, or a stage target
// (0 included), below n (each shard runs at least one VU). An open
// model's VUs are a pool that grows to carry the rate, not the load: the
// rate and its stages divide exactly, so a rate run's shards never ask
// for more.
func (l Load) ShareExceeds(n int) bool {
	if n <= 1 {
		return false
	}
	if l.Iterations > 0 && l.Iterations < int64(n) {
		return true
	}
	if l.Model != Closed {
		return false
	}
	if len(l.Stages) == 0 {
		return l.VUs < n
	}
	for _, st := range l.Stages {
		if int(st.Target+0.5) < n {
			return true
		}
	}
	return false
}

// share is shard i's part of total, of n: the parts of all shards add up
// to total.
func share(total, i, n int) int {
	return (i+1)*total/n - i*total/n
}
