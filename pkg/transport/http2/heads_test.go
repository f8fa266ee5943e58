package http2

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/replay-dev/replay/pkg/transport"
	"golang.org/x/net/http2/hpack"
)

// TestHeadCacheSameFields: answers' heads decode to the fields the SUT
// encoded, whether they come from the kept head (the same block again,
// the table as it was) or from the decoder (a new value, indexed or not,
// a table size update, another block in between), and a repeated head is
// taken from the kept one.
func TestHeadCacheSameFields(t *testing.T) {
	c := &Client{a: transport.AnswerOptions{}.WithDefaults()}
	c.dec = hpack.NewDecoder(ourTableSize, c.onField)
	c.dec.SetMaxStringLength(c.a.MaxHeaderBytes)
	var sb bytes.Buffer
	enc := hpack.NewEncoder(&sb)
	hits := 0
	for i := range 120 {
		fields := []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/json"}}
		switch {
		case i < 40: // the same head: indexed from the second on
			fields = append(fields, hpack.HeaderField{Name: "x-v", Value: "1"})
		case i < 60: // a value that changes, indexed each time
			fields = append(fields, hpack.HeaderField{Name: "x-v", Value: fmt.Sprint(i)})
		case i < 80: // a value that changes, never indexed
			fields = append(fields, hpack.HeaderField{Name: "date", Value: fmt.Sprint(i / 5), Sensitive: true})
		case i == 80:
			enc.SetMaxDynamicTableSizeLimit(64) // a size update opens the next block
			fields = append(fields, hpack.HeaderField{Name: "x-v", Value: "1"})
		default:
			fields = append(fields, hpack.HeaderField{Name: "x-v", Value: "1"})
		}
		sb.Reset()
		for _, f := range fields {
			if err := enc.WriteField(f); err != nil {
				t.Fatal(err)
			}
		}
		block := sb.Bytes()
		if c.heads.valid && bytes.Equal(block, c.heads.block) {
			hits++
		}
		c.ans.reset(c.a.MaxBody, true)
		c.st = stream{id: 1, length: -1}
		if err := c.onHeaders(1, true, true, block); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		var got, want []byte
		got = fmt.Appendf(got, ":status: %d\n", c.ans.status)
		for _, h := range c.ans.headers {
			got = fmt.Appendf(got, "%s: %s\n", h.Name, h.Value)
		}
		for _, f := range fields {
			want = fmt.Appendf(want, "%s: %s\n", f.Name, f.Value)
		}
		if !bytes.Equal(got, want) || !c.st.ended {
			t.Fatalf("answer %d (ended %v):\n%s\nwant\n%s", i, c.st.ended, got, want)
		}
	}
	if hits < 50 {
		t.Errorf("%d of 120 heads came from the kept one, want at least 50", hits)
	}
}

// BenchmarkHead is one answer's head as nginx sends it (a date and a
// server not indexed): decoded each time (decoder) against the kept one
// (kept).
func BenchmarkHead(b *testing.B) {
	var sb bytes.Buffer
	enc := hpack.NewEncoder(&sb)
	for _, f := range []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "server", Value: "nginx/1.24.0", Sensitive: true},
		{Name: "date", Value: "Sat, 28 Nov 2026 09:46:30 GMT", Sensitive: true}, {Name: "content-type", Value: "text/plain", Sensitive: true},
		{Name: "content-length", Value: "94", Sensitive: true}} {
		enc.WriteField(f)
	}
	block := sb.Bytes()
	for _, bc := range []struct {
		name string
		kept bool
	}{{"decoder", false}, {"kept", true}} {
		b.Run(bc.name, func(b *testing.B) {
			c := &Client{a: transport.AnswerOptions{}.WithDefaults()}
			c.dec = hpack.NewDecoder(ourTableSize, c.onField)
			b.ReportAllocs()
			for b.Loop() {
				c.heads.valid = c.heads.valid && bc.kept
				c.ans.reset(c.a.MaxBody, true)
				c.st = stream{id: 1, length: -1}
				if err := c.onHeaders(1, false, true, block); err != nil || c.ans.status != 200 {
					b.Fatalf("%v, status %d", err, c.ans.status)
				}
			}
		})
	}
}
