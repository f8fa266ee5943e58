package recording

import (
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/answers"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
)

// TestComparerMapsLearned: with the run's chain as Learned, a body and a
// header that differ from the recording only by the id the chain learned
// match, and comparing them allocates nothing once the buffers grew (the
// bytes compare equal once mapped: no JSON decoding).
func TestComparerMapsLearned(t *testing.T) {
	lines := `{"tags":{"session":"s"},"http":{"req":{"method":"POST","uri":"/orders","host":"h"},"res":{"statusCode":201,"headers":{"Location":["/orders/o-1"]},"body":"{\"id\":\"o-1\"}"}}}
{"tags":{"session":"s"},"http":{"req":{"method":"GET","uri":"/orders/o-1","host":"h"},"res":{"statusCode":200,"body":"{\"id\":\"o-1\",\"status\":\"created\"}"}}}
`
	f, err := rrpair.OpenReader(strings.NewReader(lines), "t.jsonl", rrpair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec, err := transform.Parse([]byte("transforms:\n  - correlate: {endpoint: POST /orders, json: id}\n"), "t.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	chain, err := transform.Build(spec, false, transform.Options{VUs: 1, Endpoints: f.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]rrpair.Pair, 2)
	for i := range ps {
		if err := f.NewCursor().WithResponses().Decode(i, &ps[i]); err != nil {
			t.Fatal(err)
		}
	}
	c := NewComparer(f.Endpoints(), true, nil, []string{"Location"})
	c.Learned = chain
	created := answers.New(201, `{"id":"o-77"}`, "Location", "/orders/o-77")
	read := answers.New(200, `{"id":"o-77","status":"created"}`)
	chain.Begin(0)
	chain.Observe(0, &ps[0], created) // the chain learns first, then the comparer maps
	c.Observe(0, &ps[0], created)
	c.Observe(0, &ps[1], read)
	if r := c.Result(); r.Compared != 2 || r.Matched != 2 {
		t.Fatalf("compared %d, matched %d, want 2 and 2 (%+v)", r.Compared, r.Matched, r.Mismatches)
	}
	if allocs := testing.AllocsPerRun(1000, func() { c.Observe(0, &ps[1], read) }); allocs != 0 {
		t.Errorf("comparing a mapped answer allocates %v times", allocs)
	}
}
