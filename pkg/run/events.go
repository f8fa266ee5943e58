package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/e2e/sink"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/rs/zerolog"
)

// This file is the run's one contact with end-to-end tracking: the
// correlation IDs' tracker and the sinks that see the events leave.

// sinkSet are the sinks the options name, checked, and how long to drain.
type sinkSet struct {
	http        string
	redis       []*sink.Redis
	nats        []*sink.NATS
	drain, idle time.Duration
	deltas      bool // --e2e-deltas
}

// any reports whether a sink is given.
func (s *sinkSet) any() bool { return s.http != "" || len(s.redis) > 0 || len(s.nats) > 0 }

// stages are the e2e stages the sinks name before any event arrives (a
// Redis list or stream, a NATS subject, or their stage=), and the stage
// an HTTP sink sees when no path names one ("" without an HTTP sink).
func (s *sinkSet) stages() (named []string, fallback string) {
	for _, r := range s.redis {
		named = append(named, r.Stage)
	}
	for _, n := range s.nats {
		named = append(named, n.Stage)
	}
	if s.http != "" {
		fallback = sink.DefaultStage
	}
	return named, fallback
}

// provesLoss reports whether the sinks can prove loss: there is one, and
// each proves it (an event unseen by one that cannot may still be on its
// way to it; a stage may be fed by several). None does today.
func (s *sinkSet) provesLoss() bool {
	if s == nil || !s.any() {
		return false
	}
	var ps []e2e.Prover
	if s.http != "" {
		ps = append(ps, (*sink.HTTP)(nil))
	}
	for _, r := range s.redis {
		ps = append(ps, r)
	}
	for _, n := range s.nats {
		ps = append(ps, n)
	}
	for _, p := range ps {
		if !p.ProvesLoss() {
			return false
		}
	}
	return true
}

// checkLossThresholds refuses a lost threshold that the run's sinks could
// never measure: without a sink that proves loss, an event not seen is
// pending, never lost.
func checkLossThresholds(ts []report.Threshold, set *sinkSet) error {
	if set.provesLoss() {
		return nil
	}
	for _, t := range ts {
		if t.Metric == "lost" || t.Metric == "lost%" {
			return fmt.Errorf("--threshold %q: no sink of this run can prove an event lost (an event not seen by the end of --drain may still come: it is pending); use a pending threshold such as pending<1%%", t.Text)
		}
	}
	return nil
}

// parseEvents checks the event options and returns the stamping options
// (To unset; nil when requests are not stamped) and the sinks they name.
func parseEvents(o *Events) (*transform.StampOptions, *sinkSet, error) {
	if !o.Stamped() {
		if o.Deltas {
			return nil, nil, errors.New("--e2e-deltas: times events from one sink stage to the next, and this run has no sink (--sink-http, --sink-redis, --sink-nats)")
		}
		return nil, nil, nil
	}
	st := &transform.StampOptions{Only: o.Only}
	switch o.Correlate {
	case "", "header":
		st.Header = o.Header
	case "body":
		st.JSON = o.JSON
	case "both":
		st.Header, st.JSON = o.Header, o.JSON
	default:
		return nil, nil, flagError("--correlate", "header, body or both", o.Correlate)
	}
	if o.Drain < 0 || o.DrainIdle <= 0 {
		return nil, nil, fmt.Errorf("--drain and --drain-idle: want positive durations, got %s and %s", o.Drain, o.DrainIdle)
	}
	s, err := parseSinks(o)
	if err != nil {
		return nil, nil, err
	}
	if s.deltas && !s.any() {
		return nil, nil, errors.New("--e2e-deltas: times events from one sink stage to the next, and this run has no sink (--sink-http, --sink-redis, --sink-nats)")
	}
	return st, s, nil
}

// parseSinks checks the sink options, the part of parseEvents that a
// standalone sink needs too, and returns the sinks they name.
func parseSinks(o *Events) (*sinkSet, error) {
	s := &sinkSet{http: o.HTTP, drain: o.Drain, idle: o.DrainIdle, deltas: o.Deltas}
	for _, u := range o.Redis {
		r, err := sink.ParseRedis(u)
		if err != nil {
			return nil, fmt.Errorf("--sink-redis: %w", err)
		}
		s.redis = append(s.redis, r)
	}
	for _, u := range o.NATS {
		n, err := sink.ParseNATS(u)
		if err != nil {
			return nil, fmt.Errorf("--sink-nats: %w", err)
		}
		s.nats = append(s.nats, n)
	}
	return s, nil
}

// tracking is a run's end-to-end tracking: the tracker the stamps report
// to, and the sinks that report the events seen.
type tracking struct {
	tracker *e2e.Tracker
	set     *sinkSet
	sinks   *sinks // nil until started
	// stamp is the run's stamping options: the options', pointed at the
	// tracker.
	stamp *transform.StampOptions
	wait  time.Duration // how long to wait for events after the run
}

