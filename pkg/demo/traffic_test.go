package demo

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	replay "github.com/replay-dev/replay"
)

var update = flag.Bool("update", false, "rewrite testdata/demo.jsonl from the generator")

const (
	trafficPath    = "../../testdata/demo.jsonl"
	transformsPath = "../../testdata/demo-transforms.yaml"
)

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
	resHdrs  []header // nil: Content-Type application/json
	resBody  string
	duration float64
}

// jsonHeaders are the response headers of most recorded answers.
var jsonHeaders = []header{{"Content-Type", []string{"application/json"}}}

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
	writeHeaders(&b, r.headers)
	b.WriteString("}")
	switch {
	case r.base64:
		fmt.Fprintf(&b, `,"bodyBase64":%s`, q(base64.StdEncoding.EncodeToString([]byte(r.body))))
	case r.body != "":
		fmt.Fprintf(&b, `,"body":%s`, q(r.body))
	}
	fmt.Fprintf(&b, `},"res":{"statusCode":%d,"headers":{`, r.status)
	resHdrs := r.resHdrs
	if resHdrs == nil {
		resHdrs = jsonHeaders
	}
	writeHeaders(&b, resHdrs)
	fmt.Fprintf(&b, `},"body":%s}}}`, q(r.resBody))
	return b.String()
}

// writeHeaders writes headers as the members of a JSON object, in order.
func writeHeaders(b *strings.Builder, hs []header) {
	for i, h := range hs {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(h.name)
		vals, _ := json.Marshal(h.values)
		fmt.Fprintf(b, `%s:%s`, name, vals)
	}
}

