package negotiate

import (
	"net/http/httptest"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
)

// healthOverTLS serves grpc-go's health service (service "svc" serving)
// behind Go's TLS HTTP/2 server until the test ends.
func healthOverTLS(t *testing.T) *httptest.Server {
	gs := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	srv := httptest.NewUnstartedServer(gs)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestGRPCOverTLS: with --http2 auto, a file of gRPC calls has the TLS
// handshake offer h2 (grpc-go's handler behind Go's TLS HTTP/2 server).
func TestGRPCOverTLS(t *testing.T) {
	srv := healthOverTLS(t)
	tr, err := New(Options{Conn: conn.Options{Target: srv.URL, Insecure: true, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture.OpenLines(t,
		h2peer.GRPCLine("/grpc.health.v1.Health/Check", h2peer.HealthRequest("svc")),
		h2peer.GRPCLine("/grpc.health.v1.Health/Check", h2peer.HealthRequest("nope")))
	ex := h2peer.DoAll(t, tr, f)
	for i, want := range []uint8{0, 5} {
		if r := ex[i].Res; r.Err != result.ErrNone || r.Proto != result.ProtoHTTP2 || !r.GRPC || r.GRPCStatus != want || !r.Connected != (i == 1) {
			t.Errorf("call %d: %+v; want gRPC status %d over HTTP/2, on one connection", i, r, want)
		}
	}
}

// TestGRPCStreamsShared: gRPC calls on a connection VUs share (--streams)
// read their status from their own stream's trailers.
func TestGRPCStreamsShared(t *testing.T) {
	srv := healthOverTLS(t)
	tr, err := New(Options{Conn: conn.Options{Target: srv.URL, Insecure: true, Timeout: 5 * time.Second}, Streams: 8})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for range 20 {
		lines = append(lines, h2peer.GRPCLine("/grpc.health.v1.Health/Check", h2peer.HealthRequest("svc")),
			h2peer.GRPCLine("/grpc.health.v1.Health/Check", h2peer.HealthRequest("nope")))
	}
	sink, err := h2peer.RunPool(t, tr, 8, lines...)
	if err != nil {
		t.Fatal(err)
	}
	status := map[uint8]int{}
	for _, r := range sink.Results() {
		if r.Err != result.ErrNone || !r.GRPC || r.Proto != result.ProtoHTTP2 {
			t.Errorf("call: %+v; want a gRPC answer over HTTP/2", r)
		}
		status[r.GRPCStatus]++
	}
	if status[0] != 20 || status[5] != 20 {
		t.Errorf("gRPC statuses %v, want 20 OK (0) and 20 NOT_FOUND (5)", status)
	}
}
