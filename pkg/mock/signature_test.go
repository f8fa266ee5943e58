package mock

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// sigRec is a line of a Speedscale reaction file: an answer whose request
// is given only as a signature.
type sigRec struct {
	method, host, url string
	params            [][2]string // http:queryparams:NAME, in this order
	body              string      // http:requestBodyJSON
	instance          int
	status            int
	resBody           string
	// only says where the signature is: "mutable" (mutableSignature and
	// the rest, as Speedscale writes it), "base64" (signature only),
	// "command" (command, location, network_address only).
	only  string
	extra map[string]string // more signature keys
	https bool
}

func (r sigRec) line() string {
	sig := map[string]string{"http:host": r.host, "http:method": r.method, "http:url": r.url, "instance": strconv.Itoa(r.instance)}
	if len(r.params) == 0 {
		sig["http:queryparams"] = ""
	}
	for _, p := range r.params {
		sig["http:queryparams:"+p[0]] = p[1]
	}
	if r.body != "" {
		sig["http:requestBodyJSON"] = r.body
	}
	for k, v := range r.extra {
		sig[k] = v
	}
	b64 := map[string]string{}
	for k, v := range sig {
		b64[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	proto, port := "http", ":80"
	if r.https {
		proto, port = "https", ":443"
	}
	line := map[string]any{"msgType": "rrpair", "l7protocol": proto, "direction": "OUT", "ts": "2026-11-01T10:00:00Z",
		"http": map[string]any{"res": map[string]any{"statusCode": r.status, "headers": map[string][]string{"Content-Type": {"text/plain"}}, "body": r.resBody}}}
	switch r.only {
	case "base64":
		line["signature"] = b64
	case "command":
		line["command"], line["location"], line["network_address"] = r.method, r.url, r.host+port
	default:
		line["mutableSignature"], line["signature"] = sig, b64
		line["command"], line["location"], line["network_address"] = r.method, r.url, r.host+port
		line["http"].(map[string]any)["sig"] = map[string]any{"host": r.host, "method": r.method, "url": r.url, "instance": r.instance}
	}
	b, err := json.Marshal(line)
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

// reaction is a reaction-style file: signatures whose instances stand out
// of order in the file, a query signature, a JSON body signature, one
// given only in base64, one only as command and location, a Postgres
// line, and a recorded request pair beside them.
func reaction() (content string, lines int) {
	search := [][2]string{{"q", "rocket launch"}, {"page", "2"}}
	order := `{"sku":"x-1","qty":2,"gift":{"wrap":true,"note":null}}`
	parts := []string{
		sigRec{method: "GET", host: "api.example.com", url: "/v1/items", instance: 2, status: 503, resBody: "items 2"}.line(),
		sigRec{method: "GET", host: "api.example.com", url: "/v1/items", instance: 0, status: 200, resBody: "items 0"}.line(),
		sigRec{method: "GET", host: "api.example.com", url: "/v1/search", params: search, instance: 1, status: 200, resBody: "search 1"}.line(),
		`{"l7protocol":"postgres","direction":"OUT","ts":"2026-11-01T10:00:00Z","postgres":{"query":"SELECT 1"}}` + "\n",
		sigRec{method: "GET", host: "api.example.com", url: "/v1/items", instance: 1, status: 200, resBody: "items 1"}.line(),
		sigRec{method: "GET", host: "api.example.com", url: "/v1/search", params: search, instance: 0, status: 200, resBody: "search 0"}.line(),
		sigRec{method: "POST", host: "api.example.com", url: "/v1/orders", body: order, status: 201, resBody: "order", only: "base64"}.line(),
		sigRec{method: "GET", host: "api.example.com", url: "/v1/ping", status: 200, resBody: "pong", only: "command"}.line(),
		rec{method: "GET", uri: "/v1/health", host: "api.example.com", status: 200, resBody: "recorded pair"}.line(),
	}
	return strings.Join(parts, ""), len(parts)
}

// call is a request and the answer it must get.
type call struct {
	method, url, body string
	status            int
	answer            string
}

// TestReactionSignatures serves a reaction-style file through the mock on
// loopback: the k-th call to a signature gets its k-th instance whatever
// the order of the file, query parameters in another order and a JSON
// body written otherwise match, the recorded pair is served beside them,
// hits equal the lines answered from with no miss, and the Postgres line
// is counted by protocol.
func TestReactionSignatures(t *testing.T) {
	content, lines := reaction()
	s := start(t, Options{File: writeFile(t, content)})
	c := through(s, nil, false)
	const base = "http://api.example.com"
	calls := []call{
		{"GET", base + "/v1/items", "", 200, "items 0"},
		{"GET", base + "/v1/search?page=2&q=rocket+launch", "", 200, "search 0"},
		{"GET", base + "/v1/items", "", 200, "items 1"},
		{"POST", base + "/v1/orders", `{ "gift": {"note": null, "wrap": true}, "qty": 2, "sku": "x-1" }`, 201, "order"},
		{"GET", base + "/v1/search?q=rocket%20launch&page=2", "", 200, "search 1"},
		{"GET", base + "/v1/items", "", 503, "items 2"},
		{"GET", base + "/v1/ping", "", 200, "pong"},
		{"GET", base + "/v1/health", "", 200, "recorded pair"},
	}
	for i, cl := range calls {
		if st, _, body := do(t, c, cl.method, cl.url, cl.body); st != cl.status || body != cl.answer {
			t.Errorf("call %d, %s %s: got %d %q, want %d %q", i+1, cl.method, cl.url, st, body, cl.status, cl.answer)
		}
	}
	r := s.Report()
	answered := lines - 1 // the Postgres line
	if r.Hits != int64(answered) || r.Misses != 0 || r.Pairs != answered || r.UnusedAnswers != 0 {
		t.Errorf("got %d hits, %d misses, %d pairs, %d answers never given; want %d hits, 0 misses, %d pairs, 0 never given",
			r.Hits, r.Misses, r.Pairs, r.UnusedAnswers, answered, answered)
	}
	if got := r.SkippedKinds.Protocol["postgres"]; got != 1 || r.SkippedKinds.Total() != 1 {
		t.Errorf("lines skipped: got %+v, want postgres 1", r.SkippedKinds)
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "1 line skipped (postgres 1)") {
		t.Errorf("the text report does not count the Postgres line:\n%s", text.String())
	}
	// Past the last instance: the last again, as for recorded pairs.
	if st, _, body := do(t, c, "GET", base+"/v1/items", ""); st != 503 || body != "items 2" {
		t.Errorf("a 4th call: got %d %q, want the last instance again, 503 \"items 2\"", st, body)
	}
}

// TestReactionCycle: with Cycle the instances of a signature come round
// again, in instance order.
func TestReactionCycle(t *testing.T) {
	content, _ := reaction()
	s := start(t, Options{File: writeFile(t, content), Cycle: true})
	c := through(s, nil, false)
	var got []string
	for range 5 {
		_, _, body := do(t, c, "GET", "http://api.example.com/v1/items", "")
		got = append(got, body)
	}
	if want := "items 0,items 1,items 2,items 0,items 1"; strings.Join(got, ",") != want {
		t.Errorf("got %s, want %s", strings.Join(got, ","), want)
	}
}

// TestReactionUnreadKey: a signature line whose signature holds a key the
// mock does not match on (a store_sig value) is not served, and the
// report says which key; the other lines are.
func TestReactionUnreadKey(t *testing.T) {
	content := sigRec{method: "GET", host: "api.example.com", url: "/v1/me", status: 200, resBody: "nate", extra: map[string]string{"5": "nate"}}.line() +
		sigRec{method: "GET", host: "api.example.com", url: "/v1/items", status: 200, resBody: "items"}.line()
	s := start(t, Options{File: writeFile(t, content)})
	r := s.Report()
	if r.Pairs != 1 || r.Skipped != 1 || len(r.SkippedPairs) != 1 || r.SkippedPairs[0].Line != 1 ||
		!strings.Contains(r.SkippedPairs[0].Reason, `signature key "5" is not read`) {
		t.Fatalf("got %d pairs, %d skipped %+v; want 1 pair and line 1 skipped naming key \"5\"", r.Pairs, r.Skipped, r.SkippedPairs)
	}
	c := through(s, nil, false)
	if st, _, _ := do(t, c, "GET", "http://api.example.com/v1/me", ""); st != http.StatusNotFound {
		t.Errorf("the line with an unread key answered %d, want a miss (404)", st)
	}
	if st, _, body := do(t, c, "GET", "http://api.example.com/v1/items", ""); st != 200 || body != "items" {
		t.Errorf("got %d %q, want 200 \"items\"", st, body)
	}
}

// TestReactionHTTPS: Speedscale's signature lines of a TLS dependency are
// https (as the public snapshot's are): answered through CONNECT with the
// CA, over HTTP/1.1 and HTTP/2, each call its instance.
func TestReactionHTTPS(t *testing.T) {
	var content string
	for _, i := range []int{1, 0, 2} {
		content += sigRec{method: "GET", host: "api.spacex.test", url: "/v4/launches/latest", instance: i, status: 200, resBody: "launch " + strconv.Itoa(i), https: true}.line()
	}
	content += sigRec{method: "GET", host: "api.nasa.test", url: "/planetary/apod", params: [][2]string{{"api_key", "DEMO_KEY"}}, status: 429, resBody: "slow down", https: true}.line()
	ca, caOpt := testCA(t)
	s := start(t, Options{File: writeFile(t, content), CA: caOpt})
	for i, h2 := range []bool{false, true, false} {
		if st, _, body := do(t, through(s, ca, h2), "GET", "https://api.spacex.test/v4/launches/latest", ""); st != 200 || body != "launch "+strconv.Itoa(i) {
			t.Errorf("call %d (h2 %v): got %d %q, want 200 \"launch %d\"", i+1, h2, st, body, i)
		}
	}
	if st, _, body := do(t, through(s, ca, true), "GET", "https://api.nasa.test/planetary/apod?api_key=DEMO_KEY", ""); st != 429 || body != "slow down" {
		t.Errorf("got %d %q, want 429 \"slow down\"", st, body)
	}
	if r := s.Report(); r.Hits != 4 || r.Misses != 0 || r.UnusedAnswers != 0 {
		t.Errorf("got %d hits, %d misses, %d never given; want 4, 0, 0", r.Hits, r.Misses, r.UnusedAnswers)
	}
}
