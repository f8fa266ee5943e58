package transform

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// recordedAt is when the test traffic was recorded; now is the replay.
var (
	recordedAt = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	now        = time.Date(2026, 11, 23, 8, 30, 15, 0, time.UTC)
	delta      = now.Sub(recordedAt)
)

// pairs decodes RRPair lines (with their responses) from a file of them.
func pairs(t testing.TB, lines ...string) (*rrpair.File, []rrpair.Pair) {
	t.Helper()
	f, err := rrpair.OpenReader(strings.NewReader(strings.Join(lines, "\n")+"\n"), "test.jsonl", rrpair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var out []rrpair.Pair
	for i := range f.Len() {
		// a cursor per pair: decoded bytes live in the cursor's buffers
		cur := f.NewCursor().WithResponses()
		var p rrpair.Pair
		if err := cur.Decode(i, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return f, out
}

// line builds an RRPair line recorded at recordedAt.
func line(method, uri string, headers, body string) string {
	if headers == "" {
		headers = "{}"
	}
	b := ""
	if body != "" {
		b = fmt.Sprintf(`,"body":%q`, body)
	}
	return fmt.Sprintf(`{"ts":%q,"http":{"req":{"method":%q,"uri":%q,"host":"api","headers":%s%s}}}`,
		recordedAt.Format(time.RFC3339Nano), method, uri, headers, b)
}

// chain builds a chain from YAML for one VU on the test clock.
func chain(t testing.TB, yml string, endpoints ...string) *Chain {
	t.Helper()
	spec, err := Parse([]byte(yml), "t.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(spec, false, Options{VUs: 1, Endpoints: endpoints, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wire renders a request the way tests compare it: request line, headers,
// body.
func wire(r *rrpair.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", r.Method, r.URI)
	if len(r.HostHeader) > 0 {
		fmt.Fprintf(&b, "(Host: %s)\n", r.HostHeader)
	}
	for _, h := range r.Headers {
		fmt.Fprintf(&b, "%s: %s\n", h.Name, h.Value)
	}
	b.Write(r.Body)
	return b.String()
}
