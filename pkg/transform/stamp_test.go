package transform

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/rrpair"
)

type stampCounter struct {
	stamped  int
	accepted []uint64
	sent     int64 // the last accepted's send time, Unix µs
}

func (s *stampCounter) Nonce() uint32 { return 77 }
func (s *stampCounter) Stamped(int)   { s.stamped++ }
func (s *stampCounter) Accepted(_ int, q uint64, sent int64) {
	s.accepted, s.sent = append(s.accepted, q), sent
}

func TestStamp(t *testing.T) {
	tests := []struct {
		name, header, field, line, want string
		failed                          bool
	}{
		{"header", "ce-id", "", line("POST", "/e", `{"Ce-Id":["recorded"],"A":["1"]}`, `{"x":1}`), "POST /e\nCe-Id: ID\nA: 1\n{\"x\":1}", false},
		{"header added", "ce-id", "", line("POST", "/e", `{"A":["1"]}`, ""), "POST /e\nA: 1\nce-id: ID\n", false},
		{"json replaced", "", "id", line("POST", "/e", "", `{"specversion":"1.0","id":"recorded","data":{"id":1}}`), "POST /e\n" + `{"specversion":"1.0","id":"ID","data":{"id":1}}`, false},
		{"json added", "", "id", line("POST", "/e", "", ` {"type":"click"}`), "POST /e\n" + ` {"id":"ID","type":"click"}`, false},
		{"json into {}", "", "id", line("POST", "/e", "", `{}`), "POST /e\n" + `{"id":"ID"}`, false},
		{"not JSON", "", "id", line("POST", "/e", "", `a=1`), "POST /e\na=1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &stampCounter{}
			c, err := Build(nil, false, Options{VUs: 3, Now: func() time.Time { return now }, Stamp: &StampOptions{Header: tt.header, JSON: tt.field, Shard: 2, To: sc}})
			if err != nil {
				t.Fatal(err)
			}
			_, ps := pairs(t, tt.line)
			p := ps[0]
			c.Rewrite(2, &p.Req, &p)
			id := string(e2e.AppendID(nil, e2e.ID{Nonce: 77, Shard: 2, VU: 2, Seq: 0, Sent: now.UnixMicro()}))
			if got := wire(&p.Req); got != strings.ReplaceAll(tt.want, "ID", id) {
				t.Errorf("got\n%s\nwant\n%s", got, strings.ReplaceAll(tt.want, "ID", id))
			}
			if n := c.Counts()[0]; (n.Failed == 1) != tt.failed || (sc.stamped == 1) == tt.failed {
				t.Errorf("counts %+v, stamped %d, want failed=%v", n, sc.stamped, tt.failed)
			}
			c.Observe(2, &p, live(202, ""))
			if !tt.failed && (len(sc.accepted) != 1 || sc.accepted[0] != 0 || sc.sent != now.UnixMicro()) {
				t.Errorf("accepted %v sent at %d, want [0] sent at %d, the ID's send time", sc.accepted, sc.sent, now.UnixMicro())
			}
		})
	}
}

// TestStampFieldControlCharacter checks that a JSON field name with a
// control character is written as JSON (\u0001), not as Go (\x01).
func TestStampFieldControlCharacter(t *testing.T) {
	c, err := Build(nil, false, Options{VUs: 1, Now: func() time.Time { return now }, Stamp: &StampOptions{JSON: "i\x01d", To: &stampCounter{}}})
	if err != nil {
		t.Fatal(err)
	}
	_, ps := pairs(t, line("POST", "/e", "", `{"type":"click"}`))
	p := ps[0]
	c.Rewrite(0, &p.Req, &p)
	var got map[string]string
	if !json.Valid(p.Req.Body) || json.Unmarshal(p.Req.Body, &got) != nil || got["i\x01d"] == "" || got["type"] != "click" {
		t.Errorf("body %s: want valid JSON with the field \"i\\u0001d\"", p.Req.Body)
	}
}

