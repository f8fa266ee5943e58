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

	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/rs/zerolog"
)

// Config is what a run needs of the VUs: the load (the model, the file
// walk, how long, how many), and how requests are paced and stopped. Where
// requests go and how they are sent is the transport's (Pool.Transport).
// Check it with Validate, then fill the defaults with SetDefaults.
type Config struct {
	schedule.Load
	// OnStart, when set, is called with the start of the run (the origin
	// of due times) before any iteration is due: a recorder that counts by
	// step learns where the steps begin.
	OnStart func(start time.Time)
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
	DefaultGrace     = 10 * time.Second
	DefaultLateAfter = 10 * time.Millisecond
)

// Validate checks the configuration, changing nothing: the load's
// (schedule.Load.Validate), then the pacing's and the stop's. Its errors
// name the flag a user would fix.
func (c *Config) Validate() error {
	errs := []error{c.Load.Validate()}
	if c.LateAfter < 0 {
		errs = append(errs, fmt.Errorf("--late-after: want a duration ≥ 0, got %v", c.LateAfter))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("--grace: want a positive duration or 0, got %v", c.Grace))
	}
	if c.FollowRedirects < 0 {
		errs = append(errs, fmt.Errorf("--follow-redirects: want a number ≥ 0, got %d", c.FollowRedirects))
	}
	if c.PrecisePacing && c.Model == schedule.Closed {
		errs = append(errs, errors.New("--precise-pacing: paces the schedule of a --rate or --pace recorded; the closed model has none"))
	}
	return errors.Join(errs...)
}

// SetDefaults fills what c leaves zero: the load's (schedule.Load.SetDefaults),
// the clock and the late threshold. It checks nothing (Validate does) and
// changes nothing set, so a second call is a no-op.
func (c *Config) SetDefaults() {
	c.Load.SetDefaults()
	if c.Clock == nil {
		c.Clock = WallClock{}
	}
	if c.LateAfter == 0 {
		c.LateAfter = DefaultLateAfter
	}
}
