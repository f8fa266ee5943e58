package transform

import (
	"testing"

	"github.com/replay-dev/replay/pkg/result"
)

// TestMapLearned: a recorded answer is mapped as the session changed the
// recording (the order id learned, whole tokens only; a fresh request id),
// the answer that taught a value included; nothing applies before the
// session learned anything, or in the next session; it allocates nothing
// once the VU's buffers have grown.
func TestMapLearned(t *testing.T) {
	f, ps := pairs(t, orderFlow()...)
	c := chain(t, "transforms:\n  - correlate: {endpoint: POST /orders, json: id}\n  - fresh: {json: [ref]}\n", f.Endpoints()...)
	rec := result.RecordedBody(&ps[0].Res)
	c.Begin(0)
	if _, ok := c.MapLearned(0, rec); ok {
		t.Error("mapped before anything was learned")
	}
	c.Rewrite(0, &ps[0].Req, &ps[0])
	c.Observe(0, &ps[0], live(201, `{"id":"o-987","status":"created"}`))
	if got, ok := c.MapLearned(0, rec); !ok || string(got) != `{"id":"o-987","status":"created"}` {
		t.Errorf("the answer that taught the id: got %s %v", got, ok)
	}
	c.Rewrite(0, &ps[2].Req, &ps[2]) // its body's ref o-1234 made fresh
	fresh := string(ps[2].Req.Body[len(`{"order":"o-987","ref":"`) : len(`{"order":"o-987","ref":"`)+len("o-1234")])
	if fresh == "o-1234" {
		t.Fatalf("ref was not made fresh: %s", ps[2].Req.Body)
	}
	echo := []byte(`{"order":"o-123","ref":"o-1234","note":"yo-123 o-1234x"}`)
	if got, ok := c.MapLearned(0, echo); !ok || string(got) != `{"order":"o-987","ref":"`+fresh+`","note":"yo-123 o-1234x"}` {
		t.Errorf("got %s %v", got, ok)
	}
	if allocs := testing.AllocsPerRun(100, func() { c.MapLearned(0, echo) }); allocs != 0 {
		t.Errorf("MapLearned allocates %v times", allocs)
	}
	c.Begin(0)
	if _, ok := c.MapLearned(0, echo); ok {
		t.Error("a new session mapped what the last one learned")
	}
}
