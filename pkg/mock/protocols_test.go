package mock

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/rrpair"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestHTTPSThroughConnect: an HTTPS_PROXY call is a CONNECT tunnel whose
// TLS the mock terminates with a leaf of its CA for the name asked for.
func TestHTTPSThroughConnect(t *testing.T) {
	ca, caOpt := testCA(t)
	s := start(t, Options{File: file(t, rec{method: "GET", uri: "/v1/balance", host: "api.stripe.test", https: true, status: 200, resBody: `{"available":42}`}), CA: caOpt})
	for _, h2 := range []bool{false, true} {
		st, h, body := do(t, through(s, ca, h2), "GET", "https://api.stripe.test/v1/balance", "")
		if st != 200 || body != `{"available":42}` {
			t.Errorf("h2 %v: %d %v %s", h2, st, h, body)
		}
	}
	if r := s.Report(); r.Hits != 2 || r.Tunnels != 2 {
		t.Errorf("report: %d hits over %d tunnels", r.Hits, r.Tunnels)
	}
	// A client that does not trust the CA fails its handshake: nothing is
	// answered, the failure counted.
	untrusting := through(s, nil, false)
	if _, err := untrusting.Get("https://api.stripe.test/v1/balance"); err == nil {
		t.Error("a client without the CA got an answer")
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Report().TLSErrors == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.Report().TLSErrors != 1 {
		t.Errorf("TLS errors %d, want 1", s.Report().TLSErrors)
	}
}

// TestServeHost: --serve HOST=ADDR answers origin-form requests as the
// recorded HOST, over TLS (a leaf for HOST) or plaintext, HTTP/1.1, h2
// by ALPN, and h2c by prior knowledge.
func TestServeHost(t *testing.T) {
	ca, caOpt := testCA(t)
	path := file(t,
		rec{method: "GET", uri: "/a", host: "a.internal", https: true, status: 200, resBody: "from a"},
		rec{method: "GET", uri: "/a", host: "b.internal", status: 200, resBody: "from b"})
	s := start(t, Options{File: path, CA: caOpt, Serve: []string{"a.internal=127.0.0.1:0", "B.Internal:80=127.0.0.1:0"}})
	addrA, addrB := s.Addrs()[0], s.Addrs()[1]
	tlsTo := &tls.Config{RootCAs: ca.Pool(), ServerName: "a.internal"}
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsTo, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
	var onlyH2, onlyH2C http.Protocols
	onlyH2.SetHTTP2(true)
	onlyH2C.SetUnencryptedHTTP2(true)
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsTo, Protocols: &onlyH2}}
	h2c := &http.Client{Transport: &http.Transport{Protocols: &onlyH2C}}
	for _, tt := range []struct {
		name   string
		c      *http.Client
		url    string
		proto  int
		answer string
	}{
		{"https h1", h1, "https://" + addrA + "/a", 1, "from a"},
		{"https h2", h2, "https://" + addrA + "/a", 2, "from a"},
		{"plain h1", http.DefaultClient, "http://" + addrB + "/a", 1, "from b"},
		{"h2c", h2c, "http://" + addrB + "/a", 2, "from b"},
	} {
		resp, err := tt.c.Get(tt.url)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != tt.answer || resp.ProtoMajor != tt.proto {
			t.Errorf("%s: %s %d %q, want HTTP/%d 200 %q", tt.name, resp.Proto, resp.StatusCode, b, tt.proto, tt.answer)
		}
	}
}

// healthPair is grpc.health.v1.Health/Check for service, answered with
// the recorded status (1 SERVING, 2 NOT_SERVING) and trailers.
func healthPair(host, service string, servingStatus byte) rec {
	return rec{method: "POST", uri: "/grpc.health.v1.Health/Check", host: host, version: "2",
		reqHeaders: []rrpair.Field{{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"}},
		reqBody:    string(h2peer.HealthRequest(service)), status: 200,
		resHeaders: []rrpair.Field{{Name: "content-type", Value: "application/grpc"}},
		trailers:   []rrpair.Field{{Name: "grpc-status", Value: "0"}, {Name: "grpc-message", Value: ""}},
		resBody:    string(h2peer.GRPCMessage([]byte{0x08, servingStatus}))}
}

// TestGRPC: a grpc-go client is answered with the recorded messages and
// trailers, over h2c to a --serve listener and over TLS through a CONNECT
// tunnel; a call nobody recorded is a Trailers-Only UNIMPLEMENTED naming
// the nearest call.
func TestGRPC(t *testing.T) {
	ca, caOpt := testCA(t)
	path := file(t, healthPair("health.internal:50051", "payments", 1), healthPair("health.internal:50051", "ledger", 2))
	s := start(t, Options{File: path, CA: caOpt, Listen: "127.0.0.1:0", Serve: []string{"health.internal:50051=127.0.0.1:0"}})
	check := func(cc *grpc.ClientConn, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			return 0, err
		}
		return r.Status, nil
	}
	h2c, err := grpc.NewClient("passthrough:///"+s.Addrs()[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer h2c.Close()
	tunnelled, err := grpc.NewClient("passthrough:///health.internal:50051",
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), ServerName: "health.internal"})),
		grpc.WithContextDialer(loopback.ConnectDialer(s.Addrs()[0])))
	if err != nil {
		t.Fatal(err)
	}
	defer tunnelled.Close()
	for name, cc := range map[string]*grpc.ClientConn{"h2c": h2c, "CONNECT+TLS": tunnelled} {
		if st, err := check(cc, "payments"); err != nil || st != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("%s payments: %v %v", name, st, err)
		}
		if st, err := check(cc, "ledger"); err != nil || st != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("%s ledger: %v %v", name, st, err)
		}
		_, err := check(cc, "unknown")
		if status.Code(err) != codes.Unimplemented || !strings.Contains(status.Convert(err).Message(), "nearest: line 1") {
			t.Errorf("%s miss: %v, want UNIMPLEMENTED naming the nearest recorded call", name, err)
		}
	}
	if r := s.Report(); r.Hits != 4 || r.Misses != 2 {
		t.Errorf("report: %d hits, %d misses", r.Hits, r.Misses)
	}
}
