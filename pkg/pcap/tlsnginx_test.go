package pcap

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/daemons"
	"github.com/replay-dev/replay/pkg/run"
)

// nginxTLSConf is nginx serving TLS 1.2 and 1.3, HTTP/1.1 and HTTP/2, on
// loopback, in one process, everything under its prefix.
const nginxTLSConf = `daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  server {
    listen 127.0.0.1:%[2]d ssl http2;
    ssl_certificate %[1]s/cert.pem;
    ssl_certificate_key %[1]s/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / { return 200 "ok $request_method $request_uri\n"; }
    location /missing { return 404; }
    location /orders { return 201 "created\n"; }
  }
}
`

// TestTLSNginx: curl against nginx over TLS 1.3 and TLS 1.2, HTTP/1.1 and
// HTTP/2, its key log written through SSLKEYLOGFILE, the traffic recorded
// as a capture: imported with the key log, the pairs are the (method,
// path) pairs tshark decrypts, with nginx's statuses; replayed to nginx,
// the statuses are the same. Without nginx or curl the test is skipped,
// loudly, unless REPLAY_CI=1 (.ci/run installs both).
func TestTLSNginx(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("REPLAY_CI") == "1" {
			t.Fatal("curl is not installed, and REPLAY_CI=1: .ci/run installs it")
		}
		t.Skip("SKIPPED: curl is not installed (apt-get install curl); CI installs it; this test did not run")
	}
	dir := t.TempDir()
	writeCert(t, dir, "shop.example")
	addr, _ := daemons.Nginx(t, dir, func(port int) string { return fmt.Sprintf(nginxTLSConf, dir, port) })

	proxy := newRecProxy(t, addr)
	_, pport, _ := net.SplitHostPort(proxy.ln.Addr().String())
	keyFile := filepath.Join(dir, "keys.log")
	var want []string
	for _, version := range [][]string{{"--tlsv1.3"}, {"--tlsv1.2", "--tls-max", "1.2"}} {
		for _, h := range []string{"--http1.1", "--http2"} {
			var args []string
			for i, r := range []struct{ method, target, status string }{{"GET", "/a?x=1", "200"}, {"GET", "/missing", "404"}, {"POST", "/orders", "201"}} {
				if i > 0 {
					args = append(args, "--next")
				}
				args = append(args, "-sS", "-k", "--max-time", "10", "--resolve", "shop.example:"+pport+":127.0.0.1", h, "-o", "/dev/null", "-X", r.method)
				args = append(append(args, version...), "https://shop.example:"+pport+r.target)
				want = append(want, r.method+" "+r.target+" -> "+r.status)
			}
			c := exec.Command(curl, args...)
			c.Env = append(os.Environ(), "SSLKEYLOGFILE="+keyFile)
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("curl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	}
	slices.Sort(want)
	keys, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	kl, err := ReadKeyLog(keyFile, bytes.NewReader(keys))
	if err != nil {
		t.Fatal(err)
	}
	capture := proxy.capture(t)
	r := importCaptures(t, Options{KeyLog: kl}, "capture.pcap", capture)
	var got, methods []string
	versions := map[string]int{}
	for _, p := range r.pairs {
		got = append(got, p.String())
		methods = append(methods, p.Method+" "+p.URI)
		versions[p.Version]++
	}
	slices.Sort(got)
	slices.Sort(methods)
	if !slices.Equal(got, want) || len(r.skips) != 0 || r.st.TLS != 4 || versions["1.1"] != 6 || versions["2"] != 6 {
		t.Errorf("imported %q\nwant %q\nsummary %s; skips %q", got, want, r.st.Summary(), r.skips)
	}
	noKeyBytes(t, keys, r.out+strings.Join(r.skips, "\n"))

	if _, err := exec.LookPath("tshark"); err == nil || os.Getenv("REPLAY_CI") == "1" {
		capPath := filepath.Join(dir, "capture.pcap")
		os.WriteFile(capPath, capture, 0o644)
		if ts := tsharkTLS(t, capPath, keyFile); !slices.Equal(methods, ts) {
			t.Errorf("imported %q\ntshark decrypts %q", methods, ts)
		}
	} else {
		t.Log("SKIPPED: tshark is not installed: the comparison with tshark did not run")
	}

	sum := replay(t, r.out, "https://"+addr, func(o *run.Options) { o.HTTP.Insecure = true })
	wantStatus := map[string]int64{}
	for _, p := range r.pairs {
		wantStatus[strconv.Itoa(p.Status)]++
	}
	if fmt.Sprint(sum.Status) != fmt.Sprint(wantStatus) || sum.Requests != int64(len(r.pairs)) {
		t.Errorf("replayed to nginx: %d requests, statuses %v; want %v", sum.Requests, sum.Status, wantStatus)
	}
}

// writeCert writes a self-signed ECDSA certificate for name and its key
// to dir/cert.pem and dir/key.pem.
func writeCert(t *testing.T, dir, name string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}
