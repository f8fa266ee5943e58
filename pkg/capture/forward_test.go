package capture

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/reach"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/tlsca"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// forwardProxy starts a forward proxy with a fresh CA (written in a
// directory, --ca-out) that trusts the upstream certificates in upstreamCA
// (a PEM file; "" for none).
func forwardProxy(t *testing.T, out io.Writer, upstreamCA string, mod func(*ForwardOptions)) (*Proxy, *tlsca.CA) {
	t.Helper()
	opt := ForwardOptions{CA: tlsca.Options{OutDir: t.TempDir()}, Reach: reach.Options{CA: upstreamCA, Timeout: 5 * time.Second}}
	opt.AllowUpstream = []string{"127.0.0.0/8"} // the test's upstreams are on loopback
	if mod != nil {
		mod(&opt)
	}
	p, err := ListenForward("127.0.0.1:0", out, opt)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := opt.CA.Open() // the CA the proxy wrote, read again
	if err != nil {
		t.Fatal(err)
	}
	return p, ca
}

// certFile writes the certificate of an httptest TLS server as a PEM file.
func certFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "upstream.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// proxied is an HTTP client that goes through the proxy at addr and
// trusts ca, speaking HTTP/2 over TLS when h2.
func proxied(addr string, ca *tlsca.CA, h2 bool) *http.Client {
	u, _ := url.Parse("http://" + addr)
	tr := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func closeProxy(t *testing.T, p *Proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// pairs opens a recording with its OUT pairs.
func pairs(t *testing.T, b []byte) []rrpair.Pair {
	t.Helper()
	out, _ := rrpair.ParseRule("direction=OUT")
	f, err := rrpair.OpenReader(bytes.NewReader(b), "rec.jsonl", rrpair.Options{RequireHost: true, Filter: &rrpair.Filter{Keep: []rrpair.Rule{out}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	t.Cleanup(func() { f.Close() })
	var ps []rrpair.Pair
	for i := range f.Len() {
		var p rrpair.Pair
		if err := f.NewCursor().WithResponses().Decode(i, &p); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// TestForwardHTTPS: HTTPS_PROXY calls through CONNECT, TLS terminated
// with the CA's leaf, made again to the real host with its certificate
// checked; the pairs say OUT, https, the upstream's authority, and the
// exchange as it was.
func TestForwardHTTPS(t *testing.T) {
	var seen atomic.Int64
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Seen-Host", r.Host)
		fmt.Fprintf(w, `{"method":%q,"uri":%q,"body":%q}`, r.Method, r.RequestURI, b)
	}))
	defer up.Close()
	var out fixture.Buffer
	p, ca := forwardProxy(t, &out, certFile(t, up), nil)
	client := proxied(p.Addr(), ca, false)
	resp, err := client.Post(up.URL+"/v1/charge?x=1", "application/json", strings.NewReader(`{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"method":"POST","uri":"/v1/charge?x=1","body":"{\"amount\":100}"}`
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("the client got %d %s", resp.StatusCode, body)
	}
	resp, err = client.Get(up.URL + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	closeProxy(t, p)
	if st := p.Stats(); st.Pairs != 2 || st.Tunnels != 1 || st.TLS != 1 || st.Errors != 0 {
		t.Errorf("stats %+v, want 2 pairs over 1 TLS tunnel", st)
	}
	ps := pairs(t, out.Bytes())
	if len(ps) != 2 {
		t.Fatalf("%d pairs", len(ps))
	}
	authority := strings.TrimPrefix(up.URL, "https://")
	p0 := ps[0]
	if string(p0.Direction) != "OUT" || string(p0.Req.Scheme) != "https" || string(p0.Req.Host) != authority ||
		string(p0.Req.Method) != "POST" || string(p0.Req.URI) != "/v1/charge?x=1" || string(p0.Req.Body) != `{"amount":100}` ||
		p0.Res.Status != 200 || string(p0.Res.Body) != want || len(p0.TS) == 0 || len(p0.Duration) == 0 {
		t.Errorf("pair 0: %s %s %s %s %s %q -> %d %q ts %q duration %q", p0.Direction, p0.Req.Scheme, p0.Req.Host, p0.Req.Method, p0.Req.URI, p0.Req.Body, p0.Res.Status, p0.Res.Body, p0.TS, p0.Duration)
	}
	if string(ps[1].Req.URI) != "/v1/status" {
		t.Errorf("pair 1: %s, want the requests in the order they began", ps[1].Req.URI)
	}
}

// TestForwardUpstreamCertificateChecked: an upstream whose certificate
// the proxy does not trust is not called (502, counted), unless
// --upstream-insecure.
func TestForwardUpstreamCertificateChecked(t *testing.T) {
	var seen atomic.Int64
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1) }))
	defer up.Close()
	var out fixture.Buffer
	p, ca := forwardProxy(t, &out, "", nil)
	resp, err := proxied(p.Addr(), ca, false).Get(up.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "tls") {
		t.Errorf("untrusted upstream: %d %s, want 502 naming TLS", resp.StatusCode, body)
	}
	closeProxy(t, p)
	if st := p.Stats(); st.Pairs != 0 || st.Errors != 1 {
		t.Errorf("stats %+v, want 1 error and nothing recorded", st)
	}

	p, ca = forwardProxy(t, &out, "", func(o *ForwardOptions) { o.Reach.Insecure = true })
	resp, err = proxied(p.Addr(), ca, false).Get(up.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	closeProxy(t, p)
	if resp.StatusCode != 200 || p.Stats().Pairs != 1 {
		t.Errorf("--upstream-insecure: %d, %+v", resp.StatusCode, p.Stats())
	}
}

// TestForwardAbsoluteForm: an HTTP_PROXY request goes to its host in
// origin-form, without the proxy's own headers, and is recorded so.
func TestForwardAbsoluteForm(t *testing.T) {
	up := rawUpstreamSeen(t, "HTTP/1.1 201 Created\r\nX-Order: 7\r\nContent-Length: 2\r\n\r\nok")
	var out fixture.Buffer
	p, _ := forwardProxy(t, &out, "", nil)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST http://"+up.addr+"/orders?a=1 HTTP/1.1\r\nHost: "+up.addr+"\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\nX-Case: Kept\r\nContent-Length: 4\r\n\r\n{\"a\"")
	br := bufio.NewReader(c)
	if m := readAnswer(t, br, "POST"); m.Status != 201 || string(m.Body) != "ok" {
		t.Fatalf("the client got %q", m.Raw)
	}
	c.Close()
	closeProxy(t, p)
	got := up.requests()
	want := "POST /orders?a=1 HTTP/1.1\r\nHost: " + up.addr + "\r\nX-Case: Kept\r\nContent-Length: 4\r\n\r\n{\"a\""
	if len(got) != 1 || got[0] != want {
		t.Errorf("the upstream got %q, want %q", got, want)
	}
	ps := pairs(t, out.Bytes())
	if len(ps) != 1 || string(ps[0].Req.URI) != "/orders?a=1" || string(ps[0].Req.Scheme) != "http" || string(ps[0].Req.Host) != up.addr {
		t.Fatalf("recorded:\n%s", out.String())
	}
	for _, h := range ps[0].Req.Headers {
		if strings.HasPrefix(strings.ToLower(string(h.Name)), "proxy-") {
			t.Errorf("recorded the proxy's own header %s", h.Name)
		}
	}
}

// TestForwardPlainInsideConnect: a tunnel whose first byte is not a TLS
// record is plaintext HTTP, recorded as http.
func TestForwardPlainInsideConnect(t *testing.T) {
	up := rawUpstreamSeen(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nplain")
	var out fixture.Buffer
	p, _ := forwardProxy(t, &out, "", nil)
	c, err := loopback.ConnectDialer(p.Addr())(context.Background(), up.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for range 2 {
		io.WriteString(c, "GET /inside HTTP/1.1\r\nHost: "+up.addr+"\r\n\r\n")
		if m := readAnswer(t, br, "GET"); m.Status != 200 || string(m.Body) != "plain" {
			t.Fatalf("inside: %q", m.Raw)
		}
	}
	c.Close()
	closeProxy(t, p)
	ps := pairs(t, out.Bytes())
	if len(ps) != 2 || string(ps[0].Req.Scheme) != "http" || string(ps[0].Req.URI) != "/inside" || string(ps[0].Direction) != "OUT" {
		t.Fatalf("recorded:\n%s", out.String())
	}
	if st := p.Stats(); st.Tunnels != 1 || st.TLS != 0 {
		t.Errorf("stats %+v, want one plaintext tunnel", st)
	}
}

// TestForwardHTTP2AndGRPC: a client that offers h2 by ALPN inside the
// tunnel is served HTTP/2, and a grpc-go call is made again over HTTP/2
// and recorded with its messages and trailers.
func TestForwardHTTP2AndGRPC(t *testing.T) {
	leaf, upCAFile := upstreamLeaf(t)
	srvTLS := &tls.Config{Certificates: []tls.Certificate{*leaf}}

	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(srvTLS)))
	hs := health.NewServer()
	hs.SetServingStatus("payments", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(gln)
	defer gs.Stop()

	web := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Proto", r.Proto)
		io.WriteString(w, "hello "+r.URL.Path)
	}))
	web.EnableHTTP2 = true
	web.TLS = srvTLS.Clone()
	web.StartTLS()
	defer web.Close()

	var out fixture.Buffer
	p, ca := forwardProxy(t, &out, upCAFile, nil)

	resp, err := proxied(p.Addr(), ca, true).Get(web.URL + "/h2")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || string(body) != "hello /h2" || resp.Header.Get("X-Proto") != "HTTP/2.0" {
		t.Errorf("h2 client: %s %q, upstream spoke %s", resp.Proto, body, resp.Header.Get("X-Proto"))
	}

	cc, err := grpc.NewClient("passthrough:///"+gln.Addr().String(),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})),
		grpc.WithContextDialer(loopback.ConnectDialer(p.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hr, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "payments"})
	if err != nil || hr.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC through the proxy: %v, %v", hr, err)
	}
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	if err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("unknown service: %v, want NotFound passed on", err)
	}
	cc.Close()
	closeProxy(t, p)

	ps := pairs(t, out.Bytes())
	if len(ps) != 3 {
		t.Fatalf("%d pairs:\n%s", len(ps), out.String())
	}
	if string(ps[0].Version) != "2" || string(ps[0].Res.Body) != "hello /h2" {
		t.Errorf("h2 pair: version %q, %q", ps[0].Version, ps[0].Res.Body)
	}
	g := ps[1]
	if !g.IsGRPC() || string(g.Req.URI) != "/grpc.health.v1.Health/Check" || string(g.Req.Scheme) != "https" {
		t.Errorf("gRPC pair: %s %s grpc=%v", g.Req.Scheme, g.Req.URI, g.IsGRPC())
	}
	if st := trailer(g.Res.Trailers, "grpc-status"); st != "0" {
		t.Errorf("gRPC trailers %q: want grpc-status 0", g.Res.Trailers)
	}
	if !bytes.Equal(g.Res.Body, []byte{0, 0, 0, 0, 2, 8, 1}) { // status SERVING
		t.Errorf("gRPC answer body %x", g.Res.Body)
	}
	if st := trailer(append(ps[2].Res.Headers, ps[2].Res.Trailers...), "grpc-status"); st != "5" {
		t.Errorf("NotFound call: grpc-status %q, want 5", st)
	}
}

