package pcap

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/replay-dev/replay/pkg/run"
)

// recProxy is a TCP proxy on loopback that records the bytes each way, in
// the order they pass (each chunk recorded before it is passed on, so a
// reply is recorded after what it answers), to write them as a capture.
type recProxy struct {
	ln     net.Listener
	to     string
	mu     sync.Mutex
	events []recEvent
	conns  int
	wg     sync.WaitGroup
	open   sync.WaitGroup // the connections being passed
	// sink, when set, takes each chunk as it passes (under mu) instead
	// of events keeping it.
	sink func(recEvent)
}

type recEvent struct {
	conn       int
	fromClient bool
	data       []byte
}

func newRecProxy(t *testing.T, to string) *recProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &recProxy{ln: ln, to: to}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			id := p.conns
			p.conns++
			p.open.Add(1)
			p.mu.Unlock()
			p.wg.Go(func() { defer p.open.Done(); p.serve(id, c) })
		}
	})
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *recProxy) serve(id int, c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.to)
	if err != nil {
		return
	}
	defer s.Close()
	deadline := time.Now().Add(30 * time.Second)
	c.SetDeadline(deadline)
	s.SetDeadline(deadline)
	var wg sync.WaitGroup
	pass := func(from, to net.Conn, fromClient bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := from.Read(buf)
			if n > 0 {
				p.mu.Lock()
				if p.sink != nil {
					p.sink(recEvent{id, fromClient, buf[:n]})
				} else {
					p.events = append(p.events, recEvent{id, fromClient, bytes.Clone(buf[:n])})
				}
				p.mu.Unlock()
				if _, werr := to.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				to.(*net.TCPConn).CloseWrite()
				return
			}
		}
	}
	wg.Go(func() { pass(c, s, true) })
	wg.Go(func() { pass(s, c, false) })
	wg.Wait()
}

// settle waits until every connection passed has closed (its last
// bytes recorded), at most 10 s.
func (p *recProxy) settle(t *testing.T) {
	done := make(chan struct{})
	go func() { p.open.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxied connections did not close within 10s")
	}
}

// sent says whether the server sent b, as part of a chunk.
func (p *recProxy) sent(t *testing.T, b []byte) bool {
	p.settle(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.events, func(e recEvent) bool { return !e.fromClient && bytes.Contains(e.data, b) })
}

// capture writes what passed as a capture: each connection from
// 10.0.0.1 to 10.0.0.2:443, its chunks in the order they passed.
func (p *recProxy) capture(t *testing.T) []byte {
	return p.captureWith(t, nil)
}

// captureWith is capture, with the segments changed by edit before they
// are written (to lose some).
func (p *recProxy) captureWith(t *testing.T, edit func(*tcap)) []byte {
	p.settle(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	c := newCapture(t)
	conns := map[int]*tconn{}
	for _, e := range p.events {
		k := conns[e.conn]
		if k == nil {
			k = c.conn(fmt.Sprintf("10.0.0.1:%d", 40000+e.conn), "10.0.0.2:443")
			k.handshake()
			conns[e.conn] = k
		}
		k.send(e.fromClient, string(e.data))
	}
	for i := range p.conns {
		if k := conns[i]; k != nil {
			k.close()
		}
	}
	if edit != nil {
		edit(c)
	}
	return c.pcap(layers.LinkTypeEthernet)
}

// tlsServer is a Go TLS server (HTTP/1.1 and HTTP/2) that answers each
// request with its method, target and body length, and a status its path
// says (/status/404); it counts what it answered.
type tlsServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD TARGET -> STATUS"
}

func newTLSServer(t *testing.T, cfg *tls.Config) *tlsServer {
	s := &tlsServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status := 200
		if code, ok := strings.CutPrefix(r.URL.Path, "/status/"); ok {
			status, _ = strconv.Atoi(code)
		}
		s.mu.Lock()
		s.seen = append(s.seen, fmt.Sprintf("%s %s -> %d", r.Method, r.RequestURI, status))
		s.mu.Unlock()
		w.WriteHeader(status)
		if r.URL.Path == "/big" {
			w.Write(bytes.Repeat([]byte("0123456789abcdef"), 4096)) // 64 KiB: several records
			return
		}
		fmt.Fprintf(w, "%s %s %d", r.Method, r.RequestURI, len(body))
	}))
	s.EnableHTTP2 = true
	s.TLS = cfg
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *tlsServer) answered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.seen)
	s.seen = nil
	slices.Sort(out)
	return out
}

