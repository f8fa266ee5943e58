package capture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func TestProxyChunkedSessionsRedaction(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"part":1,`))
		w.(http.Flusher).Flush() // chunked
		w.Write([]byte(`"token":"live-secret"}`))
	}))
	defer up.Close()
	var out fixture.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: strings.TrimPrefix(up.URL, "http://"), Session: "cookie:sid", RedactJSON: []string{"token", "user.password"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sid := range []string{"a", "b", "a"} {
		req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/login", strings.NewReader(`{"user":{"name":"ada","password":"pw"}}`))
		req.Header.Set("Cookie", "theme=dark; sid="+sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != `{"part":1,"token":"live-secret"}` {
			t.Errorf("the client got %q: the answer must pass unchanged", body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Pairs != 3 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}
	f, err := rrpair.OpenReader(bytes.NewReader(out.Bytes()), "rec.jsonl", rrpair.Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.Bytes())
	}
	defer f.Close()
	if f.Len() != 3 || f.Sessions() != 2 {
		t.Errorf("%d pairs in %d sessions, want 3 in 2 (by cookie)", f.Len(), f.Sessions())
	}
	var p0 rrpair.Pair
	if err := f.NewCursor().WithResponses().Decode(0, &p0); err != nil {
		t.Fatal(err)
	}
	var res, req map[string]any
	json.Unmarshal(p0.Res.Body, &res)
	json.Unmarshal(p0.Req.Body, &req)
	if res["token"] != Redacted || res["part"] == nil || req["user"].(map[string]any)["password"] != Redacted {
		t.Errorf("recorded bodies: %s / %s", p0.Req.Body, p0.Res.Body)
	}
	for _, h := range p0.Res.Headers {
		if strings.EqualFold(string(h.Name), "Transfer-Encoding") {
			t.Error("Transfer-Encoding recorded: the body is stored de-chunked")
		}
	}
}

func TestProxyExpectContinue(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	defer up.Close()
	var out fixture.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: strings.TrimPrefix(up.URL, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/upload", strings.NewReader(strings.Repeat("x", 4096)))
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 10 * time.Second}, Timeout: 5 * time.Second}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 4096 || time.Since(start) > 3*time.Second {
		t.Errorf("status %d, %d bytes, in %v: want the body echoed without waiting out the client's timeout", resp.StatusCode, len(body), time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	closing := time.Now()
	p.Close(ctx)
	if took := time.Since(closing); took > 2*time.Second {
		t.Errorf("Close took %v with an idle keep-alive connection open: it must cut idle reads off at once", took)
	}
	if !strings.Contains(out.String(), `"statusCode":200`) {
		t.Errorf("recorded: %s", out.String())
	}
}

func TestProxyMaxBody(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(bytes.Repeat(b, 2))
	}))
	defer up.Close()
	var out fixture.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: strings.TrimPrefix(up.URL, "http://"), MaxBody: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, 80, 200} {
		resp, err := http.Post("http://"+p.Addr()+"/echo", "text/plain", strings.NewReader(strings.Repeat("x", n)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(body) != 2*n {
			t.Errorf("%d bytes sent, %d echoed: the proxy must pass everything", n, len(body))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.Close(ctx)
	if st := p.Stats(); st.Pairs != 2 || st.TooLarge != 1 {
		t.Errorf("stats %+v, want 2 recorded and 1 too large", st)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"res":{"statusCode":200,"headers"`) || strings.Contains(lines[1], strings.Repeat("x", 160)) {
		t.Errorf("recorded:\n%s", out.String())
	}
}

// rawUpstream is a loopback upstream that reads requests as they come
// (any target) and writes answer to each. It returns its address.
func rawUpstream(t *testing.T, answer string) string {
	return rawUpstreamSeen(t, answer).addr
}

