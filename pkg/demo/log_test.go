package demo

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/rs/zerolog"
)

// TestFasthttpLogsThroughZerolog: what fasthttp's server says of a
// client that cut its request goes to Options.Log as a JSON warning from
// fasthttp, not raw to stderr through fasthttp's default logger.
func TestFasthttpLogsThroughZerolog(t *testing.T) {
	var log fixture.Buffer
	s, err := StartWith("127.0.0.1:0", Options{Log: zerolog.New(&log)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET /health HTTP/1.1\r\nHo"))
	time.Sleep(100 * time.Millisecond)
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), `"from":"fasthttp"`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := log.String(); !strings.Contains(got, `{"level":"warn","from":"fasthttp","message":"error when serving connection`) {
		t.Errorf("got log %q, want fasthttp's word on the cut request as a warning", got)
	}
}
