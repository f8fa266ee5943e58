package sink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/replay-dev/replay/pkg/e2e"
)

// The Redis client logs its retries to stderr on its own; a sink reports
// its errors through replay instead (Open's error, the run's log).
func init() { redis.SetLogger(quietLog{}) }

type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

// Redis is a sink that consumes events where the SUT or its workers publish
// them in Redis: a list (BRPOP) or a stream (XREAD from the newest entry,
// or XREADGROUP with a consumer group). A list element or the stream field
// is the ID itself, or a JSON event with a top-level "id" (a CloudEvent).
type Redis struct {
	URL    string // redis://host:port/db
	List   string // consume this list, or
	Stream string // this stream
	Group  string // stream only: read as this consumer group (created if missing)
	Field  string // stream only: the field holding the ID or event (default "id", then any JSON field)
	Stage  string // the stage these events reach (default: the list or stream name)

	opt *redis.Options // URL's, parsed
}

// ProvesLoss reports false: a consumer of a list or stream cannot know
// that an event not pushed yet never will be.
func (*Redis) ProvesLoss() bool { return false }

// ParseRedis reads a sink given on the command line:
//
//	redis://127.0.0.1:6379/0?list=events.done
//	redis://127.0.0.1:6379?stream=events&group=replay&stage=stored
//
// The parameters are URL-encoded, as in any query.
func ParseRedis(s string) (*Redis, error) {
	const want = "want redis://host:port[/db]?list=NAME or ?stream=NAME"
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", want, err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", want, err)
	}
	u.RawQuery, u.ForceQuery = "", false
	rs := &Redis{URL: u.String()}
	if rs.opt, err = redis.ParseURL(rs.URL); err != nil {
		return nil, fmt.Errorf("%s: %w", want, err)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		v := q[k][len(q[k])-1] // the last, if given twice
		switch k {
		case "list":
			rs.List = v
		case "stream":
			rs.Stream = v
		case "group":
			rs.Group = v
		case "field":
			rs.Field = v
		case "stage":
			rs.Stage = v
		default:
			return nil, fmt.Errorf("unknown parameter %q: want list, stream, group, field or stage", k)
		}
	}
	if (rs.List == "") == (rs.Stream == "") {
		return nil, fmt.Errorf("%s: name a list (?list=NAME) or a stream (?stream=NAME)", s)
	}
	if rs.Group != "" && rs.Stream == "" {
		return nil, fmt.Errorf("%s: group is for streams", s)
	}
	if rs.Stage == "" {
		rs.Stage = rs.List + rs.Stream
	}
	return rs, nil
}

// RedisConsumer is a Redis sink connected, ready and consuming: a stream's
// consumer group exists, or the stream's newest entry is known, so no
// event published after Open is missed.
type RedisConsumer struct {
	rs     *Redis
	client *redis.Client
	last   string // XREAD: the entry read up to
	stop   context.CancelFunc
	done   chan struct{}
}

// Open connects and prepares, so that a run can start sending at once,
// then consumes on its own goroutine until Close, reporting each event to
// r. It fails when Redis cannot be reached. ctx bounds the connecting and
// preparing only.
//
// The preparing is done before Open returns, not on the consuming
// goroutine: a stream read from "$" there would miss what is published
// before that goroutine first asks.
func (rs *Redis) Open(ctx context.Context, r e2e.Receiver) (*RedisConsumer, error) {
	opt := rs.opt
	if opt == nil { // not from ParseRedis
		var err error
		if opt, err = redis.ParseURL(rs.URL); err != nil {
			return nil, err
		}
	} else {
		copied := *opt // the client sets its defaults in it
		opt = &copied
	}
	c := &RedisConsumer{rs: rs, client: redis.NewClient(opt), last: "0", done: make(chan struct{})}
	if err := c.prepare(ctx); err != nil {
		c.client.Close()
		return nil, fmt.Errorf("%s: %w", rs.URL, err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	c.stop = stop
	go func() {
		defer close(c.done)
		c.run(runCtx, r)
	}()
	return c, nil
}

// Close stops consuming, waits for the consuming goroutine (at most about
// a second: a blocking read times out then) and disconnects.
func (c *RedisConsumer) Close() error {
	c.stop()
	<-c.done
	return c.client.Close()
}

func (c *RedisConsumer) prepare(ctx context.Context) error {
	rs := c.rs
	switch {
	case rs.Stream != "" && rs.Group != "":
		err := c.client.XGroupCreateMkStream(ctx, rs.Stream, rs.Group, "$").Err()
		if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
			return err
		}
	case rs.Stream != "":
		msgs, err := c.client.XRevRangeN(ctx, rs.Stream, "+", "-", 1).Result()
		if err != nil {
			return err
		}
		if len(msgs) == 1 {
			c.last = msgs[0].ID
		}
	default:
		return c.client.Ping(ctx).Err()
	}
	return nil
}

// run consumes until ctx is done, reporting each event to r. It
// reconnects after errors with a short backoff.
func (c *RedisConsumer) run(ctx context.Context, r e2e.Receiver) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		var err error
		if c.rs.List != "" {
			err = c.list(ctx, r)
		} else {
			err = c.stream(ctx, r)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
	}
}

// list pops until an error: BRPOP with a one-second timeout, so that a
// stop is seen.
func (c *RedisConsumer) list(ctx context.Context, r e2e.Receiver) error {
	rs := c.rs
	for ctx.Err() == nil {
		v, err := c.client.BRPop(ctx, time.Second, rs.List).Result()
		if errors.Is(err, redis.Nil) {
			continue // timed out: nothing to pop
		}
		if err != nil {
			return err
		}
		r.Seen(payloadID([]byte(v[1])), rs.Stage, time.Now())
	}
	return nil
}

// stream reads new entries until an error.
func (c *RedisConsumer) stream(ctx context.Context, r e2e.Receiver) error {
	rs := c.rs
	for ctx.Err() == nil {
		var res []redis.XStream
		var err error
		if rs.Group != "" {
			res, err = c.client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: rs.Group, Consumer: "replay", Streams: []string{rs.Stream, ">"}, Count: 512, Block: time.Second, NoAck: true}).Result()
		} else {
			res, err = c.client.XRead(ctx, &redis.XReadArgs{Streams: []string{rs.Stream, c.last}, Count: 512, Block: time.Second}).Result()
		}
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return err
		}
		at := time.Now()
		for _, st := range res {
			for _, m := range st.Messages {
				c.last = m.ID
				r.Seen(rs.messageID(m.Values), rs.Stage, at)
			}
		}
	}
	return nil
}

func (rs *Redis) messageID(values map[string]any) []byte {
	field := rs.Field
	if field == "" {
		field = "id"
	}
	if v, ok := values[field].(string); ok {
		return payloadID([]byte(v))
	}
	for _, v := range values { // an event as JSON under another name
		if s, ok := v.(string); ok {
			if id := jsonID([]byte(s)); id != nil {
				return id
			}
		}
	}
	return nil
}