func TestStampOnlyEndpoints(t *testing.T) {
	f, ps := pairs(t, line("POST", "/e", "", ""), line("GET", "/x", "", ""))
	sc := &stampCounter{}
	c, err := Build(nil, false, Options{VUs: 1, Endpoints: f.Endpoints(), Stamp: &StampOptions{Header: "ce-id", Only: []string{f.Endpoints()[ps[0].Endpoint]}, To: sc}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ps {
		p := ps[i]
		p.Req.Headers = nil
		c.Rewrite(0, &p.Req, &p)
		if stamped := len(p.Req.Headers) == 1; stamped != (i == 0) {
			t.Errorf("%s %s: stamped %v, want %v", p.Req.Method, p.Req.URI, stamped, i == 0)
		}
	}
	if sc.stamped != 1 {
		t.Errorf("stamped %d, want 1", sc.stamped)
	}
	_, err = Build(nil, false, Options{VUs: 1, Endpoints: f.Endpoints(), Stamp: &StampOptions{Header: "ce-id", Only: []string{"GET /nowhere"}, To: sc}})
	if err == nil || !strings.Contains(err.Error(), `correlation IDs: "GET /nowhere" is not an endpoint of the file; it has `) {
		t.Errorf("unknown endpoint: %v", err)
	}
}

func TestEndpointSet(t *testing.T) {
	var all endpointSet
	if !all.has(0) || !all.has(9) {
		t.Error("nil set: want every endpoint")
	}
	s, err := newEndpointSet([]string{"B", "C"}, []string{"A", "B", "C"})
	if err != nil {
		t.Fatal(err)
	}
	for ep, want := range []bool{false, true, true, false} { // 3: past the table
		if s.has(uint16(ep)) != want {
			t.Errorf("has(%d) = %v, want %v", ep, !want, want)
		}
	}
	if s, err := newEndpointSet(nil, []string{"A"}); s != nil || err != nil {
		t.Errorf("no names: %v, %v; want nil (every endpoint)", s, err)
	}
}

func TestStampAcceptsOnlyAnswersBelow400(t *testing.T) {
	sc := &stampCounter{}
	c, _ := Build(nil, false, Options{VUs: 1, Stamp: &StampOptions{Header: "ce-id", To: sc}})
	_, ps := pairs(t, line("POST", "/e", "", ""))
	for _, status := range []int{202, 500, 200, 429} {
		p := ps[0]
		p.Req.Headers = nil
		c.Rewrite(0, &p.Req, &p)
		c.Observe(0, &p, live(status, ""))
	}
	if sc.stamped != 4 || len(sc.accepted) != 2 || sc.accepted[0] != 0 || sc.accepted[1] != 2 {
		t.Errorf("stamped %d, accepted %v; want 4 and [0 2]", sc.stamped, sc.accepted)
	}
}

// BenchmarkStamp stamps a header and a JSON body field on each request and
// learns that the API accepted it: nothing allocated.
func BenchmarkStamp(b *testing.B) {
	sc := &stampCounter{}
	c, err := Build(nil, false, Options{VUs: 1, Stamp: &StampOptions{Header: "ce-id", JSON: "id", To: sc}})
	if err != nil {
		b.Fatal(err)
	}
	_, ps := pairs(b, line("POST", "/events", `{"Content-Type":["application/json"]}`, `{"type":"click","ts":1793527200195}`))
	orig := ps[0]
	p := orig
	resp := live(202, "")
	hs := make([]rrpair.Header, 0, 8)
	sc.accepted = make([]uint64, 0, 1<<20)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.Req = orig.Req
		p.Req.Headers = append(hs[:0], orig.Req.Headers...)
		c.Rewrite(0, &p.Req, &p)
		c.Observe(0, &p, resp)
		if len(sc.accepted) == cap(sc.accepted) {
			sc.accepted = sc.accepted[:0]
		}
	}
}
