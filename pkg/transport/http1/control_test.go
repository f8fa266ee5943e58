package http1

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// TestDryRunMatchesTheWire: a dry run prints, byte for byte, what a run
// sends, and sends nothing.
func TestHostMap(t *testing.T) {
	a, b := loopback.NewRaw(t, nil), loopback.NewRaw(t, nil)
	hostLine := func(host, uri string) string {
		return `{"http":{"req":{"method":"GET","uri":"` + uri + `","host":"` + host + `"}}}`
	}
	f := openLines(t, hostLine("api.prod:443", "/1"), hostLine("auth.prod", "/2"), hostLine("api.prod:443", "/3"), hostLine("other", "/4"))
	sink, _ := runPool(t, f, vu.Config{}, Options{Conn: conn.Options{HostMap: map[string]string{"api.prod:443": a.URL()}, Target: b.URL()}})
	if len(sink.Results()) != 4 || len(a.Requests()) != 2 || len(b.Requests()) != 2 {
		t.Fatalf("server a got %d, b got %d; want 2 and 2", len(a.Requests()), len(b.Requests()))
	}
	if !strings.Contains(string(a.Requests()[0]), "Host: "+a.Addr()) {
		t.Errorf("mapped request: %q, want the mapped Host", a.Requests()[0])
	}
	// Without a --target, an unmapped host fails before traffic.
	p := &vu.Pool{File: f, Sink: &collect{}, Config: vu.Config{Load: schedule.Load{VUs: 1}, Log: zerolog.Nop()},
		Transport: newTransport(t, Options{Conn: conn.Options{HostMap: map[string]string{"api.prod:443": a.URL()}}})}
	_, err := p.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), `no mapping for recorded host "auth.prod", "other"`) {
		t.Errorf("got %v, want the unmapped hosts named", err)
	}
	if len(a.Requests()) != 2 {
		t.Errorf("requests were sent despite the error")
	}
}

func TestMaxConnDuration(t *testing.T) {
	srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action { return loopback.Action{Status: 200, Stall: 10 * time.Millisecond} })
	sink, _ := runPool(t, openLines(t, manyLines(5)...), vu.Config{Load: schedule.Load{VUs: 1, Walk: schedule.Loop, Duration: 500 * time.Millisecond}}, Options{Conn: conn.Options{MaxConnDuration: 100 * time.Millisecond, Target: srv.URL()}})
	srv.Close()
	reconnects := sink.Count(func(r result.Result) bool { return r.Reconnect })
	if conns := srv.Conns(); conns < 4 || conns > 7 || int64(reconnects) != conns-1 {
		t.Errorf("got %d connections and %d reconnects in 500ms with --max-conn-duration 100ms; want about 5, and reconnects = connections − 1", conns, reconnects)
	}
}

// TestTLSClientCertificate: a server that trusts only a test CA and
// requires a client certificate signed by it.
func TestTLSClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, "test CA", nil, nil, true)
	srvCert, srvKey := newCert(t, "server.test", ca, caKey, false)
	cliCert, cliKey := newCert(t, "replay client", ca, caKey, false)
	write := func(name string, der []byte, typ string) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
		return path
	}
	caFile := write("ca.pem", ca.Raw, "CERTIFICATE")
	certFile := write("client.pem", cliCert.Raw, "CERTIFICATE")
	keyDER, _ := x509.MarshalECPrivateKey(cliKey)
	keyFile := write("client-key.pem", keyDER, "EC PRIVATE KEY")

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	var gotSNI string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotSNI = r.TLS.ServerName
		w.WriteHeader(http.StatusAccepted)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: pool,
	}
	srv.StartTLS()
	defer srv.Close()
	f := openLines(t, manyLines(2)...)

	sink, _ := runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL, CA: caFile, Cert: certFile, Key: keyFile, ServerName: "server.test"}})
	if n := sink.Count(func(r result.Result) bool { return r.Status == 202 }); n != 2 || gotSNI != "server.test" {
		t.Errorf("with the CA and a client certificate: %+v, SNI %q; want 2 answers and SNI server.test", sink.Results(), gotSNI)
	}
	sink, _ = runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL, CA: caFile, ServerName: "server.test"}})
	if n := sink.Count(func(r result.Result) bool { return r.Err != result.ErrNone }); n != 2 {
		t.Errorf("without a client certificate: %+v, want 2 failures", sink.Results())
	}
	sink, _ = runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL, Cert: certFile, Key: keyFile, ServerName: "server.test"}})
	if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrTLS }); n != 2 {
		t.Errorf("without the CA: %+v, want 2 tls errors", sink.Results())
	}
	for _, o := range []Options{{Conn: conn.Options{CA: filepath.Join(dir, "nope.pem")}}, {Conn: conn.Options{CA: keyFile}}, {Conn: conn.Options{Cert: certFile}}} {
		if _, err := New(o); err == nil {
			t.Errorf("%+v validated", o)
		}
	}
}

