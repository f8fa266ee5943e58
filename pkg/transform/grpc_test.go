package transform

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/result"
)

// grpcBody is one length-prefixed gRPC message whose protobuf holds s as
// field 1: bytes a body rewrite must never touch.
func grpcBody(s string) []byte {
	msg := append([]byte{0x0a, byte(len(s))}, s...)
	return append([]byte{0, 0, 0, 0, byte(len(msg))}, msg...)
}

// grpcLine is a recorded gRPC call with headers (metadata) and body.
func grpcLine(session, headers string, body []byte) string {
	return fmt.Sprintf(`{"ts":%q,"tags":{"session":%q},"http":{"req":{"method":"POST","uri":"/shop.Orders/Get","host":"api","version":"2","headers":%s,"bodyBase64":%q}}}`,
		recordedAt.Format(time.RFC3339Nano), session, headers, base64.StdEncoding.EncodeToString(body))
}

func counts(c *Chain) map[string]result.TransformCount {
	m := map[string]result.TransformCount{}
	for _, n := range c.Counts() {
		m[n.Name] = n
	}
	return m
}

// TestGRPCBodiesSkipped: in a file that mixes JSON and gRPC calls, with
// timestamps: auto, JWT re-signing (header and JSON body), a header set
// and a correlation, the gRPC body goes out byte for byte and is counted
// as skipped by each body rewrite, while its metadata (authorization, a
// timestamp header, the correlated header) is rewritten as for any pair.
func TestGRPCBodiesSkipped(t *testing.T) {
	tok := recordedToken(t, `{"alg":"HS256","typ":"JWT"}`)
	body := grpcBody("o-123 at 2026-11-01T10:00:00Z token " + tok[:20])
	lines := []string{
		fmt.Sprintf(`{"ts":%q,"tags":{"session":"s"},"http":{"req":{"method":"POST","uri":"/orders","host":"api","headers":{"Content-Type":["application/json"],"Authorization":["Bearer %s"]},"body":%q},"res":{"statusCode":201,"body":"{\"id\":\"o-123\"}"}}}`,
			recordedAt.Format(time.RFC3339Nano), tok, `{"at":"2026-11-01T10:00:00Z","token":"`+tok+`"}`),
		grpcLine("s", `{"content-type":["application/grpc"],"te":["trailers"],"authorization":["Bearer `+tok+`"],"x-sent":["2026-11-01T10:00:00Z"],"x-order":["o-123"]}`, body),
	}
	f, ps := pairs(t, lines...)
	c := chain(t, `transforms:
  - timestamps: {auto: true}
  - jwt: {secret: s3cret, json: [token]}
  - headers: {set: {x-env: replay}}
  - correlate: {endpoint: POST /orders, json: id}
`, f.Endpoints()...)
	c.Begin(0)
	if err := c.Rewrite(0, &ps[0].Req, &ps[0]); err != nil {
		t.Fatal(err)
	}
	c.Observe(0, &ps[0], live(201, `{"id":"o-987"}`))
	if err := c.Rewrite(0, &ps[1].Req, &ps[1]); err != nil {
		t.Fatal(err)
	}
	// The JSON call: its body's time and token rewritten.
	if b := string(ps[0].Req.Body); strings.Contains(b, "2026-11-01") || strings.Contains(b, tok) {
		t.Errorf("JSON body not rewritten: %s", b)
	}
	// The gRPC call: body byte for byte, metadata rewritten.
	g := &ps[1].Req
	if !bytes.Equal(g.Body, body) {
		t.Errorf("gRPC body changed:\n got %q\nwant %q", g.Body, body)
	}
	want := map[string]func(string) bool{
		"authorization": func(v string) bool { return strings.HasPrefix(v, "Bearer ") && v != "Bearer "+tok },
		"x-sent":        func(v string) bool { return v == "2026-11-23T08:30:15Z" },
		"x-order":       func(v string) bool { return v == "o-987" },
		"x-env":         func(v string) bool { return v == "replay" },
		"te":            func(v string) bool { return v == "trailers" },
	}
	for _, h := range g.Headers {
		if ok, known := want[string(h.Name)]; known {
			if !ok(string(h.Value)) {
				t.Errorf("gRPC metadata %s: got %q", h.Name, h.Value)
			}
			delete(want, string(h.Name))
		}
	}
	if len(want) != 0 {
		t.Errorf("gRPC metadata missing: %v", want)
	}
	n := counts(c)
	for name, skipped := range map[string]int64{"timestamps": 1, "jwt": 1, "headers": 0, "correlate json id": 1} {
		got, ok := n[name]
		if !ok {
			t.Fatalf("no transform %q in %+v", name, n)
		}
		if got.SkippedGRPC != skipped || got.Failed != 0 {
			t.Errorf("%s: got %+v, want skipped_grpc %d, failed 0", name, got, skipped)
		}
	}
	if n["timestamps"].Changed != 2 || n["jwt"].Changed != 2 {
		t.Errorf("changed: timestamps %d, jwt %d; want 2, 2 (the gRPC call's headers count)", n["timestamps"].Changed, n["jwt"].Changed)
	}
}

