package mock

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/tlsca"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/rs/zerolog"
)

// TestBadInput: every bad input is refused before anything is served,
// naming the flag (or the file, the line) and what was expected.
func TestBadInput(t *testing.T) {
	_, caOpt := testCA(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	in := rec{method: "GET", uri: "/in", host: "svc", direction: "IN", status: 200, resBody: "in"}
	inOnly := file(t, in, in)
	out := file(t, polled()...)
	https := file(t, rec{method: "GET", uri: "/s", host: "secure", https: true, status: 200, resBody: "s"})
	dirAsFile := t.TempDir()
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"no OUT pair", Options{File: inOnly}, "no OUT pair to answer with (the file holds 2 IN pairs and 0 OUT, before --keep/--drop)"},
		{"no OUT pair names the flag", Options{File: inOnly}, "--keep direction=IN answers as the service itself"},
		{"nothing after --keep", Options{File: out, Keep: []string{"direction=OUT", "method=POST"}}, "no pair left after --keep and --drop (the file holds 0 IN pairs and 3 OUT)"},
		{"port in use", Options{File: out, Listen: busy.Addr().String()}, "--listen " + busy.Addr().String() + ": listen tcp"},
		{"serve port in use", Options{File: out, Serve: []string{"jobs.internal=" + busy.Addr().String()}}, "--serve " + busy.Addr().String() + ": listen tcp"},
		{"serve a host not recorded", Options{File: out, Serve: []string{"nope.internal=127.0.0.1:0"}}, "--serve nope.internal=127.0.0.1:0: nope.internal is not a host of"},
		{"unreadable CA", Options{File: out, CA: tlsca.Options{Cert: dirAsFile, Key: caOpt.Key}}, "--ca-cert: read " + dirAsFile},
		{"CA without a key", Options{File: out, CA: tlsca.Options{Cert: caOpt.Cert}}, "--ca-cert without --ca-key"},
		{"https pairs without a CA", Options{File: https}, "holds 1 pairs recorded over https: give the CA"},
		{"no address", Options{File: out, Listen: "", Serve: nil, Latency: "bad"}, "--latency: want recorded, 0 or a factor"},
		{"bad serve", Options{File: out, Serve: []string{"nohost"}}, "--serve: want HOST=ADDR"},
		{"bad order", Options{File: out, Order: "random"}, "--order: want global or session"},
		{"session without order", Options{File: out, Session: "header:X"}, "--session: counts per session with --order session only"},
		{"bad miss status", Options{File: out, MissStatus: 99}, "--miss-status: want a status from 200 to 599"},
		{"record misses without passthrough", Options{File: out, RecordMissesTo: io.Discard}, "--record-misses: records the misses --passthrough sends on"},
		{"bad error rate", Options{File: out, Faults: Faults{ErrorRate: "5%"}}, "--error-rate: want PERCENT:STATUS"},
		{"bad error status", Options{File: out, Faults: Faults{ErrorRate: "5%:200"}}, "--error-rate 5%:200: want an error status from 400 to 599"},
		{"bad delay", Options{File: out, Faults: Faults{Delay: "10%:soon"}}, "--delay 10%:soon: want a positive duration"},
		{"bad reset rate", Options{File: out, Faults: Faults{ResetRate: "150%"}}, "--reset-rate: want a percentage"},
		{"bad keep", Options{File: out, Keep: []string{"colour=red"}}, `--keep: unknown key "colour"`},
		{"bad transforms file", Options{File: out, TransformsFile: "/nonexistent/t.yaml"}, "--transforms: open /nonexistent/t.yaml"},
		{"bad match header", Options{File: out, MatchHeaders: []string{"X Bad"}}, `--match-header: "X Bad" is not a header name`},
		{"request transform", Options{File: out, Transforms: spec(t, "transforms:\n  - path: {prefix: /a, to: /b}\n")}, "--transforms: t.yaml:2: path: rewrites the requests of a replay"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.Listen == "" && len(tt.o.Serve) == 0 && tt.o.Latency == "" {
				tt.o.Listen = "127.0.0.1:0"
			}
			s, err := Start(tt.o)
			if err == nil {
				s.Close(t.Context())
				t.Fatalf("started; want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v\nwant %q", err, tt.want)
			}
		})
	}
	// Nothing was left listening: the busy port's neighbours are free.
	if _, err := net.Dial("tcp", busy.Addr().String()); err != nil {
		t.Fatal(err)
	}
}

func filter(t *testing.T, keep ...string) *rrpair.Filter {
	t.Helper()
	f := &rrpair.Filter{}
	for _, k := range keep {
		r, err := rrpair.ParseRule(k)
		if err != nil {
			t.Fatal(err)
		}
		f.Keep = append(f.Keep, r)
	}
	return f
}