func newCert(t *testing.T, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:        isCA, BasicConstraintsValid: true,
		DNSNames: []string{name}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func TestFollowRedirects(t *testing.T) {
	var srv *loopback.Raw
	srv = loopback.NewRaw(t, func(_ int64, req []byte) loopback.Action {
		target := strings.Fields(string(req))[1]
		switch target {
		case "/see-other":
			return loopback.Action{Status: 303, Header: "Location: /final?x=1\r\n"}
		case "/temporary":
			return loopback.Action{Status: 307, Header: "Location: http://" + srv.Addr() + "/kept\r\n"}
		case "/loop":
			return loopback.Action{Status: 302, Header: "Location: /loop\r\n"}
		}
		return loopback.Action{Status: 200, Body: "ok"}
	})
	f := openLines(t,
		line("POST", "/see-other", `{"Content-Type":["text/plain"]}`, "data"),
		line("PUT", "/temporary", "", "data"),
		line("GET", "/loop", "", nil),
	)
	sink, _ := runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL()}})
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("without --follow-redirects: %d requests, want 3 (a 3xx is the answer)", n)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Status >= 300 && r.Status < 400 }); n != 3 {
		t.Errorf("got %d 3xx answers, want 3", n)
	}

	before := len(srv.Requests())
	sink, _ = runPool(t, f, vu.Config{FollowRedirects: 2}, Options{Conn: conn.Options{Target: srv.URL()}})
	got := srv.Requests()[before:]
	var lines []string
	for _, req := range got {
		lines = append(lines, strings.SplitN(string(req), "\r\n", 2)[0])
	}
	want := []string{
		"POST /see-other HTTP/1.1", "GET /final?x=1 HTTP/1.1",
		"PUT /temporary HTTP/1.1", "PUT /kept HTTP/1.1",
		"GET /loop HTTP/1.1", "GET /loop HTTP/1.1", "GET /loop HTTP/1.1",
	}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", lines, want)
	}
	if strings.Contains(string(got[1]), "Content-") || !strings.HasSuffix(string(got[3]), "\r\n\r\ndata") {
		t.Errorf("303 hop %q must drop the body; 307 hop %q must keep it", got[1], got[3])
	}
	if n := sink.Count(func(r result.Result) bool { return r.Redirect }); n != 4 {
		t.Errorf("got %d redirect hops, want 4", n)
	}
}

func TestTimings(t *testing.T) {
	srv := loopback.NewRaw(t, func(int64, []byte) loopback.Action {
		return loopback.Action{Status: 200, Body: "ok", Stall: 20 * time.Millisecond}
	})
	f := openLines(t, manyLines(3)...)
	sink, _ := runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL(), Timings: true}})
	for i, r := range sink.Results() {
		if (i == 0) != (r.ConnectNs > 0) {
			t.Errorf("request %d: connect %v, want it only on the first (a new connection)", i, time.Duration(r.ConnectNs))
		}
		if r.WaitNs < int64(15*time.Millisecond) || r.SendNs <= 0 || r.ReceiveNs < 0 {
			t.Errorf("request %d: send %v wait %v receive %v; want the 20ms stall in wait", i, time.Duration(r.SendNs), time.Duration(r.WaitNs), time.Duration(r.ReceiveNs))
		}
		if sum := r.SendNs + r.WaitNs + r.ReceiveNs; sum != r.End-r.Sent {
			t.Errorf("request %d: phases add to %v, service time is %v", i, time.Duration(sum), time.Duration(r.End-r.Sent))
		}
	}
	sink, _ = runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL()}})
	for _, r := range sink.Results() {
		if r.ConnectNs != 0 || r.SendNs != 0 || r.WaitNs != 0 {
			t.Errorf("without --timings: %+v", r)
		}
	}
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	sink, _ = runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: tlsSrv.URL, Insecure: true, Timings: true}})
	if r := sink.Results()[0]; r.TLSNs <= 0 || r.ConnectNs <= 0 {
		t.Errorf("TLS: connect %v, handshake %v", time.Duration(r.ConnectNs), time.Duration(r.TLSNs))
	}
}

// connectProxy is a minimal HTTP CONNECT proxy on loopback that counts its
// tunnels and checks the credentials it was given.
func connectProxy(t *testing.T, wantAuth string) (url string, tunnels *atomic.Int64) {
	tunnels = &atomic.Int64{}
	addr, _ := loopback.Serve(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil || req.Method != "CONNECT" {
			return
		}
		if req.Header.Get("Proxy-Authorization") != wantAuth {
			io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
			return
		}
		up, err := net.Dial("tcp", req.Host)
		if err != nil {
			io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
			return
		}
		defer up.Close()
		tunnels.Add(1)
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { io.Copy(up, c); up.Close() }()
		io.Copy(c, up)
	})
	return "http://" + addr, tunnels
}

func TestProxy(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	proxyURL, tunnels := connectProxy(t, "Basic dXNlcjpwYXNz") // user:pass
	f := openLines(t, manyLines(3)...)
	u := strings.Replace(proxyURL, "http://", "http://user:pass@", 1)
	sink, _ := runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL(), Proxy: u}})
	if n := sink.Count(func(r result.Result) bool { return r.Status == 200 }); n != 3 || tunnels.Load() != 1 {
		t.Errorf("through the proxy: %d answers over %d tunnels, want 3 over 1", n, tunnels.Load())
	}
	if got := string(srv.Requests()[0]); !strings.HasPrefix(got, "GET /p/0 HTTP/1.1\r\nHost: "+srv.Addr()) {
		t.Errorf("tunnelled request %q, want it as sent directly", got)
	}
	sink, _ = runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL(), Proxy: proxyURL}}) // no credentials: 407
	if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrConnect }); n != 3 {
		t.Errorf("refused by the proxy: %+v, want 3 connect errors", sink.Results())
	}
	if err := (&Options{Conn: conn.Options{Proxy: "socks5://x:1"}}).Validate(); err == nil {
		t.Error("a socks5 proxy validated")
	}
}