// TestGRPCNoLearningFromBodies: a correlation that reads bodies learns
// nothing from a gRPC answer (protobuf), and does not count it failed.
func TestGRPCNoLearningFromBodies(t *testing.T) {
	f, ps := pairs(t,
		grpcLine("s", `{"content-type":["application/grpc"]}`, grpcBody("x")),
		line("GET", "/orders/o-123", "", ""),
	)
	c := chain(t, "transforms:\n  - correlate: {regex: '(o-[0-9]+)'}\n", f.Endpoints()...)
	c.Begin(0)
	c.Rewrite(0, &ps[0].Req, &ps[0])
	c.Observe(0, &ps[0], live(200, string(grpcBody("o-987"))))
	c.Rewrite(0, &ps[1].Req, &ps[1])
	if got := string(ps[1].Req.URI); got != "/orders/o-123" {
		t.Errorf("learned from a gRPC body: URI %s", got)
	}
	if n := c.Counts()[0]; n.Failed != 0 || n.Changed != 0 {
		t.Errorf("counts %+v, want none", n)
	}
}

// TestGRPCStampHeaderOnly: a correlation ID goes into a gRPC call's
// metadata, never into its body; with a JSON field only, the call is
// skipped, not failed.
func TestGRPCStampHeaderOnly(t *testing.T) {
	body := grpcBody("payload")
	for _, tt := range []struct {
		name, header string
		stamped      int
	}{{"header and field", "x-id", 1}, {"field only", "", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			sc := &stampCounter{}
			c, err := Build(nil, false, Options{VUs: 1, Now: func() time.Time { return now }, Stamp: &StampOptions{Header: tt.header, JSON: "id", To: sc}})
			if err != nil {
				t.Fatal(err)
			}
			_, ps := pairs(t, grpcLine("s", `{"content-type":["application/grpc+proto"]}`, body))
			c.Rewrite(0, &ps[0].Req, &ps[0])
			if !bytes.Equal(ps[0].Req.Body, body) {
				t.Errorf("gRPC body changed: %q", ps[0].Req.Body)
			}
			n := c.Counts()[0]
			if sc.stamped != tt.stamped || n.SkippedGRPC != 1 || n.Failed != 0 {
				t.Errorf("stamped %d, counts %+v; want stamped %d, skipped 1, failed 0", sc.stamped, n, tt.stamped)
			}
			if tt.stamped == 0 {
				return
			}
			// Accepted only with grpc-status OK, whatever the HTTP status.
			c.Observe(0, &ps[0], live(200, "").WithTrailers("grpc-status", "14"))
			if len(sc.accepted) != 0 {
				t.Errorf("a gRPC UNAVAILABLE answer was accepted: %v", sc.accepted)
			}
			c.Rewrite(0, &ps[0].Req, &ps[0])
			c.Observe(0, &ps[0], live(200, "").WithTrailers("grpc-status", "0"))
			if len(sc.accepted) != 1 {
				t.Errorf("a gRPC OK answer was not accepted: %v", sc.accepted)
			}
		})
	}
}

// TestGRPCRewriteDoesNotAllocate: telling a gRPC call apart costs the
// hot path nothing.
func TestGRPCRewriteDoesNotAllocate(t *testing.T) {
	_, ps := pairs(t, grpcLine("s", `{"content-type":["application/grpc"],"x-sent":["2026-11-01T10:00:00Z"]}`, grpcBody("2026-11-01T10:00:00Z")))
	c := chain(t, "transforms:\n  - timestamps: {auto: true}\n")
	p := ps[0]
	req := p.Req
	c.Rewrite(0, &req, &p)
	allocs := testing.AllocsPerRun(100, func() {
		req = p.Req
		c.Rewrite(0, &req, &p)
	})
	if allocs != 0 {
		t.Errorf("got %v allocs per rewrite, want 0", allocs)
	}
	if n := c.Counts()[0]; n.SkippedGRPC != 101+1 {
		t.Errorf("skipped %d, want 102", n.SkippedGRPC)
	}
}
