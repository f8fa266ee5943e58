package sink

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/replay-dev/replay/pkg/e2e"
)

// NATS is a sink that subscribes to a NATS subject (wildcards allowed)
// where the SUT or its workers publish events: a message's ce-id header, or
// its data (the ID, or a JSON event with a top-level "id"), is the ID.
type NATS struct {
	URL     string // nats://host:port
	Subject string
	Stage   string // default: the subject
}

// ProvesLoss reports false: a subscriber to a subject cannot know that an
// event not published yet never will be.
func (*NATS) ProvesLoss() bool { return false }

// ParseNATS reads a sink given on the command line:
//
//	nats://127.0.0.1:4222?subject=orders.settled&stage=settled
func ParseNATS(s string) (*NATS, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "nats" || u.Host == "" {
		return nil, fmt.Errorf("%s: want nats://host:port?subject=NAME", s)
	}
	q := u.Query()
	for k := range q {
		if k != "subject" && k != "stage" {
			return nil, fmt.Errorf("unknown parameter %q: want subject or stage", k)
		}
	}
	ns := &NATS{URL: "nats://" + u.Host, Subject: q.Get("subject"), Stage: q.Get("stage")}
	if ns.Subject == "" {
		return nil, fmt.Errorf("%s: name the subject (?subject=NAME)", s)
	}
	if ns.Stage == "" {
		ns.Stage = ns.Subject
	}
	return ns, nil
}

// NATSConsumer is a NATS sink subscribed: the server knows the
// subscription, so nothing published after Open is missed.
type NATSConsumer struct {
	conn   *nats.Conn
	closed chan struct{} // closed once the connection is
}

// natsDrainTimeout bounds how long Close waits for the messages the
// client received but has not reported yet.
const natsDrainTimeout = 5 * time.Second

// Open connects and subscribes, reporting each message to r from the
// client's goroutine. It fails when the server cannot be reached.
func (ns *NATS) Open(ctx context.Context, r e2e.Receiver) (*NATSConsumer, error) {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(ns.URL, nats.Timeout(timeout), nats.MaxReconnects(-1), nats.Name("replay sink"),
		nats.DrainTimeout(natsDrainTimeout), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ns.URL, err)
	}
	sub, err := nc.Subscribe(ns.Subject, func(m *nats.Msg) {
		id := []byte(m.Header.Get("ce-id"))
		if len(id) == 0 {
			id = payloadID(m.Data)
		}
		r.Seen(id, ns.Stage, time.Now())
	})
	if err == nil {
		err = sub.SetPendingLimits(-1, -1) // a burst must not drop events here
	}
	if err == nil {
		err = nc.FlushTimeout(timeout) // the server has the subscription
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: subscribe %s: %w", ns.URL, ns.Subject, err)
	}
	return &NATSConsumer{conn: nc, closed: closed}, nil
}

// Close unsubscribes, reports the messages the server sent before (those
// received but not yet reported too: the connection drains), and
// disconnects. It waits for them at most about natsDrainTimeout.
func (c *NATSConsumer) Close() error {
	if err := c.conn.Drain(); err != nil {
		c.conn.Close() // reconnecting, or closed already: nothing to drain
		if errors.Is(err, nats.ErrConnectionClosed) {
			return nil
		}
		return fmt.Errorf("nats: drain: %w", err)
	}
	select {
	case <-c.closed:
	case <-time.After(natsDrainTimeout + 6*time.Second): // the drain, then its flush (5s)
		c.conn.Close()
		return errors.New("nats: drain: the connection did not close")
	}
	if err := c.conn.LastError(); errors.Is(err, nats.ErrDrainTimeout) {
		return fmt.Errorf("nats: %w", err)
	}
	return nil
}