// tlsRequests are the requests each client sends: several statuses, a
// body, an answer of several records.
var tlsRequests = []struct{ method, target, body string }{
	{"GET", "/a?x=1&y=2", ""},
	{"POST", "/orders", `{"id":42}`},
	{"GET", "/status/404", ""},
	{"GET", "/big", ""},
	{"PUT", "/status/201", strings.Repeat("p", 20000)},
}

// goClient sends tlsRequests through the proxy at addr with Go's client,
// over HTTP/2 or HTTP/1.1, writing its key log to keys; fresh sends each
// request on a connection of its own (a resumed session, with a cache).
func goClient(t *testing.T, srv *tlsServer, addr string, keys io.Writer, h2 bool, cfg func(*tls.Config), fresh bool) {
	tc := &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "example.com", KeyLogWriter: keys}
	tc.RootCAs.AddCert(srv.Certificate())
	if cfg != nil {
		cfg(tc)
	}
	var p http.Protocols
	if h2 {
		p.SetHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	_, port, _ := net.SplitHostPort(addr)
	tr := &http.Transport{TLSClientConfig: tc, Protocols: &p, DisableKeepAlives: fresh && !h2,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr) // example.com is the proxy
		}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	for _, r := range tlsRequests {
		req, err := http.NewRequest(r.method, "https://example.com:"+port+r.target, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if fresh && h2 {
			tr.CloseIdleConnections()
		}
	}
}

