// Package vu owns the virtual users: scheduling iterations over a traffic
// file, pacing them, walking each iteration's requests in order, and
// stopping. Each VU sends through its own client of a transport (the
// transport.Transport of the Pool: connections, the wire, answers), and
// calls the interfaces it defines or shares — a Rewriter for outgoing
// requests, result.Observers for live answers and a result.Sink for
// results — so that it imports neither a protocol, nor the transforms,
// nor the report.
package vu

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// Walk is how the VUs walk the file (DESIGN.md, "file walk").
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

// Model is the load model (DESIGN.md, "Iterations, sessions and load
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

// Config is what a run needs of the VUs: the load model, the file walk,
// how long, and the stop. Where requests go and how they are sent is the
// transport's (Pool.Transport). Check it with Validate, then fill the
// defaults with SetDefaults.
type Config struct {
	Model      Model
	VUs        int           // VUs at the start (open models: the pool they start with)
	MaxVUs     int           // open models: the pool may grow to this many VUs
	Walk       Walk          // Once or Loop
	Duration   time.Duration // stop issuing after this long (0: no limit)
	Iterations int64         // stop after this many iterations in all (0: no limit)
	Rate       float64       // Rate: iterations per second at the start
	// Stages ramp the rate (Rate) or the number of VUs (Closed).
	Stages []Stage
	// OnStart, when set, is called with the start of the run (the origin
	// of due times) before any iteration is due: a recorder that counts by
	// step learns where the steps begin.
	OnStart func(start time.Time)
	// Speed divides recorded times: Recorded pacing, and Think.
	Speed float64
	// Think keeps a session's recorded gaps between requests (Closed).
	Think bool
	// LateAfter: a request begun more than this after it was due is late.
	LateAfter time.Duration
	// Grace is how long in-flight requests may finish after the stop.
	Grace time.Duration
	// FollowRedirects follows up to this many redirects of a request; each
	// hop is a request of its own, marked Redirect. 0: a replay sends what
	// was recorded and counts a 3xx as an answer.
	FollowRedirects int

	// PrecisePacing has the scheduler of an open model spin, yielding,
	// through the last PreciseSpin before each due time, rather than
	// trusting a timer (which rounds sub-millisecond waits up to about a
	// millisecond): a smaller lag for up to one CPU core. Only with the
	// wall clock.
	PrecisePacing bool

	// Clock paces and stamps the run (WallClock when nil).
	Clock Clock
	// Log receives the run's own messages (not one per request).
	Log zerolog.Logger
}

// Defaults used by SetDefaults.
const (
	DefaultGrace = 10 * time.Second
	// DefaultMaxVUs caps the pool of an open model unless --max-vus says.
	DefaultMaxVUs    = 1000
	DefaultLateAfter = 10 * time.Millisecond
)

// MostVUs is the most VUs a run with c (validated, defaults set) can have:
// VU numbers, as a Rewriter or Observer sees them, go from 0 to
// MostVUs()-1. A closed run starts that many: --vus, or the highest stage
// target.
func (c *Config) MostVUs() int {
	if c.Model != Closed {
		return max(c.VUs, c.MaxVUs)
	}
	n := c.VUs
	for _, st := range c.Stages {
		n = max(n, int(st.Target+0.5))
	}
	return n
}

// Validate checks the configuration, changing nothing. Its errors name the
// flag a user would fix.
func (c *Config) Validate() error {
	var errs []error
	if c.VUs < 1 {
		errs = append(errs, fmt.Errorf("--vus: want at least 1, got %d", c.VUs))
	}
	if c.Duration < 0 {
		errs = append(errs, fmt.Errorf("--duration: want a positive duration, got %v", c.Duration))
	}
	errs = append(errs, c.validateModel()...)
	if c.LateAfter < 0 {
		errs = append(errs, fmt.Errorf("--late-after: want a duration ≥ 0, got %v", c.LateAfter))
	}
	if c.Iterations < 0 {
		errs = append(errs, fmt.Errorf("--iterations: want at least 1, got %d", c.Iterations))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("--grace: want a positive duration or 0, got %v", c.Grace))
	}
	if c.FollowRedirects < 0 {
		errs = append(errs, fmt.Errorf("--follow-redirects: want a number ≥ 0, got %d", c.FollowRedirects))
	}
	return errors.Join(errs...)
}

// validateModel checks the load model's settings.
func (c *Config) validateModel() []error {
	var errs []error
	switch c.Model {
	case Rate:
		if c.Rate < 0 || (c.Rate == 0 && len(c.Stages) == 0) {
			errs = append(errs, fmt.Errorf("--rate: want a positive rate such as 1000/s (or --stages), got %v/s", c.Rate))
		}
	case Recorded:
		if len(c.Stages) > 0 {
			errs = append(errs, errors.New("--stages: recorded pacing follows the recording; stages ramp a --rate or --vus"))
		}
	}
	if c.Model != Closed && c.MaxVUs != 0 && c.MaxVUs < c.VUs {
		errs = append(errs, fmt.Errorf("--max-vus: want at least --vus (%d), got %d", c.VUs, c.MaxVUs))
	}
	if c.Model == Closed && c.MaxVUs != 0 {
		errs = append(errs, errors.New("--max-vus: only an arrival rate or recorded pacing grows the pool; the closed model runs --vus (or its --stages)"))
	}
	if c.Speed < 0 {
		errs = append(errs, fmt.Errorf("--speed: want a positive factor such as 2, got %v", c.Speed))
	}
	if c.PrecisePacing && c.Model == Closed {
		errs = append(errs, errors.New("--precise-pacing: paces the schedule of a --rate or --pace recorded; the closed model has none"))
	}
	if c.Think && c.Model != Closed {
		errs = append(errs, errors.New("--think: recorded think time is for the closed model; recorded pacing keeps the gaps already"))
	}
	return errs
}

// SetDefaults fills what c leaves zero: the clock, the speed, the late
// threshold, an open model's pool cap, and a closed model's duration from
// its stages. It checks nothing (Validate does) and changes nothing set,
// so a second call is a no-op.
func (c *Config) SetDefaults() {
	if c.Clock == nil {
		c.Clock = WallClock{}
	}
	if c.Speed == 0 {
		c.Speed = 1
	}
	if c.LateAfter == 0 {
		c.LateAfter = DefaultLateAfter
	}
	if c.Model != Closed && c.MaxVUs == 0 {
		c.MaxVUs = max(c.VUs, DefaultMaxVUs)
	}
	if c.Model == Closed && len(c.Stages) > 0 && c.Duration == 0 {
		c.Duration = StagesDuration(c.Stages)
	}
}
