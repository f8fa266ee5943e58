package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/e2e/sink"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// sinkOptions are the flags that follow events out of the SUT: correlation
// IDs on the requests, and the sinks that see the events leave.
type sinkOptions struct {
	correlate string // "", header, body, both
	only      []string
	header    string
	field     string
	http      string
	redis     []string
	nats      []string
	drain     time.Duration
	idle      time.Duration
}

func (o *sinkOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.correlate, "correlate", "", "stamp each request with a correlation ID: header, body or both (header when a sink is given)")
	fs.StringArrayVar(&o.only, "correlate-only", nil, "stamp only the requests of this `ENDPOINT` (as reports name it: 'POST /events'), those that become events (repeatable)")
	fs.StringVar(&o.header, "correlate-header", "ce-id", "the header that carries the ID (CloudEvents binary mode)")
	fs.StringVar(&o.field, "correlate-json", "id", "the top-level JSON body field that carries the ID (a structured CloudEvent)")
	o.addSinkFlags(fs)
	fs.DurationVar(&o.drain, "drain", 30*time.Second, "after the last request, wait at most this long for events still on their way")
	fs.DurationVar(&o.idle, "drain-idle", time.Second, "stop draining once no event arrived for 3 times this long")
}

// addSinkFlags adds the sink flags, shared by run and sink.
func (o *sinkOptions) addSinkFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.http, "sink-http", "", "receive events delivered over HTTP on `ADDR` (CloudEvents, or any POST with the ID); the stage from /stage/NAME")
	fs.StringArrayVar(&o.redis, "sink-redis", nil, "consume events from Redis: `redis://host:port/db?list=NAME` or ?stream=NAME[&group=G][&stage=S] (repeatable)")
	fs.StringArrayVar(&o.nats, "sink-nats", nil, "subscribe to events on NATS: `nats://host:port?subject=NAME`[&stage=S] (repeatable)")
}

// enabled reports whether requests are stamped.
func (o *sinkOptions) enabled() bool {
	return o.correlate != "" || len(o.only) > 0 || o.hasSinks()
}

// hasSinks reports whether a sink is given.
func (o *sinkOptions) hasSinks() bool { return o.http != "" || len(o.redis) > 0 || len(o.nats) > 0 }

// The Redis client logs its retries to stderr; replay reports errors itself.
func init() { redis.SetLogger(discardLog{}) }

type discardLog struct{}

func (discardLog) Printf(context.Context, string, ...any) {}

// parsedSinks are the sinks the flags name, checked.
type parsedSinks struct {
	redis []*sink.Redis
	nats  []*sink.NATS
}

// parse checks the flags of run and returns the stamping options (To
// unset; nil when requests are not stamped) and the sinks they name.
func (o *sinkOptions) parse() (*transform.StampOptions, *parsedSinks, error) {
	if !o.enabled() {
		return nil, nil, nil
	}
	st := &transform.StampOptions{Only: o.only}
	switch o.correlate {
	case "", "header":
		st.Header = o.header
	case "body":
		st.JSON = o.field
	case "both":
		st.Header, st.JSON = o.header, o.field
	default:
		return nil, nil, flagError("--correlate", "header, body or both", o.correlate)
	}
	if o.drain < 0 || o.idle <= 0 {
		return nil, nil, fmt.Errorf("--drain and --drain-idle: want positive durations, got %s and %s", o.drain, o.idle)
	}
	ps, err := o.parseSinks()
	if err != nil {
		return nil, nil, err
	}
	return st, ps, nil
}

// parseSinks checks the sink flags (addSinkFlags), the part of parse that
// replay sink needs too, and returns the sinks they name.
func (o *sinkOptions) parseSinks() (*parsedSinks, error) {
	ps := &parsedSinks{}
	for _, u := range o.redis {
		r, err := sink.ParseRedis(u)
		if err != nil {
			return nil, fmt.Errorf("--sink-redis: %w", err)
		}
		ps.redis = append(ps.redis, r)
	}
	for _, u := range o.nats {
		n, err := sink.ParseNATS(u)
		if err != nil {
			return nil, fmt.Errorf("--sink-nats: %w", err)
		}
		ps.nats = append(ps.nats, n)
	}
	return ps, nil
}

// sinks are the running receivers of a run: each started (listening,
// subscribed or consuming) until closed.
type sinks struct {
	open []io.Closer
	once sync.Once
}

// startSinks starts the receivers, reporting to rec.
func startSinks(o *sinkOptions, ps *parsedSinks, rec e2e.Receiver, log zerolog.Logger) (*sinks, error) {
	s := &sinks{}
	if o.http != "" {
		h, err := sink.ListenHTTP(o.http, rec)
		if err != nil {
			return nil, fmt.Errorf("--sink-http: %w", err)
		}
		s.open = append(s.open, h)
		log.Info().Str("url", h.URL()).Msg("HTTP sink listening: POST events to it (stage from /stage/NAME)")
	}
	for _, n := range ps.nats {
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
	for _, r := range ps.redis {
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

// drainEvents waits for the events still on their way after the run, and
// returns the tracker's summary.
func drainEvents(ctx context.Context, o *sinkOptions, tr *e2e.Tracker, s *sinks, log zerolog.Logger) *e2e.Summary {
	if !o.hasSinks() {
		return tr.Summary(0) // stamped for sinks elsewhere (replay sink)
	}
	log.Info().Dur("at_most", o.drain).Msg("draining: waiting for the events still on their way")
	waited := tr.Drain(ctx, time.Now(), o.drain, o.idle, time.Sleep)
	s.close()
	return tr.Summary(waited)
}