// curlClient sends tlsRequests with curl, offering one suite: of TLS 1.3
// (Go's client and server cannot be made to choose TLS 1.3's AES-256 or
// ChaCha20 suite; a Go server takes the one a client offers), or of
// TLS 1.2 by its OpenSSL name. curl
// writes its key log through SSLKEYLOGFILE. Without curl the case is
// skipped, loudly, unless REPLAY_CI=1.
func curlClient(t *testing.T, srv *tlsServer, addr string, keys io.Writer, h2 bool, suite string) {
	bin, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("REPLAY_CI") == "1" {
			t.Fatal("curl is not installed, and REPLAY_CI=1")
		}
		t.Skip("SKIPPED: curl is not installed (apt-get install curl); this case did not run")
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	keyFile := filepath.Join(dir, "keys.log")
	_, port, _ := net.SplitHostPort(addr)
	common := []string{"-sS", "--max-time", "20", "--cacert", ca, "--resolve", "example.com:" + port + ":127.0.0.1", "-o", "/dev/null"}
	if strings.HasPrefix(suite, "TLS_") {
		common = append(common, "--tlsv1.3", "--tls13-ciphers", suite)
	} else { // an OpenSSL name of a TLS 1.2 suite
		common = append(common, "--tlsv1.2", "--tls-max", "1.2", "--ciphers", suite)
	}
	if h2 {
		common = append(common, "--http2")
	} else {
		common = append(common, "--http1.1")
	}
	var args []string
	for i, r := range tlsRequests {
		if i > 0 {
			args = append(args, "--next")
		}
		args = append(args, common...)
		args = append(args, "-X", r.method)
		if r.body != "" {
			args = append(args, "--data-binary", r.body, "-H", "Content-Type:")
		}
		args = append(args, "https://example.com:"+port+r.target)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SSLKEYLOGFILE="+keyFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	keys.Write(b)
}

// TestTLSKeyLog: TLS traffic on loopback (Go's server; Go's client and
// curl writing their key logs), TLS 1.3 with each of its suites and
// TLS 1.2 with AES-GCM, ChaCha20-Poly1305 and AES-CBC, HTTP/1.1 and
// HTTP/2 as ALPN chose, resumed sessions, recorded as a capture, imported
// with the key log: the pairs are the exchanges the server answered,
// https, with their version; tshark decrypts the same requests; no key
// byte is in the output; replayed to the server, the statuses are the
// recorded ones. Without the key log, the connections are counted.
func TestTLSKeyLog(t *testing.T) {
	tls12 := func(suite uint16) func(*tls.Config) {
		return func(c *tls.Config) { c.MaxVersion, c.CipherSuites = tls.VersionTLS12, []uint16{suite} }
	}
	cache := func(c *tls.Config) { c.ClientSessionCache = tls.NewLRUClientSessionCache(8) }
	cases := []struct {
		name    string
		h2      bool
		cfg     func(*tls.Config)
		curl    string // a TLS 1.3 suite curl offers; "": Go's client
		fresh   bool   // a connection per request (resumed sessions)
		version string
		suite   uint16
		// tsharkSome: tshark decrypts only the first connection (a
		// resumed TLS 1.2 session's master secret is not logged again by
		// Go's client: the import finds it from the session resumed).
		tsharkSome bool
		server     func(*tls.Config)
	}{
		{name: "TLS 1.3 HTTP/1.1", version: "1.1", suite: tls.TLS_AES_128_GCM_SHA256},
		{name: "TLS 1.3 HTTP/2", h2: true, version: "2", suite: tls.TLS_AES_128_GCM_SHA256},
		{name: "TLS 1.3 AES-256 HTTP/2 curl", h2: true, curl: "TLS_AES_256_GCM_SHA384", version: "2", suite: tls.TLS_AES_256_GCM_SHA384},
		{name: "TLS 1.3 ChaCha20 HTTP/1.1 curl", curl: "TLS_CHACHA20_POLY1305_SHA256", version: "1.1", suite: tls.TLS_CHACHA20_POLY1305_SHA256},
		{name: "TLS 1.3 after a HelloRetryRequest", version: "1.1", suite: tls.TLS_AES_128_GCM_SHA256, server: func(c *tls.Config) {
			c.CurvePreferences = []tls.CurveID{tls.CurveP256} // Go's client offers X25519MLKEM768 and X25519 shares first
		}},
		{name: "TLS 1.3 resumed", fresh: true, cfg: cache, version: "1.1", suite: tls.TLS_AES_128_GCM_SHA256},
		{name: "TLS 1.2 ChaCha20 HTTP/2 curl", h2: true, curl: "ECDHE-RSA-CHACHA20-POLY1305", version: "2", suite: tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305},
		{name: "TLS 1.2 AES-256-GCM HTTP/1.1 curl", curl: "ECDHE-RSA-AES256-GCM-SHA384", version: "1.1", suite: tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
		{name: "TLS 1.2 AES-128-GCM HTTP/2", h2: true, cfg: tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256), version: "2", suite: tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
		{name: "TLS 1.2 AES-256-GCM HTTP/1.1", cfg: tls12(tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384), version: "1.1", suite: tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
		{name: "TLS 1.2 ChaCha20 HTTP/2", h2: true, cfg: tls12(tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305), version: "2", suite: tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305},
		{name: "TLS 1.2 AES-128-CBC-SHA HTTP/1.1", cfg: tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA), version: "1.1", suite: tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA},
		{name: "TLS 1.2 AES-128-CBC-SHA256 HTTP/1.1", cfg: tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256), version: "1.1", suite: tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256},
		{name: "TLS 1.2 resumed (tickets)", fresh: true, cfg: func(c *tls.Config) { tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)(c); cache(c) }, version: "1.1", suite: tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tsharkSome: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var suites []uint16
			var smu sync.Mutex
			resumed := 0
			cfg := &tls.Config{
				CipherSuites: []uint16{tc.suite}, // TLS 1.2's; TLS 1.3's are not configurable
				VerifyConnection: func(cs tls.ConnectionState) error {
					smu.Lock()
					suites = append(suites, cs.CipherSuite)
					if cs.DidResume {
						resumed++
					}
					smu.Unlock()
					return nil
				},
			}
			if tc.server != nil {
				tc.server(cfg)
			}
			if tc.suite == tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256 {
				cfg.CipherSuites = append(cfg.CipherSuites, tc.suite)
			}
			srv := newTLSServer(t, cfg)
			proxy := newRecProxy(t, srv.Listener.Addr().String())
			var keys bytes.Buffer
			if tc.curl != "" {
				curlClient(t, srv, proxy.ln.Addr().String(), &keys, tc.h2, tc.curl)
			} else {
				goClient(t, srv, proxy.ln.Addr().String(), &keys, tc.h2, tc.cfg, tc.fresh)
			}
			want := srv.answered()
			smu.Lock()
			for _, s := range suites {
				if s != tc.suite {
					t.Fatalf("the connection's suite is %s, want %s", tls.CipherSuiteName(s), tls.CipherSuiteName(tc.suite))
				}
			}
			if tc.server != nil && !proxy.sent(t, hrrRandom) {
				t.Fatal("the server asked for no retry")
			}
			if tc.fresh && resumed == 0 {
				t.Fatalf("no connection resumed a session (%d connections)", len(suites))
			}
			smu.Unlock()
			capture := proxy.capture(t)
			kl, err := ReadKeyLog("keys.log", bytes.NewReader(keys.Bytes()))
			if err != nil {
				t.Fatal(err)
			}

			r := importCaptures(t, Options{KeyLog: kl}, "capture.pcap", capture)
			if r.err != nil {
				t.Fatal(r.err)
			}
			var got []string
			for _, p := range r.pairs {
				got = append(got, p.String())
				if p.Version != tc.version || !strings.HasPrefix(p.Host, "example.com:") {
					t.Errorf("%s: version %q, host %q; want %s, example.com:PORT", p, p.Version, p.Host, tc.version)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) || r.lost != 0 || len(r.skips) != 0 || r.st.TLS == 0 {
				t.Errorf("imported %q\nserver answered %q\nsummary: %s\nskips: %q", got, want, r.st.Summary(), r.skips)
			}
			if n := strings.Count(r.out, `"l7protocol":"https"`); n != len(r.pairs) {
				t.Errorf("%d of %d pairs are https", n, len(r.pairs))
			}
			noKeyBytes(t, keys.Bytes(), r.out+strings.Join(r.skips, "\n")+r.st.Summary())

			// Without the key log: counted, named, nothing written.
			plain := importCaptures(t, Options{}, "capture.pcap", capture)
			if len(plain.pairs) != 0 || plain.st.Skipped["tls"] != proxy.conns || plain.lost != proxy.conns {
				t.Errorf("without the key log: %s; skips %q", plain.st.Summary(), plain.skips)
			}

			// tshark decrypts the same requests with the same key log.
			if _, err := exec.LookPath("tshark"); err == nil || os.Getenv("REPLAY_CI") == "1" {
				dir := t.TempDir()
				capPath, keyPath := filepath.Join(dir, "capture.pcap"), filepath.Join(dir, "keys.log")
				os.WriteFile(capPath, capture, 0o644)
				os.WriteFile(keyPath, keys.Bytes(), 0o600)
				var methods []string
				for _, p := range r.pairs {
					methods = append(methods, p.Method+" "+p.URI)
				}
				slices.Sort(methods)
				ts := tsharkTLS(t, capPath, keyPath)
				if tc.tsharkSome {
					if len(ts) == 0 || len(ts) >= len(methods) || !isSubset(ts, methods) {
						t.Errorf("imported %q\ntshark decrypts %q: want the first connection's", methods, ts)
					}
					t.Logf("tshark decrypts %d of the %d requests (the first connection's)", len(ts), len(methods))
				} else if !slices.Equal(methods, ts) {
					t.Errorf("imported %q\ntshark decrypts %q", methods, ts)
				}
			} else {
				t.Log("SKIPPED: tshark is not installed: the comparison with tshark did not run")
			}

			// Replayed to the same server, the statuses are the recorded ones.
			sum := replay(t, r.out, srv.URL, func(o *run.Options) { o.HTTP.Insecure = true })
			wantStatus := map[string]int64{}
			for _, p := range r.pairs {
				wantStatus[strconv.Itoa(p.Status)]++
			}
			if fmt.Sprint(sum.Status) != fmt.Sprint(wantStatus) || sum.Requests != int64(len(r.pairs)) {
				t.Errorf("replayed: %d requests, statuses %v; want %v", sum.Requests, sum.Status, wantStatus)
			}
			if again := srv.answered(); !slices.Equal(again, want) {
				t.Errorf("replayed, the server answered %q\nwant %q", again, want)
			}
		})
	}
}

