package transform

import (
	"testing"
	"time"
)

// TestProgramChainsShareNothing: the chains of one compiled program (a
// prepared run's runs) keep nothing of each other: a correlated value
// learned by one is unknown to the next, counts start at zero, the token
// cache is each chain's own, and fresh values follow each chain's seed.
func TestProgramChainsShareNothing(t *testing.T) {
	f, ps := pairs(t, orderFlow()...)
	spec, err := Parse([]byte("transforms:\n  - correlate: {endpoint: POST /orders, json: id}\n  - jwt: {secret: s}\n  - fresh: {json: [items]}\ncookies: on\n"), "t.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{VUs: 1, Endpoints: f.Endpoints(), Now: func() time.Time { return now }, Seed: 1}
	prog, err := Compile(spec, false, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !prog.Learns() || prog.Len() != 4 {
		t.Fatalf("Learns %v Len %d, want a learning program of 4 transforms", prog.Learns(), prog.Len())
	}
	first, err := prog.Chain(opt)
	if err != nil {
		t.Fatal(err)
	}
	first.Begin(0)
	first.Rewrite(0, &ps[0].Req, &ps[0])
	first.Observe(0, &ps[0], live(201, `{"id":"o-987"}`, "Set-Cookie", "sid=live; Path=/"))
	first.Rewrite(0, &ps[1].Req, &ps[1])
	if got := string(ps[1].Req.URI); got != "/orders/o-987" {
		t.Fatalf("the first chain did not learn: %s", got)
	}

	opt.Seed = 2
	second, err := prog.Chain(opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range second.Counts() {
		if c.Changed != 0 || c.Failed != 0 {
			t.Errorf("the second chain starts with counts %+v", c)
		}
	}
	if first.Names()[2] == second.Names()[2] {
		t.Errorf("fresh values of seed 1 and seed 2 are named alike: %q", first.Names()[2])
	}
	_, ps = pairs(t, orderFlow()...)
	second.Begin(0)
	second.Rewrite(0, &ps[1].Req, &ps[1]) // no answer observed by this chain
	if got := string(ps[1].Req.URI); got != "/orders/o-123" {
		t.Errorf("the second chain used a value the first learned: %s", got)
	}
	if got := ps[1].Req.Headers[0].Value; string(got) != "a=1; sid=recorded; b=2" {
		t.Errorf("the second chain sent the first chain's cookie: %s", got)
	}
	j1, j2 := first.steps[1].(*jwtSigner), second.steps[1].(*jwtSigner)
	if j1 == j2 || j1.key == nil || j2.key == nil {
		t.Error("the chains share one token cache, or lost the compiled key")
	}
}
