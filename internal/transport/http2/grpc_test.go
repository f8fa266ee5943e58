package http2

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/replaytest"
	"github.com/replay-dev/replay/internal/transport/http1"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcMessage frames payload as gRPC does: a zero compressed flag, the
// length in four big-endian bytes, the payload.
func grpcMessage(payload []byte) []byte {
	m := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(m[1:], uint32(len(payload)))
	return append(m, payload...)
}

// healthRequest is a grpc.health.v1.HealthCheckRequest for service,
// encoded by hand (field 1, a string).
func healthRequest(service string) []byte {
	return grpcMessage(append([]byte{0x0a, byte(len(service))}, service...))
}

// rawCodec hands gRPC messages over as bytes, for a service without
// generated code.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// grpcServers starts grpc-go's health service (a server on its own) and a
// raw-codec service test.Raw with a server-streaming call (three answers
// to one message) and a client-streaming one (the number of messages
// received). It returns their addresses and how many messages Client got.
func grpcServers(t *testing.T) (healthAddr, rawAddr string, got *atomic.Int64) {
	t.Helper()
	listen := func(srv *grpc.Server) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		t.Cleanup(srv.Stop)
		return ln.Addr().String()
	}
	hsrv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(hsrv, hs)

	got = &atomic.Int64{}
	rsrv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	rsrv.RegisterService(&grpc.ServiceDesc{ServiceName: "test.Raw", HandlerType: (*any)(nil), Streams: []grpc.StreamDesc{
		{StreamName: "Server", ServerStreams: true, Handler: func(_ any, s grpc.ServerStream) error {
			var in []byte
			if err := s.RecvMsg(&in); err != nil {
				return err
			}
			for i := range 3 {
				if err := s.SendMsg(fmt.Appendf(nil, "%s-%d", in, i)); err != nil {
					return err
				}
			}
			return nil
		}},
		{StreamName: "Client", ClientStreams: true, Handler: func(_ any, s grpc.ServerStream) error {
			for {
				var in []byte
				err := s.RecvMsg(&in)
				if err == io.EOF {
					return s.SendMsg(fmt.Appendf(nil, "%d", got.Load()))
				}
				if err != nil {
					return err
				}
				got.Add(1)
			}
		}},
	}}, struct{}{})
	return listen(hsrv), listen(rsrv), got
}

// exchange is what one Do gave.
type exchange struct {
	res  result.Result
	body []byte
}

// doAll checks f against tr, as a run does, then sends its pairs in order
// on one client and keeps each result and answer body.
func doAll(t *testing.T, tr *Transport, f *rrpair.File) []exchange {
	t.Helper()
	if err := tr.Check(f); err != nil {
		t.Fatal(err)
	}
	clock := func() int64 { return time.Now().UnixNano() }
	c := tr.NewClient(0, clock)
	defer c.Close()
	cur := f.NewCursor()
	var out []exchange
	for i := range f.Len() {
		var p rrpair.Pair
		if err := cur.Decode(i, &p); err != nil {
			t.Fatal(err)
		}
		var res result.Result
		ex := exchange{}
		if a := c.Do(&p.Req, &p, &res); a != nil {
			ex.body = append([]byte(nil), a.RawBody()...)
		}
		ex.res = res
		out = append(out, ex)
	}
	return out
}

// grpcLine is a gRPC call recorded without a version (gRPC is HTTP/2
// anyway: never counted upgraded).
func grpcLine(path string, body []byte) string {
	return pairLine("POST", path, "", `{"content-type":["application/grpc"],"te":["trailers"],"grpc-timeout":["5S"],"user-agent":["grpc-go/1.85.0"]}`, body)
}

func TestGRPCAgainstGRPCGo(t *testing.T) {
	healthAddr, rawAddr, got := grpcServers(t)
	o := Options{HTTP1: http1.Options{Target: "http://" + healthAddr, Timeout: 5 * time.Second,
		HostMap: map[string]string{"raw.example": "http://" + rawAddr}}, H2C: true}
	tr, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(path string, body []byte) string {
		return replaceHost(grpcLine(path, body), "raw.example")
	}
	clientBody := append(append(grpcMessage([]byte("a")), grpcMessage([]byte("bb"))...), grpcMessage([]byte("ccc"))...)
	f := replaytest.OpenLines(t,
		grpcLine("/grpc.health.v1.Health/Check", healthRequest("svc")),
		grpcLine("/grpc.health.v1.Health/Check", healthRequest("unknown")),
		grpcLine("/grpc.health.v1.Health/NoSuchMethod", healthRequest("svc")),
		raw("/test.Raw/Server", grpcMessage([]byte("m"))),
		raw("/test.Raw/Client", clientBody),
	)
	ex := doAll(t, tr, f)
	want := []struct {
		code uint8
		body []byte
	}{
		{0, grpcMessage([]byte{0x08, 0x01})}, // SERVING
		{5, nil},                             // NOT_FOUND
		{12, nil},                            // UNIMPLEMENTED, Trailers-Only
		{0, append(append(grpcMessage([]byte("m-0")), grpcMessage([]byte("m-1"))...), grpcMessage([]byte("m-2"))...)},
		{0, grpcMessage([]byte("3"))},
	}
	for i, w := range want {
		r := ex[i].res
		if r.Err != result.ErrNone || r.Status != 200 || r.Proto != result.ProtoHTTP2 || !r.GRPC || r.GRPCStatus != w.code || r.Upgraded {
			t.Errorf("pair %d: %+v; want HTTP 200 over HTTP/2, gRPC status %d", i, r, w.code)
		}
		if string(ex[i].body) != string(w.body) {
			t.Errorf("pair %d: answer body %q, want %q", i, ex[i].body, w.body)
		}
	}
	if got.Load() != 3 {
		t.Errorf("the client-streaming call received %d messages, want 3 as recorded", got.Load())
	}
}

// replaceHost points a line built by pairLine at another recorded host.
func replaceHost(line, host string) string {
	return strings.Replace(line, `"host":"recorded.example:8080"`, `"host":"`+host+`"`, 1)
}

// TestGRPCOverTLS: with --http2 auto, a file of gRPC calls has the TLS
// handshake offer h2 (grpc-go's handler behind Go's TLS HTTP/2 server).
func TestGRPCOverTLS(t *testing.T) {
	gs := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	srv := httptest.NewUnstartedServer(gs)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tr, err := New(Options{HTTP1: http1.Options{Target: srv.URL, Insecure: true, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	f := replaytest.OpenLines(t,
		grpcLine("/grpc.health.v1.Health/Check", healthRequest("svc")),
		grpcLine("/grpc.health.v1.Health/Check", healthRequest("nope")))
	ex := doAll(t, tr, f)
	for i, want := range []uint8{0, 5} {
		if r := ex[i].res; r.Err != result.ErrNone || r.Proto != result.ProtoHTTP2 || !r.GRPC || r.GRPCStatus != want || !r.Connected != (i == 1) {
			t.Errorf("call %d: %+v; want gRPC status %d over HTTP/2, on one connection", i, r, want)
		}
	}
}