// noKeyBytes fails when out holds a secret of the key log, in hex (either
// case), in base64 or as bytes.
func noKeyBytes(t *testing.T, keyLog []byte, out string) {
	t.Helper()
	n := 0
	for line := range strings.SplitSeq(string(keyLog), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		secret, err := hex.DecodeString(f[2])
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, form := range []string{strings.ToLower(f[2]), strings.ToUpper(f[2]), base64.StdEncoding.EncodeToString(secret), string(secret), f[2][:16]} {
			if strings.Contains(out, form) {
				t.Errorf("the output holds the secret of %s", f[0])
			}
		}
	}
	if n == 0 {
		t.Error("the key log holds no secret")
	}
}

// tsharkTLS are the requests tshark decrypts in the capture at path with
// the key log at keys, as "METHOD TARGET", sorted.
func tsharkTLS(t *testing.T, path, keys string) []string {
	t.Helper()
	return tsharkHTTP(t, []string{"-r", path, "-n", "-o", "tls.keylog_file:" + keys, "-o", "tcp.reassemble_out_of_order:TRUE"})
}

// isSubset says whether every one of sub is in all.
func isSubset(sub, all []string) bool {
	for _, s := range sub {
		if !slices.Contains(all, s) {
			return false
		}
	}
	return true
}

