package mock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/rs/zerolog"
)

// polled is a job polled until done, as recorded: running, running,
// succeeded.
func polled() []rec {
	var out []rec
	for _, state := range []string{"running", "running", "succeeded"} {
		out = append(out, rec{method: "GET", uri: "/jobs/7", host: "jobs.internal", status: 200, resBody: `{"state":"` + state + `"}`})
	}
	return out
}

// TestPolledJobInOrder: the k-th identical call gets the k-th recorded
// answer, then the last again; with --cycle round again; with --order
// session each client connection counts its own.
func TestPolledJobInOrder(t *testing.T) {
	path := file(t, polled()...)
	states := func(c *http.Client, u string, n int) string {
		var got []string
		for range n {
			_, _, body := do(t, c, "GET", u, "")
			var v struct{ State string }
			json.Unmarshal([]byte(body), &v)
			got = append(got, v.State)
		}
		return strings.Join(got, ",")
	}
	s := start(t, Options{File: path})
	if got := states(through(s, nil, false), "http://jobs.internal/jobs/7", 5); got != "running,running,succeeded,succeeded,succeeded" {
		t.Errorf("in order: %s", got)
	}
	s = start(t, Options{File: path, Cycle: true})
	if got := states(through(s, nil, false), "http://jobs.internal/jobs/7", 5); got != "running,running,succeeded,running,running" {
		t.Errorf("--cycle: %s", got)
	}
	// Origin-form, to a file of one host: no mapping needed.
	s = start(t, Options{File: path, Order: "session"})
	a := &http.Client{Transport: &http.Transport{}}
	b := &http.Client{Transport: &http.Transport{}}
	base := "http://" + s.Addrs()[0] + "/jobs/7"
	first := states(a, base, 2)
	second := states(b, base, 1)
	if first != "running,running" || second != "running" || states(a, base, 1) != "succeeded" {
		t.Errorf("--order session: connection a %s, b %s", first, second)
	}
	r := s.Report()
	if r.Hits != 4 || r.Misses != 0 || r.UnusedAnswers != 0 {
		t.Errorf("report: %d hits, %d misses, %d unused", r.Hits, r.Misses, r.UnusedAnswers)
	}
}

