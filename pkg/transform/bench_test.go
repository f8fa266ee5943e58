package transform

import (
	"fmt"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// BenchmarkTransform runs each transform, and a chain of the common ones,
// on a realistic pair: an event POST with a bearer JWT, a request id and a
// JSON body with two timestamps. Header, query, timestamp and cached-JWT
// rewrites allocate nothing (docs/design.md invariant 3); regular expressions
// and signing say what they cost.
func BenchmarkTransform(b *testing.B) {
	l := benchLine(b)
	cases := []struct{ name, yaml string }{
		{"headers", `{transforms: [headers: {set: {X-Env: staging}, remove: [User-Agent], rename: {X-Request-Id: X-Trace-Id}}]}`},
		{"query", `{transforms: [query: {set: {source: replay}, remove: [debug]}]}`},
		{"path-prefix", `{transforms: [path: {prefix: /v1/, to: /v2/}]}`},
		{"path-regex", `{transforms: [path: {regex: '^/v1/(\w+)', to: '/v2/$1'}]}`},
		{"host", `{transforms: [host: api.staging]}`},
		{"timestamps-auto", `{transforms: [timestamps: {auto: true}]}`},
		{"timestamps-named", `{transforms: [timestamps: {json: [ts, sent_at], query: [since]}]}`},
		{"jwt-cached", `{transforms: [jwt: {secret: s3cret}]}`},
		{"jwt-sign-every-time", `{transforms: [jwt: {secret: s3cret, reuse: 0s}]}`},
		{"correlate", `{transforms: [correlate: {json: id}]}`},
		{"cookies", `{cookies: on}`},
		{"chain", `{transforms: [timestamps: {auto: true}, jwt: {secret: s3cret}, headers: {set: {X-Env: staging}}]}`},
	}
	for _, cs := range cases {
		b.Run(cs.name, func(b *testing.B) {
			_, ps := pairs(b, l)
			orig := ps[0]
			spec, err := Parse([]byte(cs.yaml), "b.yaml", "")
			if err != nil {
				b.Fatal(err)
			}
			c, err := Build(spec, false, Options{VUs: 1, Now: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			c.Begin(0)
			st := &c.vus[0].learn
			st.learn(0, []byte("o-123"), []byte("o-987"))
			st.cookies = append(st.cookies, mapping{from: []byte("sid"), to: []byte("live")})
			hs := make([]rrpair.Header, 0, 16)
			p := orig
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p.Req = orig.Req
				p.Req.Headers = append(hs[:0], orig.Req.Headers...)
				c.Rewrite(0, &p.Req, &p)
			}
			b.StopTimer()
			if n := c.Counts()[0]; n.Changed != int64(b.N) {
				b.Fatalf("%s changed %d of %d requests", cs.name, n.Changed, b.N)
			}
		})
	}
}

// benchLine is the pair the benchmark and the allocation test rewrite.
func benchLine(t testing.TB) string {
	tok := recordedToken(t, `{"alg":"HS256","typ":"JWT"}`)
	return line("POST", "/v1/events?source=web&since=2026-11-01T09%3A59%3A00Z",
		`{"Content-Type":["application/json"],"Authorization":["Bearer `+tok+`"],"X-Request-Id":["fcb94022-1e89-4ac5-a653-e360828c4282"],"User-Agent":["shop-web/4.2"],"Cookie":["theme=dark; sid=recorded"]}`,
		`{"type":"click","user_id":"u-0001832","ts":1793527200195,"sent_at":"2026-11-01T10:00:00.195Z","url":"/products/268","order":"o-123","referrer":"/home"}`)
}

// TestRewriteAllocs holds the package's promise: header, query, timestamp
// and cached-JWT rewrites allocate nothing per request once warm.
func TestRewriteAllocs(t *testing.T) {
	l := benchLine(t)
	for _, tt := range []struct{ name, yaml string }{
		{"headers", `{transforms: [headers: {set: {X-Env: staging}, remove: [User-Agent], rename: {X-Request-Id: X-Trace-Id}}]}`},
		{"query", `{transforms: [query: {set: {source: replay}, remove: [debug]}]}`},
		{"timestamps-auto", `{transforms: [timestamps: {auto: true}]}`},
		{"timestamps-named", `{transforms: [timestamps: {json: [ts, sent_at], query: [since]}]}`},
		{"jwt-cached", `{transforms: [jwt: {secret: s3cret}]}`},
		{"chain", `{transforms: [timestamps: {auto: true}, jwt: {secret: s3cret}, headers: {set: {X-Env: staging}}, query: {set: {source: replay}}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := chain(t, tt.yaml)
			_, ps := pairs(t, l)
			orig := ps[0]
			hs := make([]rrpair.Header, 0, 16)
			p := orig
			rewrite := func() {
				p.Req = orig.Req
				p.Req.Headers = append(hs[:0], orig.Req.Headers...)
				if err := c.Rewrite(0, &p.Req, &p); err != nil {
					t.Fatal(err)
				}
			}
			rewrite() // warm up: buffers grow, the JWT is signed and cached
			if allocs := testing.AllocsPerRun(100, rewrite); allocs != 0 {
				t.Errorf("%.1f allocations a request, want 0", allocs)
			}
			for i, n := range c.Counts() {
				if n.Changed != 102 || n.Failed != 0 { // the warm-up, AllocsPerRun's own warm-up, 100 runs
					t.Errorf("step %d: counts %+v, want 102 changed", i, n)
				}
			}
		})
	}
}

// freshCases are the fresh-value rewrites of the benchmark pair: a UUID
// header, a query value, and two body values (a prefixed ID and one after
// a type prefix).
var freshCases = []struct{ name, yaml string }{
	{"fresh-header", `{transforms: [fresh: {headers: [X-Request-Id]}]}`},
	{"fresh-query", `{transforms: [fresh: {query: [source]}]}`},
	{"fresh-json", `{transforms: [fresh: {json: [user_id, order]}]}`},
	{"fresh-all", `{transforms: [fresh: {headers: [X-Request-Id], query: [source], json: [user_id, order]}]}`},
}

// BenchmarkFresh makes the values of each request fresh, each request an
// iteration of its own (Begin): every value is made anew, none recalled.
func BenchmarkFresh(b *testing.B) {
	l := benchLine(b)
	for _, cs := range freshCases {
		b.Run(cs.name, func(b *testing.B) {
			_, ps := pairs(b, l)
			orig := ps[0]
			c := freshChain(b, cs.yaml, 1, 0, 1, 1, 7)
			hs := make([]rrpair.Header, 0, 16)
			p := orig
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.Begin(0)
				p.Req = orig.Req
				p.Req.Headers = append(hs[:0], orig.Req.Headers...)
				c.Rewrite(0, &p.Req, &p)
			}
			b.StopTimer()
			// Failed counts values past a shape's room ("web": 17 576,
			// "o-123": 900), made all the same.
			if n := c.Counts()[0]; n.Changed != int64(b.N) {
				b.Fatalf("%s: %+v of %d requests", cs.name, n, b.N)
			}
		})
	}
}

// TestFreshAllocs: fresh header, query and JSON body values allocate
// nothing per request once warm, whether made anew (a new iteration) or
// recalled (the same iteration).
func TestFreshAllocs(t *testing.T) {
	l := benchLine(t)
	for _, tt := range freshCases {
		for _, begin := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/new-iteration=%v", tt.name, begin), func(t *testing.T) {
				c := freshChain(t, tt.yaml, 1, 0, 1, 1, 7)
				_, ps := pairs(t, l)
				orig := ps[0]
				hs := make([]rrpair.Header, 0, 16)
				p := orig
				rewrite := func() {
					if begin {
						c.Begin(0)
					}
					p.Req = orig.Req
					p.Req.Headers = append(hs[:0], orig.Req.Headers...)
					if err := c.Rewrite(0, &p.Req, &p); err != nil {
						t.Fatal(err)
					}
				}
				rewrite()
				if allocs := testing.AllocsPerRun(100, rewrite); allocs != 0 {
					t.Errorf("%.1f allocations a request, want 0", allocs)
				}
				if n := c.Counts()[0]; n.Changed != 102 || n.Failed != 0 {
					t.Errorf("counts %+v, want 102 changed", n)
				}
			})
		}
	}
}