// recordedToken is the bearer token of the demo traffic: HS256 signed with
// JWTSecret, issued at the start of the recording and valid for an hour,
// so it is long expired at replay time. Its claims are written out in
// this order on purpose, and uid is beyond int64 and float64 precision,
// to show that a re-signer keeps the payload intact:
//
//	{"sub":"shop-web","uid":12345678901234567890,"iat":1793527200,"exp":1793530800}
func recordedToken(issued time.Time) string {
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	signing := seg(`{"alg":"HS256","typ":"JWT"}`) + "." +
		seg(fmt.Sprintf(`{"sub":"shop-web","uid":12345678901234567890,"iat":%d,"exp":%d}`, issued.Unix(), issued.Add(time.Hour).Unix()))
	sig, err := jwt.SigningMethodHS256.Sign(signing, []byte(JWTSecret))
	if err != nil {
		panic(err) // cannot happen with a []byte key
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// sentAtLayout is RFC 3339 with milliseconds, as clients write "sent_at".
const sentAtLayout = "2006-01-02T15:04:05.000Z07:00"

// recordingStart is when the demo traffic was recorded.
var recordingStart = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// generate makes the demo traffic: about two minutes of a shop front end
// and a mobile app sending events, reading feeds and single events, and
// placing orders, in sessions (one user's visit) and alone (health checks,
// batch uploads).
//
// What goes stale between recording and replay: the bearer token (expired
// an hour after recordingStart), every event's "ts" and "sent_at" (the
// pair's recorded time; a batch's events the time of the pair before), and
// the order ids and event ids (created by the SUT, so a replayed GET
// /orders/{id} or GET /events/evt-N needs the id the live POST answered).
func generate() []byte {
	rng := rand.New(rand.NewPCG(2026, 11))
	t := recordingStart
	var pairs []recorded
	token := recordedToken(recordingStart)
	agents := []string{"shop-web/4.2", "shop-ios/7.1 (iPhone; iOS 19.1)", "shop-android/7.0"}
	kinds := []string{"page_view", "click", "add_to_cart", "search", "checkout"}
	step := func() time.Time {
		t = t.Add(time.Duration(150+rng.IntN(500)) * time.Millisecond).Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
		return t
	}
	evID := 1000
	event := func(user int, kind string) string {
		ev := map[string]any{
			"type": kind, "user_id": fmt.Sprintf("u-%07d", user), "ts": t.UnixMilli(), "sent_at": t.Format(sentAtLayout),
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
		ordered := false
		for i := 0; i < n; i++ {
			newRequest()
			kind := kinds[rng.IntN(len(kinds))]
			evID++
			pairs = append(pairs, recorded{ts: step(), session: session, method: "POST", uri: "/events", headers: withCT,
				body: event(user, kind), base64: rng.IntN(10) == 0, status: 202,
				resBody: fmt.Sprintf(`{"status":"accepted","id":"evt-%d"}`, evID), duration: float64(400+rng.IntN(1600)) / 1000})
			if kind == "checkout" && !ordered { // the visit's order: create, look, pay
				ordered = true
				id := newOrderID(rng.IntN)
				newRequest()
				pairs = append(pairs, recorded{ts: step(), session: session, method: "POST", uri: "/orders", headers: withCT,
					body:   fmt.Sprintf(`{"items":[{"sku":"p-%d","qty":%d}],"user_id":"u-%07d"}`, 1+rng.IntN(500), 1+rng.IntN(3), user),
					status: 201, resHdrs: append([]header{{"Location", []string{"/orders/" + id}}}, jsonHeaders...),
					resBody: `{"id":"` + id + `","status":"created"}`, duration: float64(2000+rng.IntN(3000)) / 1000})
				newRequest()
				pairs = append(pairs, recorded{ts: step(), session: session, method: "GET", uri: "/orders/" + id,
					headers: append([]header{{"Accept", []string{"application/json"}}}, common...), status: 200,
					resBody: `{"id":"` + id + `","status":"created"}`, duration: 0.8})
				newRequest()
				pairs = append(pairs, recorded{ts: step(), session: session, method: "POST", uri: "/orders/" + id + "/pay", headers: withCT,
					body: `{"method":"card"}`, status: 200, resBody: `{"id":"` + id + `","status":"paid"}`, duration: float64(5000+rng.IntN(10000)) / 1000})
			}
			newRequest()
			switch rng.IntN(4) {
			case 0:
				pairs = append(pairs, recorded{ts: step(), session: session, method: "GET", uri: fmt.Sprintf("/users/%d/feed?limit=20", user),
					headers: append([]header{{"Accept", []string{"application/json", "text/plain;q=0.5"}}}, common...), status: 200,
					resBody: `{"user":"` + fmt.Sprint(user) + `","items":[]}`, duration: 1.2})
			case 1: // the event just posted, by the id the API issued, or another
				id := fmt.Sprintf("evt-%d", evID)
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
				headers: []header{{"User-Agent", []string{"kube-probe/1.31"}}}, status: 200,
				resHdrs: []header{{"Content-Type", []string{"text/plain"}}}, resBody: "ok", duration: 0.2})
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
	transforms, err := os.ReadFile(transformsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(replay.DemoTransforms, transforms) {
		t.Errorf("the embedded transforms differ from %s", transformsPath)
	}
	for _, want := range []string{"secret: " + JWTSecret + " ", "endpoint: POST /orders ", "json: id "} {
		if !bytes.Contains(transforms, []byte(want)) {
			t.Errorf("%s does not contain %q", transformsPath, want)
		}
	}
}

// pair is what the traffic tests read of a recorded line.
type pair struct {
	line    int
	ts      time.Time
	method  string
	uri     string
	headers map[string][]string
	body    []byte
	status  int
	resBody string
	resHdrs map[string][]string
}

func loadTraffic(t *testing.T) []pair {
	t.Helper()
	f, err := os.Open(trafficPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var pairs []pair
	for n := 1; sc.Scan(); n++ {
		var p struct {
			TS   time.Time `json:"ts"`
			HTTP struct {
				Req struct {
					Method     string              `json:"method"`
					URI        string              `json:"uri"`
					Headers    map[string][]string `json:"headers"`
					Body       string              `json:"body"`
					BodyBase64 string              `json:"bodyBase64"`
				} `json:"req"`
				Res struct {
					StatusCode int                 `json:"statusCode"`
					Headers    map[string][]string `json:"headers"`
					Body       string              `json:"body"`
				} `json:"res"`
			} `json:"http"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		body := []byte(p.HTTP.Req.Body)
		if p.HTTP.Req.BodyBase64 != "" {
			if body, err = base64.StdEncoding.DecodeString(p.HTTP.Req.BodyBase64); err != nil {
				t.Fatalf("line %d: %v", n, err)
			}
		}
		pairs = append(pairs, pair{line: n, ts: p.TS, method: p.HTTP.Req.Method, uri: p.HTTP.Req.URI, headers: p.HTTP.Req.Headers,
			body: body, status: p.HTTP.Res.StatusCode, resBody: p.HTTP.Res.Body, resHdrs: p.HTTP.Res.Headers})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(pairs) < 250 {
		t.Fatalf("only %d lines of demo traffic", len(pairs))
	}
	return pairs
}

// send sends the request as given and returns the status and body.
func send(t *testing.T, base, method, uri string, headers map[string][]string, body []byte) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, base+uri, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b, res.Header
}

// rewrite is what a test does by hand to a recorded request before
// sending it, standing in for replay's transforms.
type rewrite struct {
	token      bool              // re-sign the bearer token for now
	timestamps bool              // move the events' ts and sent_at to now
	ids        map[string]string // recorded order id -> live; nil: ids as recorded
}

// apply returns the request's URI, headers and body rewritten for now.
func (rw rewrite) apply(t *testing.T, p pair, now time.Time) (string, map[string][]string, []byte) {
	t.Helper()
	uri, headers, body := p.uri, p.headers, p.body
	if rw.token && len(headers["Authorization"]) > 0 {
		headers = maps.Clone(headers)
		headers["Authorization"] = []string{"Bearer " + recordedToken(now)}
	}
	if rw.timestamps && (p.uri == "/events" || p.uri == "/events/batch") && json.Valid(body) {
		fresh := func(ev map[string]any) {
			ev["ts"] = now.UnixMilli()
			ev["sent_at"] = now.Format(sentAtLayout)
		}
		var err error
		if p.uri == "/events" {
			var ev map[string]any
			if err = json.Unmarshal(body, &ev); err == nil {
				fresh(ev)
				body, err = json.Marshal(ev)
			}
		} else {
			var evs []map[string]any
			if err = json.Unmarshal(body, &evs); err == nil {
				for _, ev := range evs {
					fresh(ev)
				}
				body, err = json.Marshal(evs)
			}
		}
		if err != nil {
			t.Fatalf("line %d: %v", p.line, err)
		}
	}
	for rec, live := range rw.ids {
		uri = strings.Replace(uri, "/orders/"+rec, "/orders/"+live, 1)
	}
	return uri, headers, body
}

// orderID is the "id" of an order's JSON answer, or "".
func orderID(body []byte) string {
	var o struct{ ID string }
	json.Unmarshal(body, &o)
	return o.ID
}

// TestDemoTrafficAtRecordingTime sends every recorded request to a demo
// SUT whose clock reads the pair's recorded time, with order ids
// correlated by hand, and expects the recorded status back: the recording
// is what this server answered when it was made.
func TestDemoTrafficAtRecordingTime(t *testing.T) {
	c := newClock(recordingStart)
	s := startAt(t, c)
	ids := map[string]string{}
	for _, p := range loadTraffic(t) {
		c.Set(p.ts)
		uri, headers, body := rewrite{ids: ids}.apply(t, p, p.ts)
		status, resBody, resHdr := send(t, s.URL(), p.method, uri, headers, body)
		if status != p.status {
			t.Errorf("line %d %s %s: got %d %s, recorded %d", p.line, p.method, p.uri, status, resBody, p.status)
		}
		if p.method == "POST" && p.uri == "/orders" {
			rec, live := orderID([]byte(p.resBody)), orderID(resBody)
			ids[rec] = live
			if got, want := resHdr.Get("Location"), "/orders/"+live; got != want {
				t.Errorf("line %d: Location %q, want %q", p.line, got, want)
			}
			if got, want := p.resHdrs["Location"], []string{"/orders/" + rec}; !slices.Equal(got, want) {
				t.Errorf("line %d: recorded Location %q, want %q", p.line, got, want)
			}
		}
	}
	if len(ids) < 10 {
		t.Errorf("%d orders in the demo traffic, want 10 or more", len(ids))
	}
}

// TestDemoTrafficStaleAtReplayTime checks that the demo traffic sent as
// recorded, weeks later, fails: every request but the health check and
// the recorded outage is refused for its expired token. It then shows
// that each rewrite is needed: with a fresh token, events are refused for
// their old times; with fresh times too, the recorded order ids are
// unknown; with the ids the live POST /orders answered as well, every
// request gets its recorded status.
func TestDemoTrafficStaleAtReplayTime(t *testing.T) {
	now := testNow
	s := startAt(t, newClock(now))
	pairs := loadTraffic(t)
	isEvent := func(p pair) bool { return p.uri == "/events" || p.uri == "/events/batch" }
	isOrder := func(p pair) bool { return strings.HasPrefix(p.uri, "/orders/") }
	tests := []struct {
		name string
		rw   rewrite
		want func(p pair) (int, string) // status and a part of the body
	}{
		{"as recorded", rewrite{}, func(p pair) (int, string) {
			if p.uri == "/health" || p.status == 503 {
				return p.status, ""
			}
			return 401, "token expired 21d ago"
		}},
		{"fresh token", rewrite{token: true}, func(p pair) (int, string) {
			switch {
			case isEvent(p) && p.status == 202:
				return 422, "stale event"
			case isOrder(p):
				return 404, "no such order"
			}
			return p.status, ""
		}},
		{"fresh token and times", rewrite{token: true, timestamps: true}, func(p pair) (int, string) {
			if isOrder(p) {
				return 404, "no such order"
			}
			return p.status, ""
		}},
		{"fresh token and times, live ids", rewrite{token: true, timestamps: true, ids: map[string]string{}}, func(p pair) (int, string) {
			return p.status, ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			succeeded := 0
			for _, p := range pairs {
				uri, headers, body := tt.rw.apply(t, p, now)
				status, resBody, _ := send(t, s.URL(), p.method, uri, headers, body)
				wantStatus, wantBody := tt.want(p)
				if status != wantStatus || !bytes.Contains(resBody, []byte(wantBody)) {
					t.Errorf("line %d %s %s: got %d %s, want %d containing %q", p.line, p.method, p.uri, status, resBody, wantStatus, wantBody)
				}
				if status < 400 {
					succeeded++
				}
				if tt.rw.ids != nil && p.method == "POST" && p.uri == "/orders" {
					tt.rw.ids[orderID([]byte(p.resBody))] = orderID(resBody)
				}
			}
			t.Logf("%d of %d requests succeeded", succeeded, len(pairs))
		})
	}
}
