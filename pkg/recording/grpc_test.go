package recording

import (
	"bytes"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/answers"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// grpcResult is the answer to a gRPC call on endpoint ep, with the HTTP
// status and the gRPC code the transport found (or mapped).
func grpcResult(ep uint16, due time.Duration, httpStatus uint16, code uint8) result.Result {
	return with(at(ep, due, 0, 2*time.Millisecond), func(r *result.Result) {
		r.Status, r.GRPC, r.GRPCStatus, r.Proto = httpStatus, true, code, result.ProtoHTTP2
	})
}

// grpcFixture is a run over HTTP/2 with gRPC calls on endpoint 0 (10 OK,
// 2 NOT_FOUND, a proxy's 503 mapped to UNAVAILABLE, one code without a
// name), plain HTTP on endpoint 1 (3 × 200, 2 upgraded, 1 retried), the
// HTTP/2 error kinds on endpoint 2, and connections of each protocol.
func grpcFixture() []result.Result {
	ms := time.Millisecond
	var rs []result.Result
	for i := range 10 {
		rs = append(rs, grpcResult(0, time.Duration(i)*100*ms, 200, 0))
	}
	rs[0].Connected = true
	rs = append(rs, grpcResult(0, 1100*ms, 200, 5), grpcResult(0, 1200*ms, 200, 5))
	rs = append(rs, grpcResult(0, 1300*ms, 503, result.GRPCStatusFromHTTP(503)))
	rs = append(rs, grpcResult(0, 1400*ms, 200, 42))
	for i := range 3 {
		rs = append(rs, with(at(1, time.Duration(i)*100*ms, 0, 3*ms), func(r *result.Result) {
			r.Proto, r.Upgraded, r.Retried = result.ProtoHTTP2, i < 2, i == 2
		}))
	}
	rs[len(rs)-1].Connected = true // the retry's new connection
	for _, k := range []result.ErrorKind{result.ErrStreamReset, result.ErrGoAway, result.ErrFlowControl, result.ErrNoHTTP2} {
		rs = append(rs, with(at(2, 1500*ms, 0, 5*ms), failure(k, k != result.ErrNoHTTP2)))
	}
	// HTTP/1.1 connections: one that says so, one from a transport that
	// does not say (counted HTTP/1.1).
	rs = append(rs, with(at(1, 1600*ms, 0, ms), func(r *result.Result) { r.Connected, r.Proto = true, result.ProtoHTTP1 }))
	rs = append(rs, with(at(1, 1700*ms, 0, ms), func(r *result.Result) { r.Connected = true }))
	return rs
}

var grpcMeta = Meta{Run: result.Counters{Started: t0, VUs: 2}, Model: "closed"}

func grpcSummary(rs []result.Result) *report.Summary {
	return record(testEndpoints, rs).Summary(grpcMeta)
}

func TestGRPCCounting(t *testing.T) {
	s := grpcSummary(grpcFixture())
	tests := []struct {
		name      string
		got, want int64
	}{
		{"requests", s.Requests, 14 + 3 + 4 + 2},
		{"succeeded", s.Succeeded, 10 + 3 + 2}, // gRPC OK, the HTTP 200s
		{"failed", s.Failed, 2 + 1 + 1 + 4},    // NOT_FOUND, UNAVAILABLE, 42, the HTTP/2 errors
		{"answered", s.Answered, 14 + 3 + 2},
		{"grpc OK", s.GRPCStatus["OK"], 10},
		{"grpc NOT_FOUND", s.GRPCStatus["NOT_FOUND"], 2},
		{"grpc UNAVAILABLE (503 mapped)", s.GRPCStatus["UNAVAILABLE"], 1},
		{"grpc 42", s.GRPCStatus["42"], 1},
		{"grpc codes", int64(len(s.GRPCStatus)), 4},
		{"status 200", s.Status["200"], 13 + 3 + 2},
		{"status 503", s.Status["503"], 1},
		{"errors stream_reset", s.Errors["stream_reset"], 1},
		{"errors goaway", s.Errors["goaway"], 1},
		{"errors flow_control", s.Errors["flow_control"], 1},
		{"errors no_http2", s.Errors["no_http2"], 1},
		{"connections", s.Connections, 4},
		{"connections h2", s.ConnectionsByProtocol["h2"], 2},
		{"connections http/1.1", s.ConnectionsByProtocol["http/1.1"], 2},
		{"upgraded", s.Upgraded, 2},
		{"retried", s.Retried, 1},
		{"endpoint 0 succeeded", s.Endpoints[0].Succeeded, 10},
		{"endpoint 0 failed", s.Endpoints[0].Failed, 4},
		{"endpoint 0 grpc NOT_FOUND", s.Endpoints[0].GRPCStatus["NOT_FOUND"], 2},
		{"endpoint 1 grpc", int64(len(s.Endpoints[1].GRPCStatus)), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %d, want %d", tt.got, tt.want)
			}
		})
	}
	checkInvariants(t, s)

	// Second by second: the gRPC codes, and the failed gRPC answers that
	// came with a 2xx (the 503 is in 5xx already).
	grpc, grpcFailed := map[string]int64{}, int64(0)
	for _, iv := range s.Intervals {
		addCounts(grpc, iv.GRPCStatus)
		grpcFailed += iv.GRPCFailed
	}
	if !maps.Equal(grpc, s.GRPCStatus) || grpcFailed != 3 {
		t.Errorf("intervals: got grpc_status %v, grpc_failed %d; want %v, 3", grpc, grpcFailed, s.GRPCStatus)
	}
}

