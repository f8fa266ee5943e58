package event

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"
)

// NATSSink subscribes to a NATS subject (wildcards allowed) where the SUT
// or its workers publish events: a message's ce-id header, or its data (the
// ID, or a JSON event with a top-level "id"), is the ID.
type NATSSink struct {
	URL     string // nats://host:port
	Subject string
	Stage   string // default: the subject
}

// ParseNATSSink reads a sink given on the command line:
//
//	nats://127.0.0.1:4222?subject=orders.settled&stage=settled
func ParseNATSSink(s string) (*NATSSink, error) {
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
	ns := &NATSSink{URL: "nats://" + u.Host, Subject: q.Get("subject"), Stage: q.Get("stage")}
	if ns.Subject == "" {
		return nil, fmt.Errorf("%s: name the subject (?subject=NAME)", s)
	}
	if ns.Stage == "" {
		ns.Stage = ns.Subject
	}
	return ns, nil
}

// NATSConsumer is a NATSSink subscribed: the server knows the
// subscription, so nothing published after Open is missed.
type NATSConsumer struct {
	conn *nats.Conn
	sub  *nats.Subscription
}

// Open connects and subscribes, reporting each message to r from the
// client's goroutine. It fails when the server cannot be reached.
func (ns *NATSSink) Open(ctx context.Context, r Receiver) (*NATSConsumer, error) {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	nc, err := nats.Connect(ns.URL, nats.Timeout(timeout), nats.MaxReconnects(-1), nats.Name("replay sink"))
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
	return &NATSConsumer{conn: nc, sub: sub}, nil
}

// Close drains what arrived and disconnects.
func (c *NATSConsumer) Close() error {
	c.sub.Unsubscribe()
	c.conn.Close()
	return nil
}