// newTracking makes the tracker of a run whose requests are stamped as
// stamp says, and the run's stamping options, pointed at it; nil when
// they are not stamped. noDrain: the run waits for no event after it.
func newTracking(stamp *transform.StampOptions, set *sinkSet, shard, vus int, noDrain bool) *tracking {
	if stamp == nil {
		return nil
	}
	t := &tracking{tracker: e2e.NewTracker(e2e.NewNonce(), vus, time.Now(), nil), set: set, wait: set.drain}
	if noDrain {
		t.wait = 0
	}
	t.tracker.ProveLoss(set.provesLoss())
	t.tracker.Expect(set.stages())
	if set.deltas {
		t.tracker.Deltas(max(set.drain, time.Second))
	}
	st := *stamp
	st.To, st.Shard = t.tracker, shard
	t.stamp = &st
	return t
}

// start starts the sinks.
func (t *tracking) start(log zerolog.Logger) error {
	s, err := startSinks(t.set, t.tracker, log)
	t.sinks = s
	return err
}

// close stops the sinks, if not done yet.
func (t *tracking) close() {
	if t.sinks != nil {
		t.sinks.close()
	}
}

// drain waits for the events still on their way after the run, and
// returns the tracker's summary.
func (t *tracking) drain(ctx context.Context, log zerolog.Logger) *e2e.Summary {
	if !t.set.any() {
		s := t.tracker.Summary(0) // stamped for sinks elsewhere (replay sink)
		s.SeenUntilMS = 0         // no sink of its own: it counted nothing until then
		return s
	}
	log.Info().Dur("at_most", t.wait).Msg("draining: waiting for the events still on their way")
	waited := t.tracker.Drain(ctx, time.Now(), t.wait, t.set.idle, time.Sleep)
	t.close()
	s := t.tracker.Summary(waited)
	if n := s.Pending(); n > 0 {
		log.Warn().Int64("pending", n).Dur("drain", t.wait).
			Msg("events accepted but not seen by the end of the drain are pending, not lost: a longer --drain may see them")
	}
	return s
}

// sinks are running receivers: each started (listening, subscribed or
// consuming) until closed.
type sinks struct {
	open []io.Closer
	once sync.Once
}

// startSinks starts the receivers, reporting to rec; on an error, those
// started are closed.
func startSinks(set *sinkSet, rec e2e.Receiver, log zerolog.Logger) (*sinks, error) {
	s := &sinks{}
	if set.http != "" {
		h, err := sink.ListenHTTP(set.http, rec, log)
		if err != nil {
			return nil, fmt.Errorf("--sink-http: %w", err)
		}
		s.open = append(s.open, h)
		log.Info().Str("url", h.URL()).Msg("HTTP sink listening: POST events to it (stage from /stage/NAME)")
	}
	for _, n := range set.nats {
		ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := n.Open(ctx, rec)
		done()
		if err != nil {
			s.close()
			return nil, fmt.Errorf("--sink-nats: %w", err)
		}
		s.open = append(s.open, c)
		log.Info().Str("nats", n.URL).Str("subject", n.Subject).Msg("NATS sink subscribed")
	}
	for _, r := range set.redis {
		ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := r.Open(ctx, rec)
		done()
		if err != nil {
			s.close()
			return nil, fmt.Errorf("--sink-redis: %w", err)
		}
		s.open = append(s.open, c)
		log.Info().Str("redis", r.URL).Str("list", r.List).Str("stream", r.Stream).Msg("Redis sink consuming")
	}
	return s, nil
}

// close stops the sinks, all at once (a Redis sink may take a second to
// see it), and waits for them.
func (s *sinks) close() {
	s.once.Do(func() {
		var wg sync.WaitGroup
		for _, c := range s.open {
			wg.Go(func() { c.Close() })
		}
		wg.Wait()
	})
}

// CheckSinks checks the sink options of a standalone sink (HTTP, Redis,
// NATS): at least one sink, each well formed.
func CheckSinks(o Events) error {
	_, err := standaloneSinks(&o)
	return err
}

// standaloneSinks checks the sink options of a standalone sink and
// returns the sinks they name.
func standaloneSinks(o *Events) (*sinkSet, error) {
	if o.HTTP == "" && len(o.Redis)+len(o.NATS) == 0 {
		return nil, errors.New("--sink-http, --sink-redis or --sink-nats: give at least one sink")
	}
	return parseSinks(o)
}

// ReceiveEvents runs the sinks of o on their own, with no run, until ctx
// is done: it times each event from the send time its correlation ID
// carries, and returns a summary with only the end-to-end section, which
// report merging adds to the runs' summaries.
func ReceiveEvents(ctx context.Context, o Events, log zerolog.Logger) (*report.Summary, error) {
	set, err := standaloneSinks(&o)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	tr := e2e.NewSinkTracker(started)
	s, err := startSinks(set, tr, log)
	if err != nil {
		return nil, err
	}
	<-ctx.Done()
	s.close()
	// A standalone sink knows nothing of what was accepted, and cannot
	// prove loss: its section says so (loss_known false).
	return &report.Summary{Version: report.SummaryVersion, Started: started.UTC(), DurationS: time.Since(started).Seconds(),
		Model: "sink", E2E: tr.Summary(0)}, nil
}