func spec(t *testing.T, yml string) *transform.Spec {
	t.Helper()
	s, err := transform.Parse([]byte(yml), "t.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSkipsUnsendable: a pair whose answer cannot be sent is skipped at
// load, with its line, and counted; the others are answered.
func TestSkipsUnsendable(t *testing.T) {
	path := file(t,
		rec{method: "GET", uri: "/ok", host: "h", status: 200, resBody: "ok"},
		rec{method: "GET", uri: "/none", host: "h"},
		rec{method: "GET", uri: "/interim", host: "h", status: 103},
		rec{method: "GET", uri: "/nobody", host: "h", status: 204, resBody: "a body"})
	var log fixture.Buffer
	s := start(t, Options{File: path, Log: zerolog.New(&log)})
	if l := log.String(); strings.Count(l, "pair skipped: its answer cannot be sent") != 3 || !strings.Contains(l, `"line":3,"reason":"status 103 is an interim answer`) {
		t.Errorf("the skipped pairs are not logged at start:\n%s", l)
	}
	r := s.Report()
	if r.Pairs != 1 || r.Skipped != 3 || len(r.SkippedPairs) != 3 {
		t.Fatalf("%d pairs, %d skipped %+v", r.Pairs, r.Skipped, r.SkippedPairs)
	}
	want := []Skip{{2, "no recorded answer (http.res.statusCode)"}, {3, "status 103 is an interim answer: a client waits for the final one"},
		{4, "status 204 has no body, and a body of 6 bytes was recorded"}}
	for i, w := range want {
		if r.SkippedPairs[i] != w {
			t.Errorf("skip %d: %+v, want %+v", i, r.SkippedPairs[i], w)
		}
	}
	if st, _, _ := do(t, http.DefaultClient, "GET", "http://"+s.Addrs()[0]+"/none", ""); st != 404 {
		t.Errorf("a skipped pair answered %d", st)
	}
	var text strings.Builder
	r.WriteText(&text)
	if !strings.Contains(text.String(), "3 lines skipped (unsendable 3)") {
		t.Errorf("text:\n%s", text.String())
	}
	// A file of nothing sendable is refused.
	if _, err := Start(Options{File: file(t, rec{method: "GET", uri: "/x", host: "h"}), Listen: "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "no pair has an answer that can be sent (1 skipped, first: line 1: no recorded answer") {
		t.Errorf("nothing sendable: %v", err)
	}
}

// TestKeepIN: --keep direction=IN mocks a service from its own recorded
// traffic.
func TestKeepIN(t *testing.T) {
	s := start(t, Options{File: file(t, rec{method: "GET", uri: "/in", host: "svc", direction: "IN", status: 200, resBody: "as the service"}),
		Filter: filter(t, "direction=IN")})
	if st, _, body := do(t, http.DefaultClient, "GET", "http://"+s.Addrs()[0]+"/in", ""); st != 200 || body != "as the service" {
		t.Errorf("%d %s", st, body)
	}
}

// TestFaults: faults drawn from --seed are the same run after run; an
// error is the flag's status, a reset cuts the connection, a delay comes
// on top of the recorded duration.
func TestFaults(t *testing.T) {
	path := file(t, polled()...)
	statuses := func(seed uint64) string {
		s := start(t, Options{File: path, Seed: seed, Faults: Faults{ErrorRate: "50%:503"}})
		c := through(s, nil, false)
		var b strings.Builder
		for range 40 {
			st, _, _ := do(t, c, "GET", "http://jobs.internal/jobs/7", "")
			b.WriteString(strconv.Itoa(st) + " ")
		}
		return b.String()
	}
	a, b, other := statuses(7), statuses(7), statuses(8)
	if a != b {
		t.Errorf("seed 7 twice:\n%s\n%s", a, b)
	}
	if a == other || !strings.Contains(a, "503") || !strings.Contains(a, "200") {
		t.Errorf("seed 7 and 8 (want both statuses, differently):\n%s\n%s", a, other)
	}
	s := start(t, Options{File: path, Faults: Faults{ErrorRate: "100%:503"}})
	st, h, body := do(t, through(s, nil, false), "GET", "http://jobs.internal/jobs/7", "")
	if st != 503 || h.Get("Content-Type") != "application/json" || !strings.Contains(body, "injected fault (--error-rate 100%:503)") {
		t.Errorf("error: %d %s", st, body)
	}
	s = start(t, Options{File: path, Faults: Faults{ResetRate: "100%"}})
	if _, err := through(s, nil, false).Get("http://jobs.internal/jobs/7"); err == nil {
		t.Error("reset: the client got an answer")
	}
	s = start(t, Options{File: file(t, rec{method: "GET", uri: "/slow", host: "h", status: 200, resBody: "x", duration: 100 * time.Millisecond}),
		Latency: "recorded", Faults: Faults{Delay: "100%:200ms"}})
	began := time.Now()
	do(t, http.DefaultClient, "GET", "http://"+s.Addrs()[0]+"/slow", "")
	if took := time.Since(began); took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("recorded 100ms + delay 200ms took %v", took)
	}
	r := s.Report()
	if r.Faults["delay"] != 1 {
		t.Errorf("faults %v", r.Faults)
	}
	// --latency 0.5 halves the recorded duration; 0 answers at once.
	s = start(t, Options{File: file(t, rec{method: "GET", uri: "/slow", host: "h", status: 200, resBody: "x", duration: 400 * time.Millisecond}), Latency: "0.5"})
	began = time.Now()
	do(t, http.DefaultClient, "GET", "http://"+s.Addrs()[0]+"/slow", "")
	if took := time.Since(began); took < 200*time.Millisecond || took > 390*time.Millisecond+2*time.Second {
		t.Errorf("--latency 0.5 of 400ms took %v", took)
	}
}

// TestAnswerTransforms: timestamps in an answer move to now, and what the
// recorded answer echoed of its request (a correlation header, an ignored
// JSON field) becomes the live request's, in a gzip body too (encoded
// again).
func TestAnswerTransforms(t *testing.T) {
	var gz bytes.Buffer
	zw := gzipWriter(&gz)
	zw.Write([]byte(`{"order":"ord-000111","trace":"trace-aaaaaa","created":"2026-11-01T10:00:05Z"}`))
	zw.Close()
	r := rec{method: "POST", uri: "/orders", host: "h", reqHeaders: []rrpair.Field{{Name: "X-Trace", Value: "trace-aaaaaa"}},
		reqBody: `{"order":"ord-000111"}`, status: 201,
		resHeaders: []rrpair.Field{{Name: "Content-Encoding", Value: "gzip"}, {Name: "Content-Type", Value: "application/json"}, {Name: "X-Trace", Value: "trace-aaaaaa"}},
		resBody:    gz.String()}
	now := recordedAt.Add(24 * time.Hour)
	s := start(t, Options{File: file(t, r), Now: func() time.Time { return now }, Ignore: []string{"order"},
		Transforms: spec(t, "transforms:\n  - timestamps: {auto: true}\n  - echo: {json: [order], headers: [X-Trace]}\n")})
	req, _ := http.NewRequest("POST", "http://"+s.Addrs()[0]+"/orders", strings.NewReader(`{"order":"ord-999999"}`))
	req.Header.Set("X-Trace", "trace-bbbbbb")
	resp, err := http.DefaultClient.Do(req) // it asked for gzip: it undoes it
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(body) != `{"order":"ord-999999","trace":"trace-bbbbbb","created":"2026-11-02T10:00:05Z"}` || resp.Header.Get("X-Trace") != "trace-bbbbbb" {
		t.Errorf("%d %s %v", resp.StatusCode, body, resp.Header)
	}
	rep := s.Report()
	if len(rep.Transforms) != 2 || rep.Transforms[0].Changed != 1 || rep.Transforms[1].Changed != 1 || rep.RewriteFailed != 0 {
		t.Errorf("transforms %+v, failed %d", rep.Transforms, rep.RewriteFailed)
	}
}

// TestIndexMemory: the index costs at most 64 bytes a pair.
func TestIndexMemory(t *testing.T) {
	const n = 20000
	var b strings.Builder
	for i := range n {
		b.WriteString(rec{method: "POST", uri: "/v1/items/" + strconv.Itoa(i) + "?page=" + strconv.Itoa(i%7), host: "api.internal",
			reqBody: `{"id":` + strconv.Itoa(i) + `,"name":"item"}`, status: 200, resBody: `{"ok":true}`}.line())
	}
	path := writeFile(t, b.String())
	f, err := openFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix, err := buildIndex(f, nil, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perPair := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("index: %.1f bytes a pair, %d signatures", perPair, ix.signatures())
	if perPair > 64 {
		t.Errorf("the index costs %.1f bytes a pair, want at most 64", perPair)
	}
	if ix.signatures() != n {
		t.Errorf("%d signatures, want %d", ix.signatures(), n)
	}
	runtime.KeepAlive(ix)
}

// TestReportJSONAndMetrics: the report counts hits, misses and answers
// never given per signature; the metrics say the same.
func TestReportJSONAndMetrics(t *testing.T) {
	s := start(t, Options{File: file(t, append(polled(), charge())...)})
	c := through(s, nil, false)
	do(t, c, "GET", "http://jobs.internal/jobs/7", "")
	do(t, c, "GET", "http://jobs.internal/jobs/8", "")
	r := s.Report()
	if r.Requests != 2 || r.Hits != 1 || r.Misses != 1 || r.UnusedAnswers != 3 || r.SignatureCount != 2 {
		t.Errorf("report %+v", r)
	}
	if sg := r.Signatures[0]; sg.Request != "GET jobs.internal/jobs/7" || sg.Answers != 3 || sg.Hits != 1 || sg.Misses != 1 || sg.Unused != 2 {
		t.Errorf("first signature %+v", sg)
	}
	var m strings.Builder
	s.WriteMetrics(&m)
	for _, want := range []string{`replay_mock_requests_total{result="hit"} 1`, `replay_mock_requests_total{result="miss"} 1`,
		`replay_mock_endpoint_requests_total{endpoint="GET /jobs/{id}",result="hit"} 1`, "# TYPE replay_mock_faults_total counter"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, m.String())
		}
	}
}
