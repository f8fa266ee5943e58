package transform

import "testing"

func TestEnvRewrites(t *testing.T) {
	tests := []struct{ name, yaml, line, want string }{
		{"headers set, remove, rename", `transforms:
  - headers:
      rename: {x-old: X-New}
      remove: [X-Debug]
      set: {x-env: staging, X-Added: "1"}
`, line("GET", "/a", `{"X-Env":["prod","eu"],"X-Debug":["1"],"X-Old":["v"],"x-debug":["2"],"Accept":["*/*"]}`, ""),
			"GET /a\nX-Env: staging\nX-New: v\nAccept: */*\nX-Added: 1\n"},
		{"query set and remove", `{transforms: [query: {set: {key: k2, new: "1"}, remove: [debug]}]}`,
			line("GET", "/s?debug=1&key=k1&q=a+b&key=k3&flag", "", ""),
			"GET /s?key=k2&q=a+b&flag&new=1\n"},
		{"query on a URI without one", `{transforms: [query: {set: {v: "2"}}]}`,
			line("GET", "/s", "", ""), "GET /s?v=2\n"},
		{"path prefix", `{transforms: [path: {prefix: /v1/, to: /api/v2/}]}`,
			line("GET", "/v1/users/7?x=/v1/", "", ""), "GET /api/v2/users/7?x=/v1/\n"},
		{"path regex", `{transforms: ["path": {regex: '^/users/(\d+)/feed$', to: '/feed/$1'}]}`,
			line("GET", "/users/42/feed?limit=2", "", ""), "GET /feed/42?limit=2\n"},
		{"host", `{transforms: [host: "api.staging:8443"]}`,
			line("GET", "/", `{"Host":["recorded"]}`, ""), "GET /\n(Host: api.staging:8443)\nHost: recorded\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := chain(t, tt.yaml)
			_, ps := pairs(t, tt.line)
			p := ps[0]
			c.Rewrite(0, &p.Req, &p)
			if got := wire(&p.Req); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if n := c.Counts()[0]; n.Changed != 1 {
				t.Errorf("changed %d, want 1", n.Changed)
			}
		})
	}
}

func TestUnchangedIsNotCounted(t *testing.T) {
	c := chain(t, `{transforms: [path: {prefix: /v1/, to: /v2/}, query: {remove: [debug]}]}`)
	_, ps := pairs(t, line("GET", "/v2/a?x=1", "", ""))
	p := ps[0]
	c.Rewrite(0, &p.Req, &p)
	for _, n := range c.Counts() {
		if n.Changed != 0 || n.Failed != 0 {
			t.Errorf("%+v, want nothing counted", n)
		}
	}
	if string(p.Req.URI) != "/v2/a?x=1" {
		t.Errorf("URI %s", p.Req.URI)
	}
}
