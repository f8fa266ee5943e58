package mock

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/tlsca"
)

// recordedAt is when the test pairs were recorded.
var recordedAt = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// rec is an OUT pair to write: a call and its recorded answer.
type rec struct {
	method, uri, host string
	https             bool
	reqHeaders        []rrpair.Field
	reqBody           string
	status            int
	resHeaders        []rrpair.Field
	trailers          []rrpair.Field
	resBody           string
	version           string
	direction         string // "" is OUT
	duration          time.Duration
}

func (r rec) line() string {
	proto := "http"
	if r.https {
		proto = "https"
	}
	dir := r.direction
	if dir == "" {
		dir = "OUT"
	}
	if dir == "IN" {
		dir = ""
	}
	if r.resHeaders == nil && r.resBody != "" {
		r.resHeaders = []rrpair.Field{{Name: "Content-Type", Value: "application/json"}}
	}
	return string(rrpair.AppendLine(nil, &rrpair.Record{TS: recordedAt, Duration: r.duration, Protocol: proto, Direction: dir, Version: r.version,
		Method: r.method, URI: r.uri, Host: r.host, Headers: r.reqHeaders, Body: []byte(r.reqBody),
		Status: r.status, ResHeaders: r.resHeaders, ResTrailers: r.trailers, ResBody: []byte(r.resBody)}))
}

// file writes the pairs as a traffic file and returns its path.
func file(t testing.TB, recs ...rec) string {
	t.Helper()
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(r.line())
	}
	return writeFile(t, b.String())
}

func writeFile(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// start starts a mock on loopback, answering at once unless o says, and
// closes it when the test ends.
func start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Listen == "" && len(o.Serve) == 0 {
		o.Listen = "127.0.0.1:0"
	}
	if o.Latency == "" {
		o.Latency = "0"
	}
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	return s
}

// through is an HTTP client whose calls go through the mock as their
// proxy, trusting ca (nil: none); HTTP/2 over TLS when h2.
func through(s *Server, ca *tlsca.CA, h2 bool) *http.Client {
	u, _ := url.Parse("http://" + s.Addrs()[0])
	tr := &http.Transport{Proxy: http.ProxyURL(u), ForceAttemptHTTP2: h2, DisableCompression: true}
	if ca != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool()}
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// get does a request and returns its status, headers and body.
func do(t testing.TB, c *http.Client, method, u, body string) (int, http.Header, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// testCA is a fresh CA written to a directory, for the options that read
// it.
func testCA(t testing.TB) (*tlsca.CA, tlsca.Options) {
	t.Helper()
	dir := t.TempDir()
	ca, err := (&tlsca.Options{OutDir: dir}).Open()
	if err != nil {
		t.Fatal(err)
	}
	return ca, tlsca.Options{Cert: filepath.Join(dir, tlsca.CertFile), Key: filepath.Join(dir, tlsca.KeyFile)}
}

// closeNow closes s (its outputs flushed) before the test reads them.
func closeNow(t testing.TB, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func gzipWriter(w io.Writer) *gzip.Writer { return gzip.NewWriter(w) }
