package demo

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	replay "github.com/replay-dev/replay"
)

var update = flag.Bool("update", false, "rewrite testdata/demo.jsonl from the generator")

const trafficPath = "../../testdata/demo.jsonl"

// header is one recorded header with its values, kept in order.
type header struct {
	name   string
	values []string
}

// recorded is one pair of the demo traffic.
type recorded struct {
	ts       time.Time
	session  string
	method   string
	uri      string
	headers  []header
	body     string
	base64   bool
	status   int
	resBody  string
	duration float64
}

// line renders the pair as an RRPair line, headers in order.
func (r recorded) line() string {
	var b strings.Builder
	q := func(s string) string { out, _ := json.Marshal(s); return string(out) }
	fmt.Fprintf(&b, `{"msgType":"rrpair","ts":%s,"l7protocol":"http","duration":%g,`, q(r.ts.Format(time.RFC3339Nano)), r.duration)
	if r.session != "" {
		fmt.Fprintf(&b, `"tags":{"session":%s},`, q(r.session))
	}
	url := r.uri
	if i := strings.IndexByte(url, '?'); i >= 0 {
		url = url[:i]
	}
	fmt.Fprintf(&b, `"http":{"req":{"method":%s,"url":%s,"uri":%s,"version":"1.1","host":"ingest.demo.local:8080","headers":{`, q(r.method), q(url), q(r.uri))
	for i, h := range r.headers {
		if i > 0 {
			b.WriteByte(',')
		}
		vals, _ := json.Marshal(h.values)
		fmt.Fprintf(&b, `%s:%s`, q(h.name), vals)
	}
	b.WriteString("}")
	switch {
	case r.base64:
		fmt.Fprintf(&b, `,"bodyBase64":%s`, q(base64.StdEncoding.EncodeToString([]byte(r.body))))
	case r.body != "":
		fmt.Fprintf(&b, `,"body":%s`, q(r.body))
	}
	fmt.Fprintf(&b, `},"res":{"statusCode":%d,"headers":{"Content-Type":["application/json"]},"body":%s}}}`, r.status, q(r.resBody))
	return b.String()
}