// TestGRPCAbsentWithoutGRPC: a run without gRPC calls writes no
// grpc_status, overall, per endpoint or per second.
func TestGRPCAbsentWithoutGRPC(t *testing.T) {
	m, text := decodeJSON(t, grpcSummary(fixture()))
	if _, ok := m["grpc_status"]; ok || strings.Contains(text, "grpc_status") {
		t.Errorf("grpc_status written for a run without gRPC:\n%s", text)
	}
}

func TestGRPCJSONRoundTrip(t *testing.T) {
	s := grpcSummary(grpcFixture())
	m, text := decodeJSON(t, s)
	gs, ok := m["grpc_status"].(map[string]any)
	if !ok || gs["NOT_FOUND"] != 2.0 || gs["OK"] != 10.0 {
		t.Errorf("grpc_status: got %v", m["grpc_status"])
	}
	if cp := m["connections_by_protocol"].(map[string]any); cp["h2"] != 2.0 || cp["http/1.1"] != 2.0 {
		t.Errorf("connections_by_protocol: got %v", cp)
	}
	if m["upgraded"] != 2.0 || m["retried"] != 1.0 {
		t.Errorf("upgraded %v, retried %v; want 2, 1", m["upgraded"], m["retried"])
	}
	back, err := report.ReadSummary(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(back.GRPCStatus, s.GRPCStatus) || !maps.Equal(back.ConnectionsByProtocol, s.ConnectionsByProtocol) ||
		!maps.Equal(back.Endpoints[0].GRPCStatus, s.Endpoints[0].GRPCStatus) || back.Upgraded != 2 || back.Retried != 1 {
		t.Errorf("round trip: got %v %v %v, want %v %v %v", back.GRPCStatus, back.ConnectionsByProtocol, back.Endpoints[0].GRPCStatus,
			s.GRPCStatus, s.ConnectionsByProtocol, s.Endpoints[0].GRPCStatus)
	}
}

// TestGRPCMerge: two shards' summaries, through JSON, merge into what one
// recorder fed every result says of gRPC codes, protocols, upgrades and
// retries.
func TestGRPCMerge(t *testing.T) {
	all := append(grpcFixture(), fixture()...)
	one := grpcSummary(all)
	parts := shardSummaries(t, grpcMeta, all[:7], all[7:])
	m, err := report.Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(m.GRPCStatus, one.GRPCStatus) || !maps.Equal(m.ConnectionsByProtocol, one.ConnectionsByProtocol) ||
		!maps.Equal(m.Errors, one.Errors) || m.Upgraded != one.Upgraded || m.Retried != one.Retried || m.Succeeded != one.Succeeded {
		t.Errorf("merged: grpc %v, protocols %v, errors %v, upgraded %d, retried %d, succeeded %d\nwant: %v, %v, %v, %d, %d, %d",
			m.GRPCStatus, m.ConnectionsByProtocol, m.Errors, m.Upgraded, m.Retried, m.Succeeded,
			one.GRPCStatus, one.ConnectionsByProtocol, one.Errors, one.Upgraded, one.Retried, one.Succeeded)
	}
	for i, e := range one.Endpoints {
		if !maps.Equal(m.Endpoints[i].GRPCStatus, e.GRPCStatus) {
			t.Errorf("endpoint %s: got %v, want %v", e.Name, m.Endpoints[i].GRPCStatus, e.GRPCStatus)
		}
	}
	sumIntervals := func(s *report.Summary) (map[string]int64, int64) {
		g, f := map[string]int64{}, int64(0)
		for _, iv := range s.Intervals {
			addCounts(g, iv.GRPCStatus)
			f += iv.GRPCFailed
		}
		return g, f
	}
	mg, mf := sumIntervals(m)
	og, of := sumIntervals(one)
	if !maps.Equal(mg, og) || mf != of {
		t.Errorf("intervals: got %v %d, want %v %d", mg, mf, og, of)
	}

	// A summary written before HTTP/2 has no connections_by_protocol: its
	// connections were HTTP/1.1.
	old, err := report.ReadSummary(strings.NewReader(`{"version":2,"requests":1,"succeeded":1,"answered":1,"connections":3,"status":{"200":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err = report.Merge([]*report.Summary{parts[0], old})
	if err != nil {
		t.Fatal(err)
	}
	if want := parts[0].ConnectionsByProtocol["http/1.1"] + 3; m.ConnectionsByProtocol["http/1.1"] != want {
		t.Errorf("with an older summary: http/1.1 connections %d, want %d", m.ConnectionsByProtocol["http/1.1"], want)
	}
}

// TestCompareGRPCStatus: --compare status compares a gRPC call's
// grpc-status, recorded (trailers, or the headers of a Trailers-Only
// answer, or mapped from the status) against the live answer's.
func TestCompareGRPCStatus(t *testing.T) {
	eps := []string{"POST /pkg.Svc/Get"}
	grpcPair := func(status int, headers, trailers []rrpair.Header) *rrpair.Pair {
		return &rrpair.Pair{Line: 7, Req: rrpair.Request{Headers: []rrpair.Header{h("content-type", "application/grpc+proto")}},
			Res: rrpair.Response{Status: status, Headers: headers, Trailers: trailers}}
	}
	ok := []rrpair.Header{h("grpc-status", "0")}
	notFound := []rrpair.Header{h("grpc-status", "5")}
	for _, tt := range []struct {
		name               string
		pair               *rrpair.Pair
		live               *answers.Answer
		match              bool
		recorded, replayed string
	}{
		{"same in trailers", grpcPair(200, nil, ok), answers.New(200, "").WithTrailers("grpc-status", "0"), true, "", ""},
		{"other in trailers", grpcPair(200, nil, ok), answers.New(200, "").WithTrailers("grpc-status", "5", "grpc-message", "gone"), false, "OK", "NOT_FOUND"},
		{"recorded Trailers-Only", grpcPair(200, notFound, nil), answers.New(200, "").WithTrailers("grpc-status", "5"), true, "", ""},
		{"live Trailers-Only", grpcPair(200, nil, ok), answers.New(200, "", "grpc-status", "7"), false, "OK", "PERMISSION_DENIED"},
		{"live proxy 503 mapped", grpcPair(503, nil, []rrpair.Header{h("grpc-status", "14")}), answers.New(503, ""), true, "", ""},
		{"HTTP status first", grpcPair(200, nil, ok), answers.New(503, ""), false, "200", "503"},
		{"no grpc-status: UNKNOWN", grpcPair(200, nil, nil), answers.New(200, "").WithTrailers("grpc-status", "0"), false, "UNKNOWN", "OK"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewComparer(eps, false, nil, nil)
			c.Observe(0, tt.pair, tt.live)
			r := c.Result()
			if r.Compared != 1 || r.GRPCCompared != 1 {
				t.Fatalf("compared %d, grpc %d; want 1, 1", r.Compared, r.GRPCCompared)
			}
			if got := r.Matched == 1; got != tt.match {
				t.Fatalf("matched: got %v, want %v (%+v)", got, tt.match, r.Mismatches)
			}
			if tt.match {
				return
			}
			mm := r.Mismatches[0]
			if mm.Recorded != tt.recorded || mm.Replayed != tt.replayed || mm.Line != 7 {
				t.Errorf("mismatch: got %+v, want recorded %s, replayed %s, line 7", mm, tt.recorded, tt.replayed)
			}
			if want := "grpc-status"; tt.recorded != "200" && mm.Kind != want {
				t.Errorf("kind: got %q, want %q", mm.Kind, want)
			}
		})
	}
	// A plain HTTP pair is not a gRPC call: grpc-status in its answer is
	// not compared.
	c := NewComparer(eps, false, nil, nil)
	c.Observe(0, &rrpair.Pair{Res: rrpair.Response{Status: 200, Trailers: ok}}, answers.New(200, "", "grpc-status", "5"))
	if r := c.Result(); r.Matched != 1 || r.GRPCCompared != 0 {
		t.Errorf("plain HTTP: matched %d, grpc %d; want 1, 0", r.Matched, r.GRPCCompared)
	}
}

func h(name, value string) rrpair.Header {
	return rrpair.Header{Name: []byte(name), Value: []byte(value)}
}

// TestFailureDumpGRPC: a gRPC call that failed with 200 is dumped under
// its gRPC status, with the answer's trailers.
func TestFailureDumpGRPC(t *testing.T) {
	var buf bytes.Buffer
	d := NewFailureDump(&buf, []string{"POST /pkg.Svc/Get"}, 5)
	a := answers.New(200, "", "content-type", "application/grpc").WithTrailers("grpc-status", "5", "grpc-message", "gone")
	res := grpcResult(0, 0, 200, 5)
	d.Failed(&result.Failure{Pair: &rrpair.Pair{Line: 2}, Result: &res, Answer: a})
	out := buf.String()
	for _, want := range []string{`"failure":"grpc:NOT_FOUND"`, `"trailers":{"grpc-message":["gone"],"grpc-status":["5"]}`} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %s:\n%s", want, out)
		}
	}
}

// addCounts adds the counts of src to dst.
func addCounts(dst, src map[string]int64) {
	for k, n := range src {
		dst[k] += n
	}
}
