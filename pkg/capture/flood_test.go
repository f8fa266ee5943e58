package capture

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/tlsca"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestForwardHTTP2StreamsBounded: a client inside a CONNECT tunnel that
// opens 150 HTTP/2 streams at once, to an upstream that holds every
// request, has at most 100 of them passed on at a time (it had all 150:
// net/http's default of 250 streams a connection), the rest refused.
func TestForwardHTTP2StreamsBounded(t *testing.T) {
	h := holdingUpstream(t)
	defer h.up.Close()
	var out fixture.Buffer
	p, ca := forwardProxy(t, &out, h.caFile, nil)
	defer closeProxy(t, p)
	defer close(h.release) // before the proxy closes: it waits for its exchanges
	c := tunnelH2(t, p.Addr(), h.target, ca)
	defer c.Close()
	openStreams(t, c, h.target, 150)
	// Until the upstream holds 100, then a while for any more to come.
	for deadline := time.Now().Add(10 * time.Second); h.inflight.Load() < 100 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if got := h.most.Load(); got != 100 {
		t.Errorf("the upstream held %d requests at once, want 100 (the streams a connection)", got)
	}
}

// tunnelH2 opens a CONNECT tunnel to target through the forward proxy at
// addr, speaks TLS in it (trusting ca) with ALPN h2, and sends the HTTP/2
// preface and an empty SETTINGS.
func tunnelH2(t *testing.T, addr, target string, ca *tlsca.CA) net.Conn {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	raw.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(raw, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	host, _, _ := net.SplitHostPort(target)
	c := tls.Client(raw, &tls.Config{RootCAs: ca.Pool(), ServerName: host, NextProtos: []string{"h2"}})
	if err := c.Handshake(); err != nil || c.ConnectionState().NegotiatedProtocol != "h2" {
		t.Fatalf("TLS in the tunnel: %v, ALPN %q", err, c.ConnectionState().NegotiatedProtocol)
	}
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := http2.NewFramer(c, c).WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestForwardCloseCutsHTTP2Exchanges: Close while HTTP/2 streams wait on
// an upstream that never answers returns once its grace is over, the
// exchanges cut (they were left running against the pool and the writer
// Close had closed, which the race detector caught).
func TestForwardCloseCutsHTTP2Exchanges(t *testing.T) {
	h := holdingUpstream(t)
	defer h.up.Close()
	defer close(h.release)
	var out fixture.Buffer
	p, ca := forwardProxy(t, &out, h.caFile, nil)
	c := tunnelH2(t, p.Addr(), h.target, ca)
	defer c.Close()
	openStreams(t, c, h.target, 3)
	for deadline := time.Now().Add(10 * time.Second); h.inflight.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.inflight.Load(); n != 3 {
		t.Fatalf("the upstream holds %d requests, want 3", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %v with a grace of 300ms", took)
	}
	if st := p.Stats(); st.Pairs != 0 || st.Errors != 3 {
		t.Errorf("pairs %d, errors %d: want the 3 cut exchanges counted as errors, none recorded", st.Pairs, st.Errors)
	}
}

// holding is an HTTP/2 upstream over TLS that holds every request until
// release is closed (10 s at most), counting those it holds.
type holding struct {
	up             *httptest.Server
	caFile, target string
	inflight, most atomic.Int64
	release        chan struct{}
}

func holdingUpstream(t *testing.T) *holding {
	t.Helper()
	leaf, caFile := upstreamLeaf(t)
	h := &holding{caFile: caFile, release: make(chan struct{})}
	h.up = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := h.inflight.Add(1)
		defer h.inflight.Add(-1)
		for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
		}
		select {
		case <-h.release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "ok")
	}))
	h.up.EnableHTTP2 = true
	h.up.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	h.up.StartTLS()
	h.target = strings.TrimPrefix(h.up.URL, "https://")
	return h
}

// openStreams opens n streams on c, GETs of target with no body.
func openStreams(t *testing.T, c net.Conn, target string, n int) {
	t.Helper()
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	fr := http2.NewFramer(c, c)
	for i := range n {
		block.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", target}, {":path", "/" + strconv.Itoa(i)}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
}

// upstreamLeaf is a certificate for 127.0.0.1 of a fresh CA, for an
// upstream, and the CA's certificate file, for the proxy to trust.
func upstreamLeaf(t *testing.T) (*tls.Certificate, string) {
	t.Helper()
	upCA, err := tlsca.Generate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := upCA.Write(dir); err != nil {
		t.Fatal(err)
	}
	leaf, err := upCA.Leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return leaf, filepath.Join(dir, tlsca.CertFile)
}
