package h2peer

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// GRPCMessage frames payload as gRPC does: a zero compressed flag, the
// length in four big-endian bytes, the payload.
func GRPCMessage(payload []byte) []byte {
	m := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(m[1:], uint32(len(payload)))
	return append(m, payload...)
}

// HealthRequest is a grpc.health.v1.HealthCheckRequest for service,
// encoded by hand (field 1, a string).
func HealthRequest(service string) []byte {
	return GRPCMessage(append([]byte{0x0a, byte(len(service))}, service...))
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

// GRPCServers starts grpc-go's health service (a server on its own) and a
// raw-codec service test.Raw with a server-streaming call (three answers
// to one message) and a client-streaming one (the number of messages
// received). It returns their addresses and how many messages Client got.
func GRPCServers(t *testing.T) (healthAddr, rawAddr string, got *atomic.Int64) {
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

// GRPCLine is a gRPC call recorded without a version (gRPC is HTTP/2
// anyway: never counted upgraded).
func GRPCLine(path string, body []byte) string {
	return PairLine("POST", path, "", `{"content-type":["application/grpc"],"te":["trailers"],"grpc-timeout":["5S"],"user-agent":["grpc-go/1.85.0"]}`, body)
}
