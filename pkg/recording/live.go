package recording

import (
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/report"
)

// Live is a run under way at one moment: the one shape of the live
// counters, which every live reader reads — the progress line and its
// JSON log lines, /metrics, the threshold watcher of --abort-on-fail. The
// recorder fills its part (Recorder.Live); the run fills the rest, in one
// place, and hands readers a LiveView.
type Live struct {
	// The recorder's part: the results folded so far.
	Requests, Succeeded, Failed int64
	BytesIn, BytesOut           int64
	Errors                      map[string]int64 // by kind
	StatusClass                 [6]int64         // [1] = 1xx ... [5] = 5xx; [0] other
	Latency                     report.Latency   // from due time, since the start
	// LastInterval is the newest closed second (intervals close about two
	// seconds after they end); nil before the first.
	LastInterval *report.Interval
	// WebSocket counts the WebSocket sessions folded so far; nil before
	// the first.
	WebSocket *LiveWS

	// The engine's part.
	VUs      int   // VUs started
	InFlight int64 // requests in flight
	// Dropped counts the iterations an open model could not start (every
	// VU busy); Late the requests begun more than --late-after past due.
	Dropped, Late int64
	// HasTarget says the run asks for a rate (an arrival-rate run, or a
	// capacity search's hold): Step is then the step under way (the
	// --stages item or the search's step, from 1; 0 without steps) and
	// Target the rate asked for now, iterations a second.
	HasTarget bool
	Step      int
	Target    float64
	// PerIteration is the mean number of requests an iteration holds:
	// Target × PerIteration is the target in requests a second (0: not
	// known).
	PerIteration float64
	// Events is what each end-to-end stage has seen so far; nil when
	// requests are not stamped.
	Events []e2e.StageCount
}

// LiveWS is the WebSocket sessions of a run under way: the sessions
// ended, those failed by kind (result.WSFail's names), the data messages
// each way.
type LiveWS struct {
	Sessions         int64
	Failed           map[string]int64
	MessagesSent     int64
	MessagesReceived int64
}

// TargetRequests is the rate asked for now in requests a second, and
// whether it is known (a target, and the requests an iteration holds).
func (l Live) TargetRequests() (float64, bool) {
	if !l.HasTarget || l.PerIteration <= 0 {
		return 0, false
	}
	return l.Target * l.PerIteration, true
}

// LiveView is how a reader sees a run under way: Now, its counters at
// this moment, and what does not change while it goes. Now and Buckets
// are safe to call from any goroutine while the run goes, and after.
type LiveView struct {
	Now func() Live
	// Buckets returns the latency so far as a histogram's cumulative
	// buckets at bounds (seconds); nil when the source keeps none.
	Buckets func(bounds []float64) Buckets
	// Planned is how long the run issues: its duration, or its stages';
	// 0 when the file decides.
	Planned time.Duration
	// Model is the load model: "closed", "rate" or "recorded".
	Model string
}

// Open says the run is an open model (rate, recorded): iterations come
// due whether or not a VU is free, so some can be dropped.
func (v LiveView) Open() bool { return v.Model == "rate" || v.Model == "recorded" }