// generate makes the demo traffic: about two minutes of a shop front end
// and a mobile app sending events, reading feeds and single events, in
// sessions (one user's visit) and alone (health checks, batch uploads).
func generate() []byte {
	rng := rand.New(rand.NewPCG(2026, 11))
	t := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var pairs []recorded
	token := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJzaG9wLXdlYiIsImlhdCI6MTc5MzUyNzIwMCwiZXhwIjoxNzkzNTMwODAwfQ.6Jr5m0nZPz0cYkq9qKfB3mB1m0F7sWcQ0vXg3n8yJ2w"
	agents := []string{"shop-web/4.2", "shop-ios/7.1 (iPhone; iOS 19.1)", "shop-android/7.0"}
	kinds := []string{"page_view", "click", "add_to_cart", "search", "checkout"}
	step := func() time.Time {
		t = t.Add(time.Duration(150+rng.IntN(500)) * time.Millisecond).Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
		return t
	}
	evID := 1000
	event := func(user int, kind string) string {
		ev := map[string]any{
			"type": kind, "user_id": fmt.Sprintf("u-%07d", user), "ts": t.UnixMilli(),
			"url": fmt.Sprintf("/products/%d", 1+rng.IntN(500)), "referrer": "/home",
		}
		if kind == "search" {
			ev["query"] = []string{"running shoes", "red jacket", "usb-c cable", "cafè latte"}[rng.IntN(4)]
		}
		if kind == "checkout" {
			ev["amount_cents"] = 500 + rng.IntN(20000)
			ev["currency"] = "EUR"
		}
		out, _ := json.Marshal(ev)
		return string(out)
	}
	for visit := 0; len(pairs) < 300; visit++ {
		user := 1 + rng.IntN(5000)
		agent := agents[rng.IntN(len(agents))]
		session := fmt.Sprintf("s-%04d", visit)
		var common, withCT []header
		newRequest := func() { // each request has its own id
			common = []header{
				{"User-Agent", []string{agent}},
				{"Authorization", []string{"Bearer " + token}},
				{"X-Request-Id", []string{fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Uint64()&(1<<48-1))}},
			}
			withCT = append([]header{{"Content-Type", []string{"application/json"}}}, common...)
		}
		n := 2 + rng.IntN(4)
		for i := 0; i < n; i++ {
			newRequest()
			kind := kinds[rng.IntN(len(kinds))]
			evID++
			pairs = append(pairs, recorded{ts: step(), session: session, method: "POST", uri: "/events", headers: withCT,
				body: event(user, kind), base64: rng.IntN(10) == 0, status: 202,
				resBody: fmt.Sprintf(`{"status":"accepted","id":"evt-%d"}`, evID), duration: float64(400+rng.IntN(1600)) / 1000})
			newRequest()
			switch rng.IntN(4) {
			case 0:
				pairs = append(pairs, recorded{ts: step(), session: session, method: "GET", uri: fmt.Sprintf("/users/%d/feed?limit=20", user),
					headers: append([]header{{"Accept", []string{"application/json", "text/plain;q=0.5"}}}, common...), status: 200,
					resBody: `{"user":"` + fmt.Sprint(user) + `","items":[]}`, duration: 1.2})
			case 1:
				id := fmt.Sprint(evID)
				if rng.IntN(2) == 0 {
					id = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Uint64()&(1<<48-1))
				}
				pairs = append(pairs, recorded{ts: step(), session: session, method: "GET", uri: "/events/" + id,
					headers: append([]header{{"Accept", []string{"application/json"}}}, common...), status: 200,
					resBody: `{"id":"` + id + `","status":"processed"}`, duration: 0.9})
			}
		}
		newRequest()
		switch visit % 10 {
		case 3: // a batch upload from the mobile app, no session
			evs := make([]json.RawMessage, 3+rng.IntN(5))
			for i := range evs {
				evs[i] = json.RawMessage(event(user, kinds[rng.IntN(len(kinds))]))
			}
			body, _ := json.Marshal(evs)
			pairs = append(pairs, recorded{ts: step(), method: "POST", uri: "/events/batch", headers: withCT, body: string(body),
				status: 202, resBody: fmt.Sprintf(`{"status":"accepted","count":%d}`, len(evs)), duration: 2.5})
		case 5: // the load balancer's health check
			pairs = append(pairs, recorded{ts: step(), method: "GET", uri: "/health",
				headers: []header{{"User-Agent", []string{"kube-probe/1.31"}}}, status: 200, resBody: "ok", duration: 0.2})
		case 7: // a client bug: a truncated event
			pairs = append(pairs, recorded{ts: step(), session: session, method: "POST", uri: "/events", headers: withCT,
				body: `{"type":"click","user_id":`, status: 400, resBody: `{"error":"body is not a JSON object"}`, duration: 0.3})
		case 9: // an old app version calling a retired endpoint
			pairs = append(pairs, recorded{ts: step(), session: session, method: "GET", uri: fmt.Sprintf("/v1/users/%d/profile", user),
				headers: common, status: 404, resBody: `{"error":"not found"}`, duration: 0.3})
		}
		if visit == 17 { // recorded during a brief outage of a dependency
			pairs = append(pairs, recorded{ts: step(), session: session, method: "POST", uri: "/events",
				headers: append([]header{{"X-Demo-Fail", []string{"1"}}}, withCT...), body: event(user, "page_view"),
				status: 503, resBody: `{"error":"unavailable"}`, duration: 30})
		}
	}
	var b bytes.Buffer
	for _, p := range pairs {
		b.WriteString(p.line())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func TestDemoTraffic(t *testing.T) {
	want := generate()
	if *update {
		if err := os.WriteFile(trafficPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(trafficPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the generator's output; run go test ./pkg/demo -run TestDemoTraffic -update", trafficPath)
	}
	if !bytes.Equal(replay.DemoTraffic, got) {
		t.Errorf("the embedded traffic differs from %s", trafficPath)
	}
}
