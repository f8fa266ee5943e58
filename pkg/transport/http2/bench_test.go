package http2

import (
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

// benchTransport is the h2c transport to target, bodies discarded.
func benchTransport(t testing.TB) func(target string) transport.Transport {
	return func(target string) transport.Transport {
		return newH2C(t, conn.Options{Target: target, Timeout: 5 * time.Second}, transport.AnswerOptions{DiscardBodies: true})
	}
}

// BenchmarkDo is one HTTP/2 request and its answer on a kept connection,
// against a loopback server that allocates nothing.
func BenchmarkDo(b *testing.B) { h2peer.BenchDo(b, benchTransport(b)) }

// TestAllocsPerRequest holds the steady state to no allocation a request
// (the answer's HEADERS and the SUT's WINDOW_UPDATE are read without the
// framer's frames: frames.go).
func TestAllocsPerRequest(t *testing.T) { h2peer.AllocsPerRequest(t, benchTransport(t), 0) }