// readAnswer reads one answer off a raw client connection.
func readAnswer(t *testing.T, br *bufio.Reader, method string) *rawhttp.Message {
	t.Helper()
	m, err := rawhttp.Read(br, false, method, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestProxySkipsUnreplayable: a request Open would refuse in a file (a
// target that is not a path) is passed on and answered, but not recorded,
// so that the recorded file still opens.
func TestProxySkipsUnreplayable(t *testing.T) {
	up := rawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := Listen("127.0.0.1:0", out, Options{Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for _, req := range []string{"GET foo HTTP/1.1\r\nHost: h\r\n\r\n", "GET /ok HTTP/1.1\r\nHost: h\r\n\r\n"} {
		io.WriteString(c, req)
		if m := readAnswer(t, br, "GET"); m.Status != 200 || string(m.Body) != "ok" {
			t.Errorf("%q: the client got %q", req, m.Raw)
		}
	}
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Pairs != 1 || st.Unreplayable != 1 || st.Errors != 0 {
		t.Errorf("stats %+v, want 1 pair and 1 unreplayable", st)
	}
	f, err := rrpair.Open(path, rrpair.Options{})
	if err != nil {
		rec, _ := os.ReadFile(path)
		t.Fatalf("the recorded file does not open: %v\n%s", err, rec)
	}
	defer f.Close()
	if f.Len() != 1 {
		t.Errorf("%d pairs recorded, want 1", f.Len())
	}
}

// TestProxyInterim: interim answers from upstream (a 103 Early Hints, a 100
// the client did not have from the proxy) pass on to the client, the final
// one follows, and the pair records the final status. A 100 the proxy gave
// the client itself is not passed on twice, and an HTTP/1.0 client gets
// none.
func TestProxyInterim(t *testing.T) {
	up := rawUpstream(t, "HTTP/1.1 100 Continue\r\n\r\n"+
		"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"+
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	var out fixture.Buffer
	p, err := Listen("127.0.0.1:0", &out, Options{Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	answers := func() []int { // statuses up to the final answer
		var got []int
		for {
			m := readAnswer(t, br, "POST")
			got = append(got, m.Status)
			if m.Status >= 200 {
				return got
			}
		}
	}
	// Expecting 100-continue: the proxy answers 100, then the body goes.
	io.WriteString(c, "POST /a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
	if m := readAnswer(t, br, "POST"); m.Status != 100 {
		t.Fatalf("status %d, want the proxy's 100 before the body", m.Status)
	}
	io.WriteString(c, "{}")
	if got := answers(); fmt.Sprint(got) != "[103 200]" {
		t.Errorf("with the proxy's 100: got %v, want [103 200]", got)
	}
	// Not expecting it: upstream's 100 passes on too.
	io.WriteString(c, "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}")
	if got := answers(); fmt.Sprint(got) != "[100 103 200]" {
		t.Errorf("without: got %v, want [100 103 200]", got)
	}
	// An HTTP/1.0 client takes no 1xx.
	io.WriteString(c, "POST /c HTTP/1.0\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}")
	if got := answers(); fmt.Sprint(got) != "[200]" {
		t.Errorf("HTTP/1.0: got %v, want [200]", got)
	}
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Pairs != 3 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}
	if got := out.String(); strings.Count(got, `"statusCode":200`) != 3 || strings.Contains(got, `"statusCode":1`) {
		t.Errorf("recorded:\n%s", got)
	}
}

// inPairs opens a reverse recording (IN pairs, each with its host).
func inPairs(t *testing.T, b []byte) []rrpair.Pair {
	t.Helper()
	f, err := rrpair.OpenReader(bytes.NewReader(b), "rec.jsonl", rrpair.Options{RequireHost: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	t.Cleanup(func() { f.Close() })
	ps := make([]rrpair.Pair, f.Len())
	for i := range ps {
		if err := f.NewCursor().Decode(i, &ps[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ps
}

// TestReverseRecordsWhatWasRecorded: the reverse recorder writes the
// upstream's authority as each pair's host (a replay without --target
// goes there), keeps the client's Host header as it was sent, and writes
// the lines in the order the requests began: under concurrent load with
// answers finishing in another order, ts ascends and nothing is out of
// order; an exchange under way longer than the reorder window is passed
// over, written when it ends, counted out of order.
func TestReverseRecordsWhatWasRecorded(t *testing.T) {
	slow := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			<-slow
		case "/load":
			ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	authority := strings.TrimPrefix(up.URL, "http://")

	t.Run("under load", func(t *testing.T) {
		var out fixture.Buffer
		p, err := Listen("127.0.0.1:0", &out, Options{Upstream: authority})
		if err != nil {
			t.Fatal(err)
		}
		const n = 40
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Later requests answer sooner: completion order is not begin order.
				resp, err := http.Get(fmt.Sprintf("http://%s/load?ms=%d", p.Addr(), (n-i)%7*5))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		closeProxy(t, p)
		ps := inPairs(t, out.Bytes())
		if len(ps) != n || p.Stats().OutOfOrder != 0 {
			t.Fatalf("%d pairs, %d out of order; want %d, 0", len(ps), p.Stats().OutOfOrder, n)
		}
		for i := range ps {
			ts, _ := ps[i].UnixNano()
			if prev, _ := ps[max(i-1, 0)].UnixNano(); ts < prev {
				t.Errorf("line %d: ts %d before the previous line's %d", i+1, ts, prev)
			}
			if string(ps[i].Req.Host) != authority {
				t.Errorf("line %d: host %q, want the upstream's %q", i+1, ps[i].Req.Host, authority)
			}
			if h := header(&ps[i], "Host"); h != p.Addr() {
				t.Errorf("line %d: Host header %q, want the client's %q", i+1, h, p.Addr())
			}
		}
	})

	t.Run("past the window", func(t *testing.T) {
		var out fixture.Buffer
		p, err := Listen("127.0.0.1:0", &out, Options{Upstream: authority, Window: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := http.Get("http://" + p.Addr() + "/slow"); err == nil {
				resp.Body.Close()
			}
		}()
		deadline := time.Now().Add(5 * time.Second)
		for p.w.Begun() < 1 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // the slow request began
		}
		for _, path := range []string{"/a", "/b"} {
			resp, err := http.Get("http://" + p.Addr() + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		for !strings.Contains(out.String(), "/b") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // written once the slow one is past the window
		}
		close(slow)
		<-done
		closeProxy(t, p)
		ps := inPairs(t, out.Bytes())
		var uris []string
		for i := range ps {
			uris = append(uris, string(ps[i].Req.URI))
		}
		if strings.Join(uris, " ") != "/a /b /slow" || p.Stats().OutOfOrder != 1 {
			t.Errorf("recorded %v, %d out of order; want /a /b /slow, 1", uris, p.Stats().OutOfOrder)
		}
	})
}

// header is the recorded value of the request header name.
func header(p *rrpair.Pair, name string) string {
	for _, h := range p.Req.Headers {
		if strings.EqualFold(string(h.Name), name) {
			return string(h.Value)
		}
	}
	return ""
}
