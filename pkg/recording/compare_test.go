package recording

import (
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/answers"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func TestComparer(t *testing.T) {
	eps := []string{"GET /a", "POST /b"}
	respond := func(status int, body string) *answers.Answer { return answers.New(status, body) }
	pair := func(ep uint16, status int, body string) *rrpair.Pair {
		return &rrpair.Pair{Endpoint: ep, Line: 3, Res: rrpair.Response{Status: status, Body: []byte(body)}}
	}
	for _, tt := range []struct {
		name          string
		body          bool
		ignore        []string
		pair          *rrpair.Pair
		resp          *answers.Answer
		match, counts bool
	}{
		{"same status", false, nil, pair(0, 200, "x"), respond(200, "y"), true, true},
		{"other status", false, nil, pair(0, 200, ""), respond(404, ""), false, true},
		{"no recorded status", false, nil, pair(0, 0, ""), respond(200, ""), false, false},
		{"same bytes", true, nil, pair(1, 202, "ok"), respond(202, "ok"), true, true},
		{"other bytes", true, nil, pair(1, 202, "ok"), respond(202, "ko"), false, true},
		{"JSON in another order", true, nil, pair(1, 202, `{"a":1,"b":[1,2]}`), respond(202, `{"b":[1,2], "a":1}`), true, true},
		{"JSON ids ignored", true, []string{"id", "items.*.ts"}, pair(1, 202, `{"id":"evt-1","items":[{"ts":1,"v":2}]}`), respond(202, `{"id":"evt-9","items":[{"ts":5,"v":2}]}`), true, true},
		{"JSON differs beyond the ignored", true, []string{"id"}, pair(1, 202, `{"id":"1","v":2}`), respond(202, `{"id":"2","v":3}`), false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewComparer(eps, tt.body, tt.ignore, nil)
			c.Observe(0, tt.pair, tt.resp)
			r := c.Result()
			if got := r.Compared == 1; got != tt.counts {
				t.Fatalf("compared %d", r.Compared)
			}
			if got := r.Matched == 1; tt.counts && got != tt.match {
				t.Errorf("matched %d, want match=%v (%+v)", r.Matched, tt.match, r.Mismatches)
			}
			if !tt.match && tt.counts && (len(r.Mismatches) != 1 || r.Mismatches[0].Line != 3) {
				t.Errorf("mismatches %+v, want one example from line 3", r.Mismatches)
			}
		})
	}
	hc := NewComparer(eps, false, nil, []string{"content-type"})
	recorded := pair(0, 200, "")
	recorded.Res.Headers = []rrpair.Header{{Name: []byte("Content-Type"), Value: []byte("application/json")}}
	plain := respond(200, "")
	plain.Fields = append(plain.Fields, rrpair.Header{Name: []byte("Content-Type"), Value: []byte("text/plain")})
	hc.Observe(0, recorded, plain)
	json := respond(200, "")
	json.Fields = append(json.Fields, rrpair.Header{Name: []byte("Content-Type"), Value: []byte("application/json")})
	hc.Observe(0, recorded, json)
	if r := hc.Result(); r.Matched != 1 || len(r.Mismatches) != 1 || r.Mismatches[0].Kind != "header content-type" || r.Mismatches[0].Replayed != "text/plain" {
		t.Errorf("headers: %+v", r)
	}

	c := NewComparer(eps, false, nil, nil)
	for i := 0; i < 10; i++ {
		c.Observe(0, pair(0, 200, ""), respond(200, ""))
		if i < 4 {
			c.Observe(1, pair(1, 202, ""), respond(500, ""))
		}
	}
	r := c.Result()
	if r.Compared != 14 || r.Matched != 10 || r.Endpoints[1].MatchPct != 0 || r.Endpoints[0].MatchPct != 100 || r.Mismatches[0].Count != 4 {
		t.Errorf("got %+v", r)
	}
	s := &report.Summary{Compare: r}
	th, err := report.ParseThreshold("match>99%")
	if err != nil {
		t.Fatal(err)
	}
	if report.Evaluate(s, []report.Threshold{th}) || !strings.HasPrefix(s.Thresholds[0].Threshold, "match") {
		t.Errorf("match>99%% passed at %v%%", r.MatchPct)
	}
	if !report.NeedsCompare([]report.Threshold{th}) {
		t.Error("NeedsCompare is false for match")
	}
}
