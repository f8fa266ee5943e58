package transform

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/answers"
)

// orderFlow is a session: create an order, read it, pay it.
func orderFlow() []string {
	res := func(status int, headers, body string) string {
		return fmt.Sprintf(`,"res":{"statusCode":%d,"headers":%s,"body":%q}`, status, headers, body)
	}
	req := func(method, uri, body, res string) string {
		b := ""
		if body != "" {
			b = fmt.Sprintf(`,"body":%q`, body)
		}
		return fmt.Sprintf(`{"ts":"2026-11-01T10:00:00Z","tags":{"session":"s1"},"http":{"req":{"method":%q,"uri":%q,"host":"h","headers":{"Cookie":["a=1; sid=recorded; b=2"]}%s}%s}}`,
			method, uri, b, res)
	}
	return []string{
		req("POST", "/orders", `{"items":[1]}`, res(201, `{"Location":["/orders/o-123"],"Set-Cookie":["sid=recorded; Path=/"]}`, `{"id":"o-123","status":"created"}`)),
		req("GET", "/orders/o-123", "", res(200, `{}`, `{"id":"o-123"}`)),
		req("POST", "/orders/o-123/pay", `{"order":"o-123","ref":"o-1234","x":"yo-123"}`, res(200, `{}`, `{}`)),
	}
}

func live(status int, body string, headers ...string) *answers.Answer {
	return answers.New(status, body, headers...)
}

func TestCorrelate(t *testing.T) {
	for _, rule := range []string{
		`{endpoint: POST /orders, json: id}`,
		`{header: Location, regex: '/orders/([^/?]+)'}`,
		`{regex: '"id":"(o-[^"]+)"', endpoint: POST /orders}`,
	} {
		t.Run(rule, func(t *testing.T) {
			f, ps := pairs(t, orderFlow()...)
			c := chain(t, "transforms:\n  - correlate: "+rule+"\n", f.Endpoints()...)
			if !c.NeedsResponses() || !c.Learns() {
				t.Fatal("a correlation must read recorded responses and learn")
			}
			c.Begin(0)
			c.Rewrite(0, &ps[0].Req, &ps[0])
			c.Observe(0, &ps[0], live(201, `{"id":"o-987","status":"created"}`, "Location", "/orders/o-987"))
			for i := 1; i < len(ps); i++ {
				c.Rewrite(0, &ps[i].Req, &ps[i])
				c.Observe(0, &ps[i], live(200, `{}`))
			}
			if got, want := wire(&ps[1].Req), "GET /orders/o-987\nCookie: a=1; sid=recorded; b=2\n"; got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			if got, want := wire(&ps[2].Req), "POST /orders/o-987/pay\nCookie: a=1; sid=recorded; b=2\n"+`{"order":"o-987","ref":"o-1234","x":"yo-123"}`; got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			if n := c.Counts()[0]; n.Changed != 2 || n.Failed != 0 {
				t.Errorf("counts %+v, want 2 changed", n)
			}

			// A new session forgets; an answer without the value is counted.
			_, ps = pairs(t, orderFlow()...)
			c.Begin(0)
			c.Observe(0, &ps[0], live(500, `{"error":"down"}`))
			c.Rewrite(0, &ps[1].Req, &ps[1])
			if got := string(ps[1].Req.URI); got != "/orders/o-123" {
				t.Errorf("a value learned in another session was used: %s", got)
			}
			if n := c.Counts()[0]; n.Failed != 1 {
				t.Errorf("counts %+v, want 1 failed (never seen live)", n)
			}
		})
	}
}

func TestCorrelateConfigErrors(t *testing.T) {
	f, _ := pairs(t, orderFlow()...)
	for _, tt := range []struct{ rule, want string }{
		{`{endpoint: GET /nowhere, json: id}`, `endpoint: "GET /nowhere" is not an endpoint of the file; it has POST /orders`},
		{`{json: id, header: Location}`, "give json, or header"},
		{`{regex: 'o-\d+'}`, `regex: "o-\\d+" has no group`},
		{`{regex: '(['}`, "regex: error parsing"},
		{`{name: x}`, "say where the value is"},
	} {
		spec, err := Parse([]byte("transforms:\n  - correlate: "+tt.rule+"\n"), "t.yaml", "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Build(spec, false, Options{Endpoints: f.Endpoints()})
		if err == nil || !strings.Contains(err.Error(), "t.yaml:2: correlate: "+tt.want) {
			t.Errorf("%s: got %v, want t.yaml:2: correlate: %s...", tt.rule, err, tt.want)
		}
	}
}

func TestCookieJar(t *testing.T) {
	_, ps := pairs(t, orderFlow()...)
	spec := &Spec{}
	c, err := Build(spec, true, Options{VUs: 1, Now: func() time.Time { return now }})
	if err != nil || c.Len() != 1 || c.Names()[0] != "cookies" {
		t.Fatalf("auto did not turn the jar on: %v %v", err, c.Names())
	}
	if c.NeedsResponses() {
		t.Error("the cookie jar does not read recorded responses")
	}
	c.Begin(0)
	c.Rewrite(0, &ps[0].Req, &ps[0])
	c.Observe(0, &ps[0], live(201, `{}`, "Set-Cookie", "sid=live-1; Path=/; HttpOnly", "Set-Cookie", "new=x"))
	c.Rewrite(0, &ps[1].Req, &ps[1])
	if got, want := string(ps[1].Req.Headers[0].Value), "a=1; sid=live-1; b=2"; got != want {
		t.Errorf("Cookie %q, want %q", got, want)
	}
	if off, _ := Build(&Spec{Cookies: CookiesOff}, true, Options{}); off.Len() != 0 {
		t.Error("cookies: off left the jar on")
	}
	if on, _ := Build(&Spec{Cookies: CookiesOn}, false, Options{}); on.Len() != 1 {
		t.Error("cookies: on left the jar off")
	}
}

func TestLearningDoesNotAllocate(t *testing.T) {
	f, ps := pairs(t, orderFlow()...)
	c := chain(t, "transforms:\n  - correlate: {endpoint: POST /orders, json: id}\ncookies: on\n", f.Endpoints()...)
	resp := live(201, `{"id":"o-987"}`, "Set-Cookie", "sid=live; Path=/")
	c.Begin(0)
	c.Observe(0, &ps[0], resp) // warm the VU's buffers
	allocs := testing.AllocsPerRun(100, func() {
		c.Begin(0)
		c.Observe(0, &ps[0], resp)
	})
	if allocs != 0 {
		t.Errorf("learning from an answer: %.1f allocs, want 0", allocs)
	}
}

// A live value that would break the request head (CR, LF) is never
// learned: the recorded value stays and the rule counts a failure.
func TestCorrelateRefusesInjection(t *testing.T) {
	f, ps := pairs(t, orderFlow()...)
	c := chain(t, "transforms:\n  - correlate: {header: Location, regex: '/orders/(.+)'}\n", f.Endpoints()...)
	c.Begin(0)
	c.Rewrite(0, &ps[0].Req, &ps[0])
	c.Observe(0, &ps[0], live(201, `{}`, "Location", "/orders/o-9\r\nEvil: 1"))
	c.Rewrite(0, &ps[1].Req, &ps[1])
	if got := string(ps[1].Req.URI); got != "/orders/o-123" {
		t.Errorf("URI %q, want the recorded /orders/o-123", got)
	}
	if n := c.Counts()[0]; n.Failed != 1 || n.Changed != 0 {
		t.Errorf("counts %+v, want 1 failed, 0 changed", n)
	}
}