func trailer(hs []rrpair.Header, name string) string {
	for _, h := range hs {
		if strings.EqualFold(string(h.Name), name) {
			return string(h.Value)
		}
	}
	return ""
}

// TestForwardOrder: lines are written in the order requests began, not
// the order they ended.
func TestForwardOrder(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, r.URL.Path)
	}))
	defer up.Close()
	var out fixture.Buffer
	p, ca := forwardProxy(t, &out, "", nil)
	client := proxied(p.Addr(), ca, false)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if resp, err := client.Get(up.URL + "/slow"); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for p.w.Begun() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the slow request began
	}
	resp, err := client.Get(up.URL + "/fast")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	close(release)
	wg.Wait()
	closeProxy(t, p)
	ps := pairs(t, out.Bytes())
	if len(ps) != 2 || string(ps[0].Req.URI) != "/slow" || string(ps[1].Req.URI) != "/fast" {
		t.Errorf("recorded in this order:\n%s", out.String())
	}
}

func TestForwardNeedsCA(t *testing.T) {
	_, err := ListenForward("127.0.0.1:0", io.Discard, ForwardOptions{})
	if err == nil || !strings.Contains(err.Error(), "--ca-out") {
		t.Errorf("got %v, want a refusal naming --ca-out", err)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		o    ForwardOptions
		want string
	}{
		{ForwardOptions{CA: tlsca.Options{Cert: filepath.Join(dir, "ca.pem")}}, "--ca-cert without --ca-key"},
		{ForwardOptions{CA: tlsca.Options{Cert: filepath.Join(dir, "no.pem"), Key: filepath.Join(dir, "no.pem")}}, "--ca-cert: open"},
		{ForwardOptions{CA: tlsca.Options{OutDir: dir}, Reach: reach.Options{CA: filepath.Join(dir, "none.pem")}}, "--upstream-ca: open"},
		{ForwardOptions{CA: tlsca.Options{OutDir: dir}, Reach: reach.Options{Cert: "c.pem"}}, "--client-cert and --client-key: give both"},
	} {
		if _, err := ListenForward("127.0.0.1:0", io.Discard, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want %q", err, tt.want)
		}
	}
}