// TestTLSKeyLogLacks: what cannot be decrypted is counted and named, never
// guessed: a connection whose keys the key log lacks (the server and
// "no key in the key log"), a connection the capture joined after its
// handshake, and bytes lost inside the records of one decrypted; the
// connections with keys are read all the same. A request with no Host
// header takes the SNI as its host.
func TestTLSKeyLogLacks(t *testing.T) {
	srv := newTLSServer(t, &tls.Config{})
	proxy := newRecProxy(t, srv.Listener.Addr().String())
	var keys bytes.Buffer
	goClient(t, srv, proxy.ln.Addr().String(), &keys, false, nil, false) // connection 0
	goClient(t, srv, proxy.ln.Addr().String(), io.Discard, true, nil, false)
	// Connection 2: HTTP/1.0 with no Host header, from a raw TLS client.
	tc := &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "example.com", KeyLogWriter: &keys}
	tc.RootCAs.AddCert(srv.Certificate())
	conn, err := tls.Dial("tcp", proxy.ln.Addr().String(), tc)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "GET /nohost HTTP/1.0\r\n\r\n")
	io.Copy(io.Discard, conn)
	conn.Close()
	srv.answered()
	kl, err := ReadKeyLog("keys.log", bytes.NewReader(keys.Bytes()))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("no key", func(t *testing.T) {
		r := importCaptures(t, Options{KeyLog: kl}, "capture.pcap", proxy.capture(t))
		var got []string
		for _, p := range r.pairs {
			got = append(got, p.String())
		}
		slices.Sort(got)
		want := []string{"GET /a?x=1&y=2 -> 200", "GET /big -> 200", "GET /nohost -> 200", "GET /status/404 -> 404", "POST /orders -> 200", "PUT /status/201 -> 201"}
		if !slices.Equal(got, want) {
			t.Errorf("pairs %q, want %q", got, want)
		}
		for _, p := range r.pairs {
			if p.URI == "/nohost" && p.Host != "example.com" {
				t.Errorf("a request with no Host header: host %q, want the SNI, example.com", p.Host)
			}
		}
		wantSkips(t, r, "tls: a TLS connection to 10.0.0.2:443 (SNI example.com): no key in the key log (CLIENT_HANDSHAKE_TRAFFIC_SECRET, SERVER_HANDSHAKE_TRAFFIC_SECRET, CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0 for client random ")
		if r.lost != 1 || r.st.TLS != 2 || r.st.TLSPorts[443] != 1 || !strings.Contains(r.st.Summary(), "2 TLS connections decrypted") || !strings.Contains(r.st.Summary(), "tls 1 (TLS connections not decrypted, port 443)") {
			t.Errorf("summary %s; %d lost", r.st.Summary(), r.lost)
		}
		noKeyBytes(t, keys.Bytes(), r.out+strings.Join(r.skips, "\n"))
	})

	t.Run("joined after the handshake", func(t *testing.T) {
		capture := proxy.captureWith(t, func(c *tcap) {
			// The capture begins after connection 0's ClientHello.
			var drop []*tseg
			for _, s := range c.segs {
				if s.k.client.Port() == 40000 && (s.flags&synFlag != 0 || s.fromClient && len(s.payload) > 0 && len(drop) < 4) {
					drop = append(drop, s)
				}
				if s.k.client.Port() == 40000 && !s.fromClient && len(s.payload) > 0 {
					break
				}
			}
			c.drop(drop...)
		})
		r := importCaptures(t, Options{KeyLog: kl}, "capture.pcap", capture)
		t.Logf("skips %q", r.skips)
		if len(r.pairs) != 1 || len(r.skips) != 2 || !strings.Contains(r.skips[0], "tls: a TLS connection to 10.0.0.2:443: the capture joined it after its handshake") {
			t.Errorf("pairs %q; skips %q", shorts(r.pairs), r.skips)
		}
	})

	t.Run("a loss inside the records", func(t *testing.T) {
		capture := proxy.captureWith(t, func(c *tcap) {
			// A segment of the 64 KiB answer to GET /big is lost.
			n := 0
			for _, s := range c.segs {
				if s.k.client.Port() == 40000 && !s.fromClient && len(s.payload) > 1000 {
					if n++; n == 3 {
						c.drop(s)
						break
					}
				}
			}
		})
		r := importCaptures(t, Options{KeyLog: kl}, "capture.pcap", capture)
		t.Logf("pairs %q; skips %q", shorts(r.pairs), r.skips)
		if r.lost == 0 || r.st.Skipped["gap"] == 0 || !slices.ContainsFunc(r.skips, func(s string) bool {
			return strings.Contains(s, "gap: the server's records of a TLS connection to 10.0.0.2:443 (SNI example.com): ") && strings.Contains(s, "the rest of them cannot be decrypted")
		}) {
			t.Errorf("pairs %q; skips %q", shorts(r.pairs), r.skips)
		}
		noKeyBytes(t, keys.Bytes(), r.out+strings.Join(r.skips, "\n"))
	})
}

