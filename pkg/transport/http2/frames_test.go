package http2

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"golang.org/x/net/http2"
)

// TestAnswerCutInAFrame: an answer whose connection ends inside a frame
// (its header, or the payload of a HEADERS or WINDOW_UPDATE frame, which
// the client reads without the framer) fails as the connection's end, as
// it did when the framer read every frame.
func TestAnswerCutInAFrame(t *testing.T) {
	headers := []byte{0, 0, 3, byte(http2.FrameHeaders), byte(http2.FlagHeadersEndHeaders | http2.FlagHeadersEndStream), 0, 0, 0, 1, 0x88}
	update := []byte{0, 0, 4, byte(http2.FrameWindowUpdate), 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for _, tc := range []struct {
		name string
		sent []byte
	}{
		{"in a frame's header", headers[:5]},
		{"in a HEADERS payload", headers[:9]},
		{"in a WINDOW_UPDATE payload", update[:11]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := loopback.Serve(t, func(c net.Conn) {
				defer c.Close()
				buf := make([]byte, 4096)
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.ReadAtLeast(c, buf, len(http2.ClientPreface)); err != nil {
					return
				}
				fr := http2.NewFramer(c, nil)
				fr.WriteSettings()
				c.Write(tc.sent)
			})
			tr := newH2C(t, conn.Options{Target: "http://" + addr, Timeout: 5 * time.Second}, transport.AnswerOptions{})
			c, p := checkedClient(t, tr, h2peer.PairLine("GET", "/", "", "", nil))
			var res result.Result
			if a := c.Do(&p.Req, p, &res); a != nil || res.Err != result.ErrEOF {
				_, _, _, err := c.Failure()
				t.Errorf("%+v (%v), want it failed as %v", res, err, result.ErrEOF)
			}
		})
	}
}