// seenUpstream is a raw loopback upstream that keeps every request as it
// arrived.
type seenUpstream struct {
	addr string
	mu   sync.Mutex
	got  []string
}

func (s *seenUpstream) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func rawUpstreamSeen(t *testing.T, answer string) *seenUpstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &seenUpstream{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					m, err := rawhttp.Read(br, true, "", nil)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.got = append(s.got, string(m.Raw))
					s.mu.Unlock()
					if _, err := io.WriteString(c, answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

// TestForwardClientCertAndRedaction: an upstream that wants mutual TLS
// gets --client-cert; without it the call fails (502, counted). The
// redaction flags hold for forward pairs as for the reverse proxy's.
func TestForwardClientCertAndRedaction(t *testing.T) {
	// A client certificate of its own (self-signed, for client auth),
	// which the upstream trusts.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "checkout.internal"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	clientCert, _ := x509.ParseCertificate(der)
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(clientCert)
	clientDir := t.TempDir()
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	os.WriteFile(filepath.Join(clientDir, "client.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(filepath.Join(clientDir, "client-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)

	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"client":"`+r.TLS.PeerCertificates[0].Subject.CommonName+`","token":"live-secret"}`)
	}))
	up.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	up.StartTLS()
	defer up.Close()

	var out fixture.Buffer
	p, ca := forwardProxy(t, &out, certFile(t, up), func(o *ForwardOptions) {
		o.Reach.Cert, o.Reach.Key = filepath.Join(clientDir, "client.pem"), filepath.Join(clientDir, "client-key.pem")
		o.RedactHeader, o.RedactJSON = []string{"Authorization"}, []string{"token"}
	})
	req, _ := http.NewRequest("GET", up.URL+"/me", nil)
	req.Header.Set("Authorization", "Bearer hunter2")
	resp, err := proxied(p.Addr(), ca, false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"client":"checkout.internal"`) || !strings.Contains(string(body), "live-secret") {
		t.Errorf("with --client-cert: %d %s", resp.StatusCode, body)
	}
	closeProxy(t, p)
	rec := out.String()
	if strings.Contains(rec, "hunter2") || strings.Contains(rec, "live-secret") || !strings.Contains(rec, `"Authorization":["REDACTED"]`) {
		t.Errorf("recorded:\n%s", rec)
	}

	p, ca = forwardProxy(t, &out, certFile(t, up), nil)
	resp, err = proxied(p.Addr(), ca, false).Get(up.URL + "/me")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	closeProxy(t, p)
	if resp.StatusCode != http.StatusBadGateway || p.Stats().Errors != 1 {
		t.Errorf("without --client-cert: %d, %+v", resp.StatusCode, p.Stats())
	}
}
