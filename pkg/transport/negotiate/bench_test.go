package negotiate

import (
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

// benchTransport is the transport a run builds, with --h2c and
// --streams streams, to target, bodies discarded.
func benchTransport(t testing.TB, streams int) func(target string) transport.Transport {
	return func(target string) transport.Transport {
		tr, err := New(Options{Conn: conn.Options{Target: target, Timeout: 5 * time.Second}, Answer: transport.AnswerOptions{DiscardBodies: true}, H2C: true, Streams: streams})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
}

// BenchmarkDo is one HTTP/2 request and its answer on a kept connection,
// through the protocol choice, against a loopback server that allocates
// nothing.
func BenchmarkDo(b *testing.B) { h2peer.BenchDo(b, benchTransport(b, 1)) }

// BenchmarkDoShared is BenchmarkDo on a connection VUs share (--streams):
// the VU's stream read by the connection's reader and handed back.
func BenchmarkDoShared(b *testing.B) { h2peer.BenchDo(b, benchTransport(b, 10)) }

// TestAllocsPerRequest holds the steady state through the protocol
// choice to at most 2 allocations a request (the framer's HEADERS frame
// is one): choosing costs nothing.
func TestAllocsPerRequest(t *testing.T) { h2peer.AllocsPerRequest(t, benchTransport(t, 1), 2) }

// TestSharedAllocsPerRequest holds the steady state on a connection VUs
// share (--streams) to none: its stream, its timer and its signals are the
// VU's, reused.
func TestSharedAllocsPerRequest(t *testing.T) { h2peer.AllocsPerRequest(t, benchTransport(t, 10), 0) }