// TestSessionByHeader: --order session --session header:X-Tenant counts
// per value of the header, whatever the connection.
func TestSessionByHeader(t *testing.T) {
	s := start(t, Options{File: file(t, polled()...), Order: "session", Session: "header:X-Tenant"})
	call := func(tenant string) string {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		req, _ := http.NewRequest("GET", "http://"+s.Addrs()[0]+"/jobs/7", nil)
		req.Header.Set("X-Tenant", tenant)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	got := []string{call("a"), call("a"), call("b"), call("a")}
	want := []string{`{"state":"running"}`, `{"state":"running"}`, `{"state":"running"}`, `{"state":"succeeded"}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
}

// charge is a recorded POST whose JSON body carries rotating values.
func charge() rec {
	return rec{method: "POST", uri: "/v1/charges?currency=usd&capture=true", host: "payments.example.com",
		reqBody: `{"amount":100,"customer":{"id":"cus_1","email":"ada@example.com"},"idempotency_key":"0b5c1e7a-1f3e-4c2e-9a55-2f1c3b7d9e10","requested_at":"2026-11-01T10:00:00Z"}`,
		status:  201, resBody: `{"id":"ch_1","status":"succeeded"}`}
}

// TestJSONCanonicalAndRotating: a JSON body with its keys reordered and
// white space added is an exact match; one whose rotating values (a UUID,
// a time) are new matches on the second pass; --no-auto-ignore keeps the
// first pass only.
func TestJSONCanonicalAndRotating(t *testing.T) {
	path := file(t, charge())
	s := start(t, Options{File: path})
	c := through(s, nil, false)
	reordered := `{ "requested_at": "2026-11-01T10:00:00Z", "idempotency_key": "0b5c1e7a-1f3e-4c2e-9a55-2f1c3b7d9e10",
	  "customer": {"email": "ada@example.com", "id": "cus_1"}, "amount": 100 }`
	if st, _, body := do(t, c, "POST", "http://payments.example.com/v1/charges?capture=true&currency=usd", reordered); st != 201 || body != `{"id":"ch_1","status":"succeeded"}` {
		t.Errorf("reordered keys and query: %d %s", st, body)
	}
	rotated := `{"amount":100,"customer":{"id":"cus_1","email":"ada@example.com"},"idempotency_key":"6f9619ff-8b86-d011-b42d-00c04fc964ff","requested_at":"2026-11-24T08:31:07.123Z"}`
	if st, _, body := do(t, c, "POST", "http://payments.example.com/v1/charges?currency=usd&capture=true", rotated); st != 201 {
		t.Errorf("rotated ids: %d %s", st, body)
	}
	r := s.Report()
	if r.Hits != 2 || r.HitsLoose != 1 || r.Misses != 0 {
		t.Errorf("%d hits (%d loose), %d misses: want 2 (1 loose), 0", r.Hits, r.HitsLoose, r.Misses)
	}
	// Another amount is another call, rotating values or not.
	other := strings.Replace(rotated, `"amount":100`, `"amount":200`, 1)
	if st, _, _ := do(t, c, "POST", "http://payments.example.com/v1/charges?currency=usd&capture=true", other); st != 404 {
		t.Errorf("another amount: %d, want a miss", st)
	}

	s = start(t, Options{File: path, NoAutoIgnore: true})
	if st, _, _ := do(t, through(s, nil, false), "POST", "http://payments.example.com/v1/charges?currency=usd&capture=true", rotated); st != 404 {
		t.Errorf("--no-auto-ignore: %d, want a miss", st)
	}
	// --ignore by hand.
	s = start(t, Options{File: path, NoAutoIgnore: true, Ignore: []string{"idempotency_key", "requested_at"}})
	if st, _, _ := do(t, through(s, nil, false), "POST", "http://payments.example.com/v1/charges?currency=usd&capture=true", rotated); st != 201 {
		t.Errorf("--ignore: %d, want a hit", st)
	}
}

// TestRedactedAndHeaders: a field recorded as REDACTED matches anything;
// headers are ignored unless --match-header names them.
func TestRedactedAndHeaders(t *testing.T) {
	r := rec{method: "POST", uri: "/login?token=REDACTED", host: "auth", reqHeaders: []rrpair.Field{{Name: "X-Region", Value: "eu"}},
		reqBody: `{"user":"ada","password":"REDACTED"}`, status: 200, resBody: `{"ok":true}`}
	path := file(t, r)
	s := start(t, Options{File: path, NoAutoIgnore: true})
	do2 := func(s *Server, region string) int {
		req, _ := http.NewRequest("POST", "http://"+s.Addrs()[0]+"/login?token=t0k3n", strings.NewReader(`{"password":"hunter2","user":"ada"}`))
		req.Header.Set("X-Region", region)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := do2(s, "us"); st != 200 {
		t.Errorf("redacted fields, another header: %d, want a hit", st)
	}
	s = start(t, Options{File: path, NoAutoIgnore: true, MatchHeaders: []string{"x-region"}})
	if st := do2(s, "us"); st != 404 {
		t.Errorf("--match-header X-Region, another value: %d, want a miss", st)
	}
	if st := do2(s, "eu"); st != 200 {
		t.Errorf("--match-header X-Region, the value: %d, want a hit", st)
	}
}

// TestMissNamesNearest: a miss is the miss status with a JSON body naming
// the nearest recorded request and what differs; it is logged, counted by
// endpoint and by signature.
func TestMissNamesNearest(t *testing.T) {
	var log fixture.Buffer
	s := start(t, Options{File: file(t, charge(), polled()[0]), Log: zerolog.New(&log)})
	c := through(s, nil, false)
	body := `{"amount":250,"customer":{"id":"cus_1","email":"ada@example.com"},"idempotency_key":"6f9619ff-8b86-d011-b42d-00c04fc964ff","requested_at":"2026-11-24T08:31:07Z"}`
	st, h, got := do(t, c, "POST", "http://payments.example.com/v1/charges?currency=eur&capture=true", body)
	if st != 404 || h.Get("Content-Type") != "application/json" {
		t.Fatalf("miss: %d %v %s", st, h, got)
	}
	var m struct {
		Error, Request string
		Nearest        *Nearest
	}
	if err := json.Unmarshal([]byte(got), &m); err != nil || m.Nearest == nil {
		t.Fatalf("miss body %s: %v", got, err)
	}
	want := []string{`query parameter currency: recorded "usd", got "eur"`, `body field amount: recorded 100, got 250`}
	if m.Nearest.Line != 1 || m.Request != "POST payments.example.com/v1/charges?currency=eur&capture=true" || strings.Join(m.Nearest.Differs, "|") != strings.Join(want, "|") {
		t.Errorf("nearest %+v of %q, want line 1 differing by %q", m.Nearest, m.Request, want)
	}
	// The miss status is the flag's.
	s2 := start(t, Options{File: file(t, charge()), MissStatus: 599})
	if st, _, _ := do(t, through(s2, nil, false), "GET", "http://payments.example.com/nope", ""); st != 599 {
		t.Errorf("--miss-status 599: %d", st)
	}
	do(t, c, "POST", "http://payments.example.com/v1/charges?currency=eur&capture=true", body)
	r := s.Report()
	if r.Misses != 2 || len(r.NearestMisses) != 1 || r.NearestMisses[0].Count != 2 {
		t.Errorf("report: %d misses, %+v", r.Misses, r.NearestMisses)
	}
	var sig *SignatureStats
	for i := range r.Signatures {
		if r.Signatures[i].Line == 1 {
			sig = &r.Signatures[i]
		}
	}
	if sig == nil || sig.Misses != 2 || sig.Hits != 0 || sig.Unused != 1 {
		t.Errorf("signature of line 1: %+v", sig)
	}
	if len(r.Endpoints) == 0 || r.Endpoints[0].Name != "POST /v1/charges" || r.Endpoints[0].Misses != 2 {
		t.Errorf("endpoints %+v", r.Endpoints)
	}
	if l := log.String(); strings.Count(l, "miss: no recorded answer") != 2 || !strings.Contains(l, `"nearest_line":1`) {
		t.Errorf("log:\n%s", l)
	}
	var text strings.Builder
	r.WriteText(&text)
	for _, w := range []string{"2 misses", "nearest, line 1: POST payments.example.com/v1/charges?currency=usd&capture=true", `query parameter currency: recorded "usd", got "eur"`} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text report lacks %q:\n%s", w, text.String())
		}
	}
}

// TestMissLogRateLimited: a burst of misses logs a few lines, then one a
// second with the count of those left out.
func TestMissLogRateLimited(t *testing.T) {
	var rl rateLimit
	now := time.Unix(1000, 0)
	logged := 0
	for range 50 {
		if _, ok := rl.allow(now); ok {
			logged++
		}
	}
	if logged != 10 {
		t.Errorf("a burst of 50 logged %d, want 10", logged)
	}
	held, ok := rl.allow(now.Add(time.Second))
	if !ok || held != 40 {
		t.Errorf("a second later: %v, %d held, want the 40 left out said", ok, held)
	}
}

// TestPlainInsideConnect: a CONNECT tunnel whose first byte is not TLS is
// plaintext HTTP, answered as the tunnel's host.
func TestPlainInsideConnect(t *testing.T) {
	s := start(t, Options{File: file(t, polled()[2], rec{method: "GET", uri: "/a", host: "other.internal:8080", status: 200, resBody: `"a"`})})
	c, err := net.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "CONNECT other.internal:8080 HTTP/1.1\r\nHost: other.internal:8080\r\n\r\n")
	m, err := rawhttp.Read(br, false, "CONNECT", nil)
	if err != nil || m.Status != 200 {
		t.Fatalf("CONNECT: %+v %v", m, err)
	}
	for range 2 {
		io.WriteString(c, "GET /a HTTP/1.1\r\nHost: whatever\r\n\r\n")
		m, err = rawhttp.Read(br, false, "GET", nil)
		if err != nil || m.Status != 200 || string(m.Body) != `"a"` {
			t.Fatalf("inside the tunnel: %+v %v", m, err)
		}
	}
	if r := s.Report(); r.Tunnels != 1 || r.Hits != 2 {
		t.Errorf("report: %d tunnels, %d hits", r.Tunnels, r.Hits)
	}
}

// TestConnectWithoutPort: a CONNECT target must be host:port.
func TestConnectWithoutPort(t *testing.T) {
	s := start(t, Options{File: file(t, polled()...)})
	c, err := net.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT jobs.internal HTTP/1.1\r\nHost: jobs.internal\r\n\r\n")
	m, err := rawhttp.Read(bufio.NewReader(c), false, "GET", nil)
	if err != nil || m.Status != 400 || !strings.Contains(string(m.Body), "CONNECT wants host:port") {
		t.Errorf("%+v %v", m, err)
	}
}

// TestAnswerAsRecorded: status, headers (case, order, repeated
// Set-Cookie) and a compressed body go byte for byte, with the framing
// made right: the recorded Content-Length and Transfer-Encoding are not
// sent, the length is the body's.
func TestAnswerAsRecorded(t *testing.T) {
	var gz bytes.Buffer
	zw := gzipWriter(&gz)
	zw.Write([]byte(`{"big":"` + strings.Repeat("x", 500) + `"}`))
	zw.Close()
	r := rec{method: "GET", uri: "/z", host: "cdn", status: 203,
		resHeaders: []rrpair.Field{{Name: "X-Lower-case", Value: "v1"}, {Name: "Content-Encoding", Value: "gzip"}, {Name: "Set-Cookie", Value: "a=1; Path=/"},
			{Name: "Set-Cookie", Value: "a=2; Path=/x"}, {Name: "Content-Length", Value: "99999"}, {Name: "Transfer-Encoding", Value: "chunked"}},
		resBody: gz.String()}
	s := start(t, Options{File: file(t, r)})
	c, err := net.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /z HTTP/1.1\r\nHost: cdn\r\n\r\n")
	m, err := rawhttp.Read(bufio.NewReader(c), false, "GET", nil)
	if err != nil {
		t.Fatal(err)
	}
	head := string(m.Raw[:len(m.Raw)-len(m.Body)])
	if m.Status != 203 || !bytes.Equal(m.Body, gz.Bytes()) {
		t.Errorf("status %d, body %d bytes (want %d, byte for byte)", m.Status, len(m.Body), gz.Len())
	}
	for _, want := range []string{"X-Lower-case: v1\r\n", "Content-Encoding: gzip\r\n", "Set-Cookie: a=1; Path=/\r\n", "Set-Cookie: a=2; Path=/x\r\n", fmt.Sprintf("Content-Length: %d\r\n", gz.Len())} {
		if !strings.Contains(head, want) {
			t.Errorf("head lacks %q:\n%s", want, head)
		}
	}
	for _, bad := range []string{"99999", "Transfer-Encoding", "Date:", "Server:"} {
		if strings.Contains(head, bad) {
			t.Errorf("head has %q:\n%s", bad, head)
		}
	}
}

// TestPassthrough: a miss goes to the real host, is answered with its
// answer, and is recorded with --record-misses; a hit never reaches it.
func TestPassthrough(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.RequestURI+r.Header.Get("Proxy-Authorization"))
		mu.Unlock()
		w.Header().Set("X-Real", "yes")
		io.WriteString(w, "real:"+r.URL.Path)
	}))
	defer up.Close()
	host := strings.TrimPrefix(up.URL, "http://")
	missFile := filepath.Join(t.TempDir(), "misses.jsonl")
	s := start(t, Options{File: file(t, rec{method: "GET", uri: "/known", host: host, status: 200, resBody: "recorded"}),
		Passthrough: true, RecordMisses: missFile, AllowUpstream: []string{"127.0.0.0/8"}})
	c := through(s, nil, false)
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("u", "p"), Host: s.Addrs()[0]})
	if st, _, body := do(t, c, "GET", up.URL+"/known", ""); st != 200 || body != "recorded" {
		t.Errorf("hit: %d %s", st, body)
	}
	st, h, body := do(t, c, "GET", up.URL+"/new?x=1", "")
	if st != 200 || body != "real:/new" || h.Get("X-Real") != "yes" {
		t.Errorf("passed through: %d %s %v", st, body, h)
	}
	mu.Lock()
	seen := append([]string(nil), calls...)
	mu.Unlock()
	if len(seen) != 1 || seen[0] != "GET /new?x=1" {
		t.Errorf("the real host saw %v, want the miss only, without the proxy's Proxy-Authorization", seen)
	}
	rep := s.Report()
	if rep.Passthrough != 1 || rep.Hits != 1 || rep.Misses != 0 {
		t.Errorf("report: %+v", rep)
	}
	closeNow(t, s)
	recorded, _ := os.ReadFile(missFile)
	out, _ := rrpair.ParseRule("direction=OUT")
	f, err := rrpair.Open(missFile, rrpair.Options{Filter: &rrpair.Filter{Keep: []rrpair.Rule{out}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, recorded)
	}
	defer f.Close()
	var p rrpair.Pair
	f.NewCursor().WithResponses().Decode(0, &p)
	if f.Len() != 1 || string(p.Req.URI) != "/new?x=1" || string(p.Req.Host) != host || string(p.Res.Body) != "real:/new" {
		t.Errorf("recorded miss: %s", recorded)
	}
	// A real host that does not answer: 502 naming it, counted.
	s = start(t, Options{File: file(t, rec{method: "GET", uri: "/known", host: "127.0.0.1:1", status: 200, resBody: "recorded"}), Passthrough: true, AllowUpstream: []string{"127.0.0.1"}})
	if st, _, body := do(t, through(s, nil, false), "GET", "http://127.0.0.1:1/other", ""); st != 502 || !strings.Contains(body, "127.0.0.1:1") {
		t.Errorf("unreachable: %d %s", st, body)
	}
	if r := s.Report(); r.PassthroughErrors != 1 {
		t.Errorf("passthrough errors %d", r.PassthroughErrors)
	}
	// Without --allow-upstream, a loopback upstream (by address or by a
	// name resolving to it) is refused where it is dialed: 502 naming the
	// flag, and the real host sees nothing.
	s = start(t, Options{File: file(t, rec{method: "GET", uri: "/known", host: host, status: 200, resBody: "recorded"}), Passthrough: true})
	_, port, _ := net.SplitHostPort(host)
	for _, u := range []string{up.URL + "/refused", "http://localhost:" + port + "/refused"} {
		if st, _, body := do(t, through(s, nil, false), "GET", u, ""); st != 502 || !strings.Contains(body, "--allow-upstream") {
			t.Errorf("%s without --allow-upstream: %d %s, want 502 naming --allow-upstream", u, st, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 {
		t.Errorf("the real host saw %v, want nothing more", calls)
	}
}
