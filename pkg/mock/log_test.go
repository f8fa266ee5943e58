package mock

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/rs/zerolog"
)

// TestFasthttpLogsThroughZerolog: what fasthttp's server says of a
// client that cut its request goes to the mock's log (at debug level, a
// JSON line from fasthttp), never raw to stderr; it was discarded.
func TestFasthttpLogsThroughZerolog(t *testing.T) {
	var log fixture.Buffer
	s := start(t, Options{File: file(t, rec{method: "GET", uri: "/ok", host: "h", status: 200, resBody: "ok"}), Log: zerolog.New(&log).Level(zerolog.DebugLevel)})
	c, err := net.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET /ok HTTP/1.1\r\nHo"))
	time.Sleep(100 * time.Millisecond)
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), `"from":"fasthttp"`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := log.String(); !strings.Contains(got, `{"level":"debug","from":"fasthttp","message":"error when serving connection`) {
		t.Errorf("got log %q, want fasthttp's word on the cut request as a debug line", got)
	}
}