// TestTLSCorrupt: a TLS capture with any one byte changed (a handshake
// field, a record header, a ciphertext byte) imports with the key log
// without a panic, every pair written opens, and what cannot be decrypted
// is skipped, counted.
func TestTLSCorrupt(t *testing.T) {
	srv := newTLSServer(t, &tls.Config{})
	proxy := newRecProxy(t, srv.Listener.Addr().String())
	var keys bytes.Buffer
	goClient(t, srv, proxy.ln.Addr().String(), &keys, true, nil, false)
	goClient(t, srv, proxy.ln.Addr().String(), &keys, false, func(c *tls.Config) {
		c.MaxVersion, c.CipherSuites = tls.VersionTLS12, []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA}
	}, false)
	kl, err := ReadKeyLog("keys.log", bytes.NewReader(keys.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	skipped := 0
	for range 300 {
		capture := proxy.captureWith(t, func(c *tcap) {
			var data []*tseg
			for _, s := range c.segs {
				if len(s.payload) > 0 {
					data = append(data, s)
				}
			}
			s := data[rng.IntN(len(data))]
			if rng.IntN(2) == 0 { // the first bytes: record headers, handshake fields
				s.payload[rng.IntN(min(len(s.payload), 64))] ^= byte(1 + rng.IntN(255))
			} else {
				s.payload[rng.IntN(len(s.payload))] ^= byte(1 + rng.IntN(255))
			}
		})
		r := importCaptures(t, Options{KeyLog: kl, MaxBuffer: 1 << 20}, "capture.pcap", capture)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.lost > 0 {
			skipped++
		}
	}
	if skipped == 0 {
		t.Error("no changed byte made a connection or a message be skipped")
	}
}

// TestReadKeyLog: the key log's labels are read; a malformed line is an
// error naming the file and line and what was expected.
func TestReadKeyLog(t *testing.T) {
	random := strings.Repeat("ab", 32)
	good := "# SSL/TLS secrets log file, generated by OpenSSL\n\n" +
		"CLIENT_RANDOM " + random + " " + strings.Repeat("01", 48) + "\r\n" +
		"CLIENT_HANDSHAKE_TRAFFIC_SECRET " + random + " " + strings.Repeat("02", 32) + "\n" +
		"SERVER_HANDSHAKE_TRAFFIC_SECRET " + random + " " + strings.Repeat("03", 48) + "\n" +
		"CLIENT_TRAFFIC_SECRET_0 " + random + " " + strings.Repeat("04", 32) + "\n" +
		"SERVER_TRAFFIC_SECRET_0 " + random + " " + strings.Repeat("05", 32) + "\n" +
		"EXPORTER_SECRET " + random + " " + strings.Repeat("06", 32) + "\n" +
		"RSA 0011223344556677 " + strings.Repeat("07", 48) + "\n"
	k, err := ReadKeyLog("keys.log", strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(random)
	s := k.lookup(raw)
	if k.Len() != 1 || s == nil || s.master[0] != 1 || len(s.master) != 48 || s.clientHS[0] != 2 || len(s.serverHS) != 48 || s.clientTraffic[0] != 4 || s.serverApp[0] != 5 {
		t.Fatalf("read %d randoms, secrets %+v", k.Len(), s)
	}
	for _, tc := range []struct{ name, line, want string }{
		{"two fields", "CLIENT_RANDOM " + random, "keys.log:3: want LABEL CLIENT_RANDOM SECRET (three fields, as SSLKEYLOGFILE writes them), got 2 fields"},
		{"not hex", "CLIENT_RANDOM " + random + " zz", "keys.log:3: CLIENT_RANDOM: its third field is not hex digits"},
		{"short random", "CLIENT_TRAFFIC_SECRET_0 abcd " + strings.Repeat("04", 32), "keys.log:3: CLIENT_TRAFFIC_SECRET_0: want a client random of 64 hex digits, got 4"},
		{"short master", "CLIENT_RANDOM " + random + " " + strings.Repeat("01", 32), "keys.log:3: CLIENT_RANDOM: want a secret of 96 hex digits, got 64"},
		{"odd secret", "SERVER_TRAFFIC_SECRET_0 " + random + " " + strings.Repeat("01", 40), "keys.log:3: SERVER_TRAFFIC_SECRET_0: want a secret of 64 or 96 hex digits, got 80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadKeyLog("keys.log", strings.NewReader("# keys\n\n"+tc.line+"\n"))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}

// TestTLSKeyUpdate: a TLS 1.3 connection whose keys change mid-way
// (KeyUpdate, asked of both sides: OpenSSL's s_client "K" command, to Go's
// server) is read on with the next traffic secrets. Without openssl the
// test is skipped, loudly, unless REPLAY_CI=1.
func TestTLSKeyUpdate(t *testing.T) {
	bin, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("REPLAY_CI") == "1" {
			t.Fatal("openssl is not installed, and REPLAY_CI=1")
		}
		t.Skip("SKIPPED: openssl is not installed (apt-get install openssl); this test did not run")
	}
	srv := newTLSServer(t, &tls.Config{})
	proxy := newRecProxy(t, srv.Listener.Addr().String())
	keyFile := filepath.Join(t.TempDir(), "keys.log")
	cmd := exec.Command(bin, "s_client", "-connect", proxy.ln.Addr().String(), "-servername", "example.com", "-tls1_3", "-keylogfile", keyFile)
	in, _ := cmd.StdinPipe()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); strings.Count(out.String(), "HTTP/1.1 200 OK") < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no answer %d from s_client:\n%s", n, out.String())
			}
		}
	}
	io.WriteString(in, "GET /before HTTP/1.1\r\nHost: example.com\r\n\r\n")
	waitFor(1)
	io.WriteString(in, "K\n") // KeyUpdate, update_requested: the server updates its keys too
	time.Sleep(200 * time.Millisecond)
	io.WriteString(in, "GET /after HTTP/1.1\r\nHost: example.com\r\n\r\n")
	waitFor(2)
	in.Close()
	cmd.Process.Kill()
	cmd.Wait()
	if !strings.Contains(out.String(), "KEYUPDATE") {
		t.Fatalf("s_client sent no KeyUpdate:\n%s", out.String())
	}
	keys, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	kl, err := ReadKeyLog(keyFile, bytes.NewReader(keys))
	if err != nil {
		t.Fatal(err)
	}
	r := importCaptures(t, Options{KeyLog: kl}, "capture.pcap", proxy.capture(t))
	wantPairs(t, r, "GET /before -> 200", "GET /after -> 200")
	if len(r.skips) != 0 {
		t.Errorf("skips %q", r.skips)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTLSSessionID: TLS 1.2 connections that resume a session by its
// session ID (OpenSSL's s_server without tickets, s_client -sess_in) are
// decrypted with their own CLIENT_RANDOM lines, and, when the key log
// lacks them, with the master secret of the session they resume. Without
// openssl the test is skipped, loudly, unless REPLAY_CI=1.
func TestTLSSessionID(t *testing.T) {
	bin, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("REPLAY_CI") == "1" {
			t.Fatal("openssl is not installed, and REPLAY_CI=1")
		}
		t.Skip("SKIPPED: openssl is not installed (apt-get install openssl); this test did not run")
	}
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if out, err := exec.Command(bin, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=example.com").CombinedOutput(); err != nil {
		t.Fatalf("openssl req: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // s_server takes the port
	srv := exec.Command(bin, "s_server", "-accept", addr, "-cert", cert, "-key", key, "-tls1_2", "-no_ticket", "-www", "-quiet")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("s_server does not listen")
		}
	}
	proxy := newRecProxy(t, addr)
	keyFile, sess := filepath.Join(dir, "keys.log"), filepath.Join(dir, "sess.pem")
	for i, sessArg := range []string{"-sess_out", "-sess_in"} {
		cmd := exec.Command(bin, "s_client", "-connect", proxy.ln.Addr().String(), "-servername", "example.com", "-tls1_2",
			"-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256", "-keylogfile", keyFile, sessArg, sess, "-ign_eof")
		cmd.Stdin = strings.NewReader(fmt.Sprintf("GET /conn%d HTTP/1.0\r\n\r\n", i))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "HTTP/1.0 200 ok") {
			t.Fatalf("s_client %d: %v\n%s", i, err, out)
		}
		if reused := strings.Contains(string(out), "Reused, TLSv1.2"); reused != (i == 1) {
			t.Fatalf("s_client %d: reused %v\n%s", i, reused, out)
		}
	}
	keys, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(string(keys)), "\n") {
		if strings.HasPrefix(l, "CLIENT_RANDOM ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("the key log has %d CLIENT_RANDOM lines, want 2:\n%s", len(lines), keys)
	}
	capture := proxy.capture(t)
	for _, tc := range []struct {
		name string
		keys string
	}{
		{"each its own line", lines[0] + "\n" + lines[1] + "\n"},
		{"the resumed connection's line missing", lines[0] + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kl, err := ReadKeyLog("keys.log", strings.NewReader(tc.keys))
			if err != nil {
				t.Fatal(err)
			}
			r := importCaptures(t, Options{KeyLog: kl}, "capture.pcap", capture)
			wantPairs(t, r, "GET /conn0 -> 200", "GET /conn1 -> 200")
			if len(r.skips) != 0 || r.st.TLS != 2 {
				t.Errorf("%s; skips %q", r.st.Summary(), r.skips)
			}
		})
	}
	// Without the session's line, neither can be read: counted, named.
	kl, _ := ReadKeyLog("keys.log", strings.NewReader(lines[1]+"\n"))
	r := importCaptures(t, Options{KeyLog: kl}, "capture.pcap", capture)
	wantSkips(t, r, "no key in the key log (CLIENT_RANDOM for client random")
	if len(r.pairs) != 1 {
		t.Errorf("pairs %q, want the resumed connection's, with its own line", shorts(r.pairs))
	}
}
