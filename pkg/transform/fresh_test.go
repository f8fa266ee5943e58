package transform

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// TestFreshShapes: a fresh value keeps the recorded value's shape: length,
// character classes, a number's digit count, hex and its case, a UUID's
// version and variant, a type prefix and an e-mail's domain.
func TestFreshShapes(t *testing.T) {
	keys := [2]uint64{splitmix64(1), splitmix64(2)}
	for _, tt := range []struct {
		rec    string
		number bool
		want   string // a regular expression every fresh value matches
	}{
		{"123456789012", false, `^[1-9][0-9]{11}$`},
		{"000123", false, `^[0-9]{6}$`},
		{"7", false, `^[1-9]$`},
		{"5f3a9c0e", false, `^[0-9a-f]{8}$`},
		{"5F3A9C0E11D4", false, `^[0-9A-F]{12}$`},
		{"fcb94022-1e89-4ac5-a653-e360828c4282", false, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`},
		{"0190F4A2-7C3B-7D10-9E2F-3A4B5C6D7E8F", false, `^[0-9A-F]{8}-[0-9A-F]{4}-7[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$`},
		{"deadbeef-0000-1000-8000-00805f9b34fb", false, `^[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`},
		{"cus_Ab3xZ9", false, `^cus_[A-Z][a-z][1-9][a-z][A-Z][1-9]$`},
		{"alice@example.com", false, `^[a-z]{5}@example\.com$`},
		{"o-123", false, `^o-[1-9][0-9]{2}$`},
		{"u-0001832", false, `^u-[0-9]{7}$`},
		{"Order 12/B", false, `^[A-Z][a-z]{4} [1-9][0-9]/[A-Z]$`},
		{"tok.aZ9_-x", false, `^[a-z]{3}\.[a-z][A-Z][1-9]_-[a-z]$`},
		{"-12.05e3", true, `^-[1-9][0-9]\.[0-9]{2}e[1-9]$`},
		{"0", true, `^[0-9]$`},
	} {
		t.Run(tt.rec, func(t *testing.T) {
			re := regexp.MustCompile(tt.want)
			seen := map[string]bool{}
			for u := range uint64(50) {
				sh := newFreshShape([]byte(tt.rec), tt.number)
				dst := []byte(tt.rec)
				ok, _ := sh.fill(dst, u, &keys)
				if !ok || !re.Match(dst) {
					t.Fatalf("u %d: %q (ok %v), want %s", u, dst, ok, tt.want)
				}
				seen[string(dst)] = true
			}
			if want := min(50, space(tt.rec)); len(seen) != want {
				t.Errorf("%d distinct values of 50, want %d", len(seen), want)
			}
		})
	}
	sh := newFreshShape([]byte("--/"), false)
	if ok, _ := sh.fill([]byte("--/"), 1, &keys); ok {
		t.Error("a value without a letter or digit was made fresh")
	}
}

// space is the number of values the shapes of TestFreshShapes with few
// values have.
func space(rec string) int {
	switch rec {
	case "7":
		return 9
	case "0":
		return 10
	}
	return 1 << 30
}

// freshChain builds a fresh chain for VUs on shard of shards.
func freshChain(t testing.TB, yml string, vus, shard, shards, runVUs int, seed uint64) *Chain {
	t.Helper()
	spec, err := Parse([]byte(yml), "t.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(spec, false, Options{VUs: vus, Shard: shard, Shards: shards, RunVUs: runVUs, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFreshUniqueAcrossVUsAndShards: every VU of every shard rewrites the
// same recorded key, one iteration after another; no fresh value repeats.
// A 3-digit key has 900 values: the run gets all 900 before one repeats
// (guaranteed, not probable), and the 901st is counted as failed.
func TestFreshUniqueAcrossVUsAndShards(t *testing.T) {
	for _, tt := range []struct {
		name           string
		key            string
		shardVUs       []int // VUs of each shard (share of the run's VUs)
		iters          int   // per VU
		wantAllOfSpace bool
	}{
		{"uuid", "fcb94022-1e89-4ac5-a653-e360828c4282", []int{3, 2, 3}, 1500, false},
		{"12 digits", "123456789012", []int{4, 4}, 1500, false},
		{"3 digits", "123", []int{2, 2}, 300, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runVUs := 0
			for _, n := range tt.shardVUs {
				runVUs += n
			}
			seen := map[string]string{}
			l := line("POST", "/orders", `{"Idempotency-Key":["`+tt.key+`"]}`, "")
			for shard, vus := range tt.shardVUs {
				c := freshChain(t, `{transforms: [fresh: {headers: [Idempotency-Key]}]}`, vus, shard, len(tt.shardVUs), runVUs, 42)
				_, ps := pairs(t, l)
				for vu := range vus {
					for it := range tt.iters {
						if tt.wantAllOfSpace && it >= 900/runVUs {
							break
						}
						c.Begin(vu)
						p := ps[0]
						p.Req.Headers = append([]rrpair.Header(nil), p.Req.Headers...)
						c.Rewrite(vu, &p.Req, &p)
						v := string(p.Req.Headers[0].Value)
						who := fmt.Sprintf("shard %d VU %d iteration %d", shard, vu, it)
						if prev, ok := seen[v]; ok {
							t.Fatalf("%s: %q repeats %s's", who, v, prev)
						}
						seen[v] = who
					}
				}
				if n := c.Counts()[0]; n.Failed != 0 {
					t.Errorf("shard %d: %d failed", shard, n.Failed)
				}
			}
			if tt.wantAllOfSpace && len(seen) != 900 {
				t.Errorf("%d distinct 3-digit keys, want all 900", len(seen))
			}
		})
	}
	// Past the room of the shape: the value repeats, and it is counted.
	c := freshChain(t, `{transforms: [fresh: {headers: [K]}]}`, 1, 0, 1, 1, 42)
	_, ps := pairs(t, line("GET", "/", `{"K":["7"]}`, ""))
	for range 10 {
		c.Begin(0)
		p := ps[0]
		p.Req.Headers = append([]rrpair.Header(nil), p.Req.Headers...)
		c.Rewrite(0, &p.Req, &p)
	}
	if n := c.Counts()[0]; n.Changed != 10 || n.Failed != 1 {
		t.Errorf("a 1-digit key 10 times: %+v, want 10 changed, 1 failed (9 values)", n)
	}
}

// TestFreshWithinIteration: in one iteration the same recorded value gets
// one fresh value, in a header, a query parameter and the body, across
// requests; the next iteration gets another; a different recorded value
// gets a different one. The same seed gives the same values.
func TestFreshWithinIteration(t *testing.T) {
	const key = "9b2e61c4-3f0a-4d7e-8c15-a0b1c2d3e4f5"
	yml := `{transforms: [fresh: {headers: [Idempotency-Key], query: [key, user, oid], json: [key, order.id, items.*.ref, esc]}]}`
	lines := []string{
		line("POST", "/orders?key="+key+"&user=alice%40shop.example&page=2", `{"Idempotency-Key":["`+key+`"],"Content-Type":["application/json"]}`,
			`{"key":"`+key+`","order":{"id":1200457,"note":"keep"},"items":[{"ref":"r-77"},{"ref":"r-78"}],"esc":"a\\u0041"}`),
		line("GET", "/orders/x?oid=1200457&key="+key, `{"Idempotency-Key":["`+key+`"]}`, ""),
	}
	run := func(seed uint64) [][]string {
		c := freshChain(t, yml, 1, 0, 1, 1, seed)
		_, ps := pairs(t, lines...)
		var iters [][]string
		for range 2 {
			c.Begin(0)
			var got []string
			for _, p := range ps {
				p.Req.Headers = append([]rrpair.Header(nil), p.Req.Headers...)
				c.Rewrite(0, &p.Req, &p)
				got = append(got, wire(&p.Req))
			}
			iters = append(iters, got)
		}
		return iters
	}
	iters := run(7)
	first := iters[0][0]
	m := regexp.MustCompile(`Idempotency-Key: (\S+)`).FindStringSubmatch(first)
	if m == nil || m[1] == key || !isUUID([]byte(m[1])) {
		t.Fatalf("no fresh UUID key:\n%s", first)
	}
	fresh := m[1]
	for _, want := range []string{"?key=" + fresh + "&user=", `"key":"` + fresh + `"`, "Idempotency-Key: " + fresh, `"note":"keep"`, `"esc":"a\\u0041"`, "&page=2"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first request lacks %q:\n%s", want, first)
		}
	}
	if !strings.Contains(iters[0][1], "&key="+fresh) || !strings.Contains(iters[0][1], "Idempotency-Key: "+fresh) {
		t.Errorf("the second request of the iteration has another key than %s:\n%s", fresh, iters[0][1])
	}
	if strings.Contains(iters[1][0], fresh) {
		t.Errorf("the next iteration reuses %s:\n%s", fresh, iters[1][0])
	}
	refs := regexp.MustCompile(`"ref":"r-(\d\d)"`).FindAllStringSubmatch(first, -1)
	if len(refs) != 2 || refs[0][1] == refs[1][1] {
		t.Errorf("items refs %v: want two different fresh r-NN", refs)
	}
	if u := regexp.MustCompile(`user=([^&]+)`).FindStringSubmatch(first); u == nil || !regexp.MustCompile(`^[a-z]{5}%40shop\.example$`).MatchString(u[1]) {
		t.Errorf("user %v: want 5 fresh letters, @ encoded as recorded, the domain kept", u)
	} else if v, _ := url.QueryUnescape(u[1]); v == "alice@shop.example" {
		t.Errorf("user not fresh: %s", v)
	}
	if id := regexp.MustCompile(`"id":(\d+)`).FindStringSubmatch(first); id == nil || len(id[1]) != 7 || id[1] == "1200457" {
		t.Errorf("order.id %v: want a fresh 7-digit number", id)
	} else if !strings.Contains(iters[0][1], "?oid="+id[1]+"&") {
		t.Errorf("the JSON number %s is not the query's oid in the same session:\n%s", id[1], iters[0][1])
	}
	if again := run(7); fmt.Sprint(again) != fmt.Sprint(iters) {
		t.Errorf("seed 7 twice gave different values:\n%v\n%v", iters, again)
	}
	if other := run(8); other[0][0] == iters[0][0] {
		t.Errorf("seeds 7 and 8 gave the same values")
	}
}

func TestFreshConfigErrors(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{`{transforms: [fresh: {}]}`, "t.yaml:1: fresh: nothing to make fresh"},
		{`{transforms: [fresh: {headers: ["a b"]}]}`, `fresh: headers: "a b" is not a header name`},
		{`{transforms: [fresh: {json: [a..b]}]}`, `fresh: json: "a..b" is not a path`},
		{`{transforms: [fresh: {header: [X]}]}`, `unknown key "header" in fresh; want one of json, query, headers`},
	} {
		spec, err := Parse([]byte(tt.yaml), "t.yaml", "")
		if err == nil {
			_, err = Build(spec, false, Options{VUs: 1})
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

// FuzzFreshShape: whatever the recorded value, a fresh one has its length,
// keeps every byte that is not a letter or digit, and a JSON number stays
// a JSON number.
func FuzzFreshShape(f *testing.F) {
	for _, s := range []string{"123456789012", "fcb94022-1e89-4ac5-a653-e360828c4282", "cus_Ab3xZ9", "a@b", "-0.5e10", "é9", ""} {
		f.Add([]byte(s), uint64(3), false)
	}
	f.Add([]byte("-12.05e3"), uint64(1<<40), true)
	keys := [2]uint64{splitmix64(5), splitmix64(6)}
	alnum := func(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	f.Fuzz(func(t *testing.T, rec []byte, u uint64, number bool) {
		if number && !jsonNumber(rec) {
			return
		}
		dst := append([]byte(nil), rec...)
		sh := newFreshShape(rec, number)
		sh.fill(dst, u, &keys)
		if len(dst) != len(rec) {
			t.Fatalf("%q → %q: length changed", rec, dst)
		}
		for i := range rec {
			if !alnum(rec[i]) && dst[i] != rec[i] || alnum(rec[i]) != alnum(dst[i]) {
				t.Fatalf("%q → %q: byte %d", rec, dst, i)
			}
		}
		if number && !jsonNumber(dst) {
			t.Fatalf("%q → %q: not a JSON number", rec, dst)
		}
	})
}
