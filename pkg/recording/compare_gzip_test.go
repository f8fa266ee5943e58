package recording

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/answers"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func gzipped(t *testing.T, s string, level int) string {
	t.Helper()
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

// --compare body compares what the bodies mean: each side decoded by its
// own Content-Encoding, so a gzip answer matches its decoded recording (as
// HAR keeps it) and a gzip recording (compressed at another level, so the
// bytes differ).
func TestCompareBodyDecodesEachSide(t *testing.T) {
	const doc = `{"id":"evt-1","status":"accepted","items":[1,2,3]}`
	gzipHeader := []rrpair.Header{{Name: []byte("Content-Encoding"), Value: []byte("gzip")}}
	live := answers.New(200, gzipped(t, doc, gzip.BestSpeed), "Content-Encoding", "gzip")
	for _, tt := range []struct {
		name     string
		recorded rrpair.Response
		live     *answers.Answer
		match    bool
	}{
		{"gzip answer, decoded recording", rrpair.Response{Status: 200, Body: []byte(doc)}, live, true},
		{"gzip answer, gzip recording", rrpair.Response{Status: 200, Headers: gzipHeader, Body: []byte(gzipped(t, doc, gzip.BestCompression))}, live, true},
		{"plain answer, gzip recording", rrpair.Response{Status: 200, Headers: gzipHeader, Body: []byte(gzipped(t, doc, gzip.BestCompression))}, answers.New(200, doc), true},
		{"gzip answer that differs", rrpair.Response{Status: 200, Body: []byte(doc)},
			answers.New(200, gzipped(t, `{"id":"evt-1","status":"rejected"}`, gzip.BestSpeed), "Content-Encoding", "gzip"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.match && bytes.Equal(tt.recorded.Body, tt.live.RawBody()) {
				t.Fatal("the case is void: the raw bytes are equal")
			}
			c := NewComparer([]string{"GET /a"}, true, nil, nil)
			c.Observe(0, &rrpair.Pair{Line: 7, Res: tt.recorded}, tt.live)
			r := c.Result()
			if got := r.Matched == 1; got != tt.match {
				t.Fatalf("matched %d of %d, want match=%v (%+v)", r.Matched, r.Compared, tt.match, r.Mismatches)
			}
			if !tt.match && (len(r.Mismatches) != 1 || r.Mismatches[0].Replayed != `{"id":"evt-1","status":"rejected"}`) {
				t.Errorf("mismatches %+v, want the decoded live body as the example", r.Mismatches)
			}
		})
	}
}
