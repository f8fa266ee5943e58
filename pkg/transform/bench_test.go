package transform

import (
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// BenchmarkTransform runs each transform, and a chain of the common ones,
// on a realistic pair: an event POST with a bearer JWT, a request id and a
// JSON body with two timestamps. Header, query, timestamp and cached-JWT
// rewrites allocate nothing (DESIGN.md invariant 3); regular expressions
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
