package transform

import (
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// answerChain builds a mock's answer chain from YAML on the test clock.
func answerChain(t *testing.T, yml string) *Chain {
	t.Helper()
	spec, err := Parse([]byte(yml), "t.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(spec, false, Options{VUs: 1, Answers: true, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAnswerTransformsFit: a mock refuses a request transform, naming it
// and its line; a replay refuses echo; a mock refuses a cookie jar.
func TestAnswerTransformsFit(t *testing.T) {
	for _, tt := range []struct {
		name, yml string
		answers   bool
		want      string
	}{
		{"path in a mock", "transforms:\n  - timestamps: {auto: true}\n  - path: {prefix: /v1, to: /v2}\n", true, "t.yaml:3: path: rewrites the requests of a replay; replay mock rewrites answers with timestamps, headers and echo only"},
		{"jwt in a mock", "transforms:\n  - jwt: {secret: s}\n", true, "t.yaml:2: jwt: rewrites the requests"},
		{"cookies in a mock", "transforms:\n  - echo: {auto: true}\ncookies: on\n", true, "cookies: a cookie jar keeps a replay's sessions"},
		{"echo in a replay", "transforms:\n  - echo: {auto: true}\n", false, "t.yaml:2: echo: rewrites the answers of replay mock"},
		{"echo with nothing", "transforms:\n  - echo: {}\n", true, "t.yaml:2: echo: nothing to echo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := Parse([]byte(tt.yml), "t.yaml", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, err = Compile(spec, false, Options{VUs: 1, Answers: tt.answers})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestEcho: what the recorded answer repeated of its recorded request
// (a JSON field, a header, a query value) becomes the live request's, only
// where it stands whole; timestamps in the answer move to now.
func TestEcho(t *testing.T) {
	_, ps := pairs(t, `{"ts":"`+recordedAt.Format(time.RFC3339Nano)+`","http":{"req":{"method":"POST","uri":"/orders?trace=trace-000001","host":"api",`+
		`"headers":{"X-Request-Id":["req-aaaaaa"]},"body":"{\"order\":{\"id\":\"ord-000111\"},\"amount\":100}"},`+
		`"res":{"statusCode":201,"headers":{"X-Request-Id":["req-aaaaaa"]},`+
		`"body":"{\"id\":\"ord-000111\",\"request\":\"req-aaaaaa\",\"trace\":\"trace-000001\",\"near\":\"ord-0001112\",\"created\":\"2026-11-01T10:00:01Z\"}"}}}`)
	p := &ps[0]
	live := &rrpair.Request{Method: []byte("POST"), URI: []byte("/orders?trace=trace-999999"),
		Headers: []rrpair.Header{{Name: []byte("x-request-id"), Value: []byte("req-bbbbbb")}},
		Body:    []byte(`{"amount": 100, "order": {"id": "ord-999999"}}`)}
	ans := &rrpair.Request{Headers: append([]rrpair.Header(nil), p.Res.Headers...), Body: p.Res.Body}
	c := answerChain(t, "transforms:\n  - timestamps: {auto: true}\n  - echo: {auto: true}\n")
	if err := c.RewriteAnswer(0, ans, p, live); err != nil {
		t.Fatal(err)
	}
	want := `{"id":"ord-999999","request":"req-bbbbbb","trace":"trace-999999","near":"ord-0001112","created":"` + recordedAt.Add(time.Second+delta).Format(time.RFC3339) + `"}`
	if string(ans.Body) != want {
		t.Errorf("body\n got %s\nwant %s", ans.Body, want)
	}
	if string(ans.Headers[0].Value) != "req-bbbbbb" {
		t.Errorf("header %s: %s", ans.Headers[0].Name, ans.Headers[0].Value)
	}
	counts := c.Counts()
	if counts[0].Changed != 1 || counts[1].Changed != 1 {
		t.Errorf("counts %+v", counts)
	}
	// A request rewrite has no live request: echo leaves it alone.
	req := p.Req
	if err := c.Rewrite(0, &req, p); err != nil || string(req.Body) != string(p.Req.Body) {
		t.Errorf("echo changed a request: %s, %v", req.Body, err)
	}
}

func TestReplaceWhole(t *testing.T) {
	for _, tt := range []struct{ in, old, new, want string }{
		{"a 123456 b", "123456", "9", "a 9 b"},
		{"1234567", "123456", "9", "1234567"},
		{"x-123456-y", "123456", "9", "x-9-y"},
		{"ab ab", "ab", "cd", "cd cd"},
		{`"id":"ord-1"`, "ord-1", "ord-22", `"id":"ord-22"`},
	} {
		if got := string(replaceWhole([]byte(tt.in), []byte(tt.old), []byte(tt.new))); got != tt.want {
			t.Errorf("replaceWhole(%q, %q, %q) = %q, want %q", tt.in, tt.old, tt.new, got, tt.want)
		}
	}
}
