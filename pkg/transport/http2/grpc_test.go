package http2

import (
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

func TestGRPCAgainstGRPCGo(t *testing.T) {
	healthAddr, rawAddr, got := h2peer.GRPCServers(t)
	o := conn.Options{Target: "http://" + healthAddr, Timeout: 5 * time.Second,
		HostMap: map[string]string{"raw.example": "http://" + rawAddr}}
	tr := newH2C(t, o, transport.AnswerOptions{})
	raw := func(path string, body []byte) string {
		return h2peer.ReplaceHost(h2peer.GRPCLine(path, body), "raw.example")
	}
	clientBody := append(append(h2peer.GRPCMessage([]byte("a")), h2peer.GRPCMessage([]byte("bb"))...), h2peer.GRPCMessage([]byte("ccc"))...)
	f := fixture.OpenLines(t,
		h2peer.GRPCLine("/grpc.health.v1.Health/Check", h2peer.HealthRequest("svc")),
		h2peer.GRPCLine("/grpc.health.v1.Health/Check", h2peer.HealthRequest("unknown")),
		h2peer.GRPCLine("/grpc.health.v1.Health/NoSuchMethod", h2peer.HealthRequest("svc")),
		raw("/test.Raw/Server", h2peer.GRPCMessage([]byte("m"))),
		raw("/test.Raw/Client", clientBody),
	)
	ex := h2peer.DoAll(t, tr, f)
	want := []struct {
		code uint8
		body []byte
	}{
		{0, h2peer.GRPCMessage([]byte{0x08, 0x01})}, // SERVING
		{5, nil},  // NOT_FOUND
		{12, nil}, // UNIMPLEMENTED, Trailers-Only
		{0, append(append(h2peer.GRPCMessage([]byte("m-0")), h2peer.GRPCMessage([]byte("m-1"))...), h2peer.GRPCMessage([]byte("m-2"))...)},
		{0, h2peer.GRPCMessage([]byte("3"))},
	}
	for i, w := range want {
		r := ex[i].Res
		if r.Err != result.ErrNone || r.Status != 200 || r.Proto != result.ProtoHTTP2 || !r.GRPC || r.GRPCStatus != w.code || r.Upgraded {
			t.Errorf("pair %d: %+v; want HTTP 200 over HTTP/2, gRPC status %d", i, r, w.code)
		}
		if string(ex[i].Body) != string(w.body) {
			t.Errorf("pair %d: answer body %q, want %q", i, ex[i].Body, w.body)
		}
	}
	if got.Load() != 3 {
		t.Errorf("the client-streaming call received %d messages, want 3 as recorded", got.Load())
	}
}
