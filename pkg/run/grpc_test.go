package run

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthCheck is a recorded grpc.health.v1.Health/Check call for service,
// one length-prefixed message, its recorded answer OK in the trailers.
func healthCheck(service, session string) string {
	msg := append([]byte{0, 0, 0, 0, byte(2 + len(service)), 0x0a, byte(len(service))}, service...)
	return `{"ts":"2026-11-01T10:00:00.100Z","tags":{"session":"` + session + `"},"http":{"req":{"method":"POST","uri":"/grpc.health.v1.Health/Check","version":"2","host":"svc:9090",` +
		`"headers":{"content-type":["application/grpc"],"te":["trailers"],"authorization":["Bearer x"]},"bodyBase64":"` + base64.StdEncoding.EncodeToString(msg) + `"},` +
		`"res":{"statusCode":200,"headers":{"content-type":["application/grpc"]},"trailers":{"grpc-status":["0"]}}}}`
}

// TestMixedJSONAndGRPCOverH2C replays a file that mixes JSON calls and
// gRPC calls (grpc-go's health service: one known service, one unknown)
// with timestamps: auto, over cleartext HTTP/2 to one server that serves
// both: every request reaches it once over HTTP/2 on one connection per
// VU; the unknown service's NOT_FOUND is counted failed by its code
// despite its HTTP 200; the body transform leaves the gRPC bodies alone
// and counts them; --compare status compares grpc-status too.
func TestMixedJSONAndGRPCOverH2C(t *testing.T) {
	gs := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("orders", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	var jsonSeen, grpcSeen, h1 atomic.Int64
	var bodies atomic.Value
	bodies.Store("")
	addr, conns := serveH2C(t, func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			h1.Add(1)
		}
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			grpcSeen.Add(1)
			gs.ServeHTTP(w, r)
			return
		}
		jsonSeen.Add(1)
		var b [256]byte
		n, _ := r.Body.Read(b[:])
		bodies.Store(string(b[:n]))
		w.WriteHeader(http.StatusAccepted)
	})
	t.Cleanup(gs.Stop)

	lines := []string{
		`{"ts":"2026-11-01T10:00:00Z","tags":{"session":"a"},"http":{"req":{"method":"POST","uri":"/events","host":"api","headers":{"Content-Type":["application/json"]},"body":"{\"at\":\"2026-11-01T10:00:00Z\"}"},"res":{"statusCode":202}}}`,
		healthCheck("orders", "a"),
		`{"ts":"2026-11-01T10:00:00Z","tags":{"session":"b"},"http":{"req":{"method":"POST","uri":"/events","host":"api","headers":{"Content-Type":["application/json"]},"body":"{\"at\":\"2026-11-01T10:00:00Z\"}"},"res":{"statusCode":202}}}`,
		healthCheck("payments", "b"), // unknown to the server: NOT_FOUND
	}
	file := filepath.Join(t.TempDir(), "mixed.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := options(file, "http://"+addr)
	o.HTTP.H2C = true
	o.Transforms.ShiftTime = true
	o.Compare.Mode = "status"
	s, err := execute(t, context.Background(), o, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if jsonSeen.Load() != 2 || grpcSeen.Load() != 2 || h1.Load() != 0 || conns.Load() != 2 {
		t.Errorf("the server saw %d JSON and %d gRPC calls (%d not over HTTP/2) on %d connections; want 2, 2, 0 on 2",
			jsonSeen.Load(), grpcSeen.Load(), h1.Load(), conns.Load())
	}
	if b := bodies.Load().(string); strings.Contains(b, "2026-11-01T10:00:00Z") || !strings.HasPrefix(b, `{"at":"`) {
		t.Errorf("a JSON body went out as %q, want its timestamp shifted", b)
	}
	if s.Requests != 4 || s.Succeeded != 3 || s.Failed != 1 || s.Status["200"] != 2 || s.Status["202"] != 2 {
		t.Errorf("requests %d, succeeded %d, failed %d, status %v; want 4, 3, 1 (the NOT_FOUND), 200:2 202:2",
			s.Requests, s.Succeeded, s.Failed, s.Status)
	}
	if s.GRPCStatus["OK"] != 1 || s.GRPCStatus["NOT_FOUND"] != 1 || len(s.GRPCStatus) != 2 {
		t.Errorf("grpc_status %v, want OK:1 NOT_FOUND:1", s.GRPCStatus)
	}
	if s.ConnectionsByProtocol["h2"] != 2 || len(s.ConnectionsByProtocol) != 1 {
		t.Errorf("connections_by_protocol %v, want h2:2", s.ConnectionsByProtocol)
	}
	var stamped bool
	for _, tr := range s.Transforms {
		if tr.Name == "timestamps" {
			stamped = true
			if tr.Changed != 2 || tr.SkippedGRPC != 2 {
				t.Errorf("timestamps: changed %d, skipped (gRPC) %d; want 2 and 2", tr.Changed, tr.SkippedGRPC)
			}
		}
	}
	if !stamped {
		t.Errorf("no timestamps transform in %+v", s.Transforms)
	}
	if c := s.Compare; c == nil || c.Compared != 4 || c.GRPCCompared != 2 || c.Matched != 3 {
		t.Errorf("compare %+v, want 4 compared (2 gRPC), 3 matched (the NOT_FOUND is not the recorded OK)", c)
	}
}
