package http1

import (
	"net"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/vu"
)

// TestNoConnectionReuseFaults: with a new connection a request (on Linux
// the request goes with the connect, and the dial waits for its answer),
// what the SUT does is counted as with a kept connection: refused is a
// connect error on no connection, a reset or a close after accepting is
// reset or eof on a counted connection, a SUT that never answers is a
// timeout after --timeout (not two), and an answer is an answer.
func TestNoConnectionReuseFaults(t *testing.T) {
	refused := func() string { // a port nobody listens on
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr
	}()
	const timeout = 400 * time.Millisecond
	for _, c := range []struct {
		name      string
		act       loopback.Action
		target    string
		kind      result.ErrorKind
		connected bool
	}{
		{"answered", loopback.Action{Status: 200, Body: "ok"}, "", result.ErrNone, true},
		{"refused", loopback.Action{}, refused, result.ErrConnect, false},
		{"reset", loopback.Action{Reset: true}, "", result.ErrReset, true},
		{"hangup", loopback.Action{Hangup: true}, "", result.ErrEOF, true},
		{"silent", loopback.Action{Stall: 10 * timeout, Status: 200}, "", result.ErrTimeout, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := c.target
			if target == "" {
				srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action { return c.act })
				t.Cleanup(srv.Close)
				target = srv.URL()
			}
			sink, _ := runPool(t, openLines(t, manyLines(4)...), vu.Config{Load: schedule.Load{VUs: 2}},
				Options{Conn: conn.Options{NoConnectionReuse: true, Target: target, Timeout: timeout}})
			rs := sink.Results()
			if len(rs) != 4 {
				t.Fatalf("got %d results, want 4", len(rs))
			}
			for _, r := range rs {
				if r.Err != c.kind || r.Connected != c.connected || r.Reconnect {
					t.Errorf("got kind %v, connected %v, reconnect %v; want %v, %v, false", r.Err, r.Connected, r.Reconnect, c.kind, c.connected)
				}
				if c.kind == result.ErrNone && (r.Status != 200 || !r.Written) {
					t.Errorf("answered: status %d, written %v", r.Status, r.Written)
				}
				if c.kind == result.ErrConnect && (r.Written || r.BytesOut != 0) {
					t.Errorf("refused: %d bytes counted as written", r.BytesOut)
				}
				// The deadline of a request carried by its connect is
				// the request's: once --timeout, not twice.
				if took := time.Duration(r.End - r.Sent); c.kind == result.ErrTimeout && took >= 2*timeout {
					t.Errorf("timed out after %v, want one --timeout (%v)", took, timeout)
				}
			}
		})
	}
}
