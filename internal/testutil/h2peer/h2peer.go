// Package h2peer holds the HTTP/2 peers that the tests of the HTTP/2
// client (transport/http2), of the protocol choice (transport/negotiate)
// and of the servers talk to, and what else those tests share: RRPair lines of HTTP/2 and gRPC calls, Go's net/http servers that
// keep what they saw (cleartext HTTP/2, TLS with or without h2), a server
// written with the framer that does what a script says (resets, GOAWAY,
// windows that never open), one that answers without allocating, grpc-go
// servers, and runs of a transport over lines.
package h2peer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// PairLine builds an RRPair line: version "" leaves http.req.version out;
// headers is a raw JSON object (its key order is the order sent); body is
// sent as base64.
func PairLine(method, uri, version, headers string, body []byte) string {
	req := map[string]any{"method": method, "uri": uri, "host": "recorded.example:8080"}
	if version != "" {
		req["version"] = version
	}
	if body != nil {
		req["bodyBase64"] = base64.StdEncoding.EncodeToString(body)
	}
	raw, _ := json.Marshal(map[string]any{"http": map[string]any{"req": req}})
	if headers == "" {
		return string(raw)
	}
	return strings.Replace(string(raw), `"host":`, `"headers":`+headers+`,"host":`, 1)
}

// ReplaceHost points a line built by PairLine at another recorded host.
func ReplaceHost(line, host string) string {
	return strings.Replace(line, `"host":"recorded.example:8080"`, `"host":"`+host+`"`, 1)
}

// RunPool runs the pairs of lines once over vus VUs with tr, as a run
// does.
func RunPool(t testing.TB, tr transport.Transport, vus int, lines ...string) (*fixture.Collect, error) {
	t.Helper()
	f := fixture.OpenLines(t, lines...)
	cfg := vu.Config{Load: schedule.Load{VUs: vus}, Log: zerolog.Nop()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sink := &fixture.Collect{}
	p := &vu.Pool{File: f, Config: cfg, Sink: sink, Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.Run(ctx)
	return sink, err
}

// Exchange is what one Do gave.
type Exchange struct {
	Res  result.Result
	Body []byte
}

// DoAll checks f against tr, as a run does, then sends its pairs in order
// on one client and keeps each result and answer body.
func DoAll(t *testing.T, tr transport.Transport, f *rrpair.File) []Exchange {
	t.Helper()
	if err := tr.Check(f); err != nil {
		t.Fatal(err)
	}
	clock := func() int64 { return time.Now().UnixNano() }
	c := tr.NewClient(0, clock)
	defer c.Close()
	cur := f.NewCursor()
	var out []Exchange
	for i := range f.Len() {
		var p rrpair.Pair
		if err := cur.Decode(i, &p); err != nil {
			t.Fatal(err)
		}
		var res result.Result
		ex := Exchange{}
		if a := c.Do(&p.Req, &p, &res); a != nil {
			ex.Body = append([]byte(nil), a.RawBody()...)
		}
		ex.Res = res
		out = append(out, ex)
	}
	return out
}

// Seen is what a Go net/http server saw. Read its maps once the server is
// done.
type Seen struct {
	mu     sync.Mutex
	Protos map[int]int // requests by major version
	URIs   map[string]int
	Bodies map[string]string
	Hdrs   map[string]http.Header // with Host
	Conns  atomic.Int64
}

// NewSeen is an empty Seen.
func NewSeen() *Seen {
	return &Seen{Protos: map[int]int{}, URIs: map[string]int{}, Bodies: map[string]string{}, Hdrs: map[string]http.Header{}}
}

// Handler keeps what a request was, and answers "ok:" and its target,
// with the length of its body in X-Len.
func (s *Seen) Handler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.Protos[r.ProtoMajor]++
	s.URIs[r.RequestURI]++
	s.Bodies[r.RequestURI] = string(body)
	h := r.Header.Clone()
	h.Set("Host", r.Host)
	s.Hdrs[r.RequestURI] = h
	s.mu.Unlock()
	w.Header().Set("X-Len", fmt.Sprint(len(body)))
	io.WriteString(w, "ok:"+r.RequestURI)
}

// ConnState counts the connections.
func (s *Seen) ConnState(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		s.Conns.Add(1)
	}
}

// H2CServer is a Go net/http server that speaks cleartext HTTP/2 only.
func H2CServer(t *testing.T, s *Seen) string {
	return ServeH2C(t, &http.Server{Handler: http.HandlerFunc(s.Handler), ConnState: s.ConnState})
}

// ServeH2C serves srv, set to speak cleartext HTTP/2 only, on loopback
// until the test ends, and returns its URL.
func ServeH2C(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv.Protocols = &p
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TLSServer is an httptest TLS server, offering h2 or not.
func TLSServer(t *testing.T, s *Seen, h2 bool) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(s.Handler))
	srv.EnableHTTP2 = h2
	srv.Config.ConnState = s.ConnState
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}
