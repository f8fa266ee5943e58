package har

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSummary: the sentence the import prints, from a real file and from
// the counts that shape it (plurals, the first five bodies not captured).
func TestSummary(t *testing.T) {
	st, _, _ := convertFile(t, "chrome-har-params-object.har")
	mixed, err := os.Open(filepath.Join("testdata", "mixed-recorders.har"))
	if err != nil {
		t.Fatal(err)
	}
	defer mixed.Close()
	mst, err := Convert(mixed, io.Discard, func(int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		st   Stats
		want string
	}{
		{"mixed recorders", mst, "8 entries, 5 pairs written (3 recorded as HTTP/2 or 3); skipped 3: cache 1, no-answer 1, websocket 1; " +
			"dropped 1 request header field, 1 answer header field; 1 body not captured, sent empty (entries 8)"},
		{"a shape skipped", st, "3 entries, 2 pairs written (2 recorded as HTTP/2 or 3); skipped 1: shape 1"},
		{"nothing", Stats{}, "0 entries, 0 pairs written (0 recorded as HTTP/2 or 3)"},
		{"plurals", Stats{Entries: 9, Written: 9, BadHeaders: 2, AnswersDropped: 3, NoBody: []int{1, 2, 3, 4, 5, 6, 9}},
			"9 entries, 9 pairs written (0 recorded as HTTP/2 or 3); dropped 2 request header fields, 3 recorded answers; 7 bodies not captured, sent empty (entries 1, 2, 3, 4, 5 and 2 more)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.st.Summary(); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestLooks: a HAR is told from other files by its first bytes, a
// byte-order mark before it or not, cut short or not.
func TestLooks(t *testing.T) {
	for _, c := range []struct {
		head string
		want bool
	}{
		{`{"log":{"version":"1.2","entries":[`, true},
		{"\xef\xbb\xbf{\n  \"log\": {", true},
		{`{"log"`, true},
		{`{"http":{"req":{"method":"GET"}}}`, false},
		{`{"x":1,"log":{}}`, false},
		{`[{"log":{}}]`, false},
		{"1 8a2b0001 1793527200000000000 0\n", false},
		{"", false},
	} {
		if got := Looks([]byte(c.head)); got != c.want {
			t.Errorf("Looks(%q) = %v, want %v", c.head, got, c.want)
		}
	}
	for _, name := range []string{"browser.har", "bom.har", "mixed-recorders.har"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if !Looks(b[:min(len(b), 64)]) {
			t.Errorf("%s: does not look like a HAR", name)
		}
	}
}
