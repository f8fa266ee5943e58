package http2

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/replay-dev/replay/pkg/transport"
	"golang.org/x/net/http2/hpack"
)

// takeHead has c take block as the head of a new answer on stream 1,
// ending the stream or not.
func takeHead(c *Client, block []byte, end bool) error {
	c.ans.reset(c.a.MaxBody, true)
	*c.st = stream{id: 1, length: -1}
	c.cs.nextID = 3 // stream 1 opened
	return c.onHeaders(1, end, true, block)
}

// headText is the answer's head as c took it, one "name: value" line each.
func headText(c *Client) []byte {
	b := fmt.Appendf(nil, ":status: %d\n", c.ans.status)
	for _, h := range c.ans.headers {
		b = fmt.Appendf(b, "%s: %s\n", h.Name, h.Value)
	}
	return b
}

// fieldsText is fields, one "name: value" line each.
func fieldsText(fields []hpack.HeaderField) []byte {
	var b []byte
	for _, f := range fields {
		b = fmt.Appendf(b, "%s: %s\n", f.Name, f.Value)
	}
	return b
}

// TestHeadCacheSameFields: answers' heads decode to the fields the SUT
// encoded, whether they come from the kept head (the same block again,
// the table as it was) or from the decoder (a new value, indexed or not,
// a table size update, another block in between), and a repeated head is
// taken from the kept one.
func TestHeadCacheSameFields(t *testing.T) {
	c := &Client{a: transport.AnswerOptions{}.WithDefaults()}
	c.useOwn()
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
		if err := takeHead(c, block, true); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if got, want := headText(c), fieldsText(fields); !bytes.Equal(got, want) || !c.st.ended {
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
			c.useOwn()
			c.dec = hpack.NewDecoder(ourTableSize, c.onField)
			b.ReportAllocs()
			for b.Loop() {
				c.heads.valid = c.heads.valid && bc.kept
				if err := takeHead(c, block, false); err != nil || c.ans.status != 200 {
					b.Fatalf("%v, status %d", err, c.ans.status)
				}
			}
		})
	}
}

// nginxHead is a head as nginx writes it: :status from the static table,
// then each field a literal with incremental indexing under a static
// name, added to the table at every answer.
func nginxHead(date string) []byte {
	b := []byte{0x88}
	for _, f := range []struct {
		idx   byte
		value string
	}{{54, "nginx/1.22.1"}, {33, date}, {31, "text/plain"}, {28, "94"}} {
		b = append(b, 0x40|f.idx, byte(len(f.value)))
		b = append(b, f.value...)
	}
	return b
}

// TestHeadCacheKeepsTableInStep: heads that add to the table at every
// answer (nginx's) are taken from the kept one, and a head that then reads
// the table (the last entry added, the date of the answer before the last,
// one near the table's end) decodes as a decoder that saw every head
// decodes it, after runs of every length, up to and past those that fill
// the table.
func TestHeadCacheKeepsTableInStep(t *testing.T) {
	c := &Client{a: transport.AnswerOptions{}.WithDefaults()}
	c.useOwn()
	c.dec = hpack.NewDecoder(ourTableSize, c.onField)
	ref := hpack.NewDecoder(ourTableSize, nil)
	// :status 200, entries 62 (the last added) and 68 (the date of the
	// answer before the last); then entry 132, near the end of the table
	// once it is full.
	readsTable := []byte{0x88, 0xbe, 0xc4}
	readsDeep := []byte{0x88, 0xff, 132 - 127}
	hits, n := 0, 0
	check := func(block []byte) {
		t.Helper()
		if c.heads.valid && bytes.Equal(block, c.heads.block) {
			hits++
		}
		n++
		if err := takeHead(c, block, false); err != nil {
			t.Fatalf("head %d: %v", n, err)
		}
		fields, err := ref.DecodeFull(block)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := headText(c), fieldsText(fields); !bytes.Equal(got, want) {
			t.Fatalf("head %d:\n%s\nwant\n%s", n, got, want)
		}
	}
	for run, repeat := range []int{1, 2, 5, 19, 20, 21, 40, 3} {
		for range repeat {
			check(nginxHead(fmt.Sprintf("Sat, 28 Nov 2026 09:50:%02d GMT", run)))
		}
		if run >= 1 { // the table has an entry 68 by then
			check(readsTable)
		}
		if run >= 4 {
			check(readsDeep)
		}
	}
	if hits < 90 {
		t.Errorf("%d of %d heads came from the kept one, want at least 90", hits, n)
	}
}

// FuzzStaticOnly: a block staticOnly passes decodes to the same fields
// with an empty table and with one full of other entries; one that adds
// nothing by staticOnly, or that changesTable passes, leaves the table as
// it was (the entries read after it are those of a decoder that did not
// see it).
func FuzzStaticOnly(f *testing.F) {
	f.Add(nginxHead("Sat, 28 Nov 2026 09:50:31 GMT"))
	f.Add([]byte{0x88, 0xbe, 0xc4})
	f.Add([]byte{0x3f, 0xe1, 0x1f, 0x88})
	f.Add([]byte{0x82, 0x0f, 0x10, 0x02, 'h', 'i'})
	var full bytes.Buffer
	enc := hpack.NewEncoder(&full)
	for i := range 40 {
		enc.WriteField(hpack.HeaderField{Name: fmt.Sprintf("x-%d", i), Value: "v"})
	}
	probe := []byte{}
	for i := range 40 {
		probe = append(probe, 0x80|byte(62+i)) // each entry the 40 fields made
	}
	filledDecoder := func(t *testing.T) *hpack.Decoder {
		d := hpack.NewDecoder(ourTableSize, nil)
		if _, err := d.DecodeFull(full.Bytes()); err != nil {
			t.Fatal(err)
		}
		return d
	}
	f.Fuzz(func(t *testing.T, block []byte) {
		adds, static := staticOnly(block, nil)
		stable := !changesTable(block) || static && len(adds) == 0
		if !static && !stable {
			return
		}
		empty, filled := hpack.NewDecoder(ourTableSize, nil), filledDecoder(t)
		a, errA := empty.DecodeFull(block)
		b, errB := filled.DecodeFull(block)
		if static && ((errA == nil) != (errB == nil) || errA == nil && !bytes.Equal(fieldsText(a), fieldsText(b))) {
			t.Fatalf("static block %x: %v %v, %v %v", block, a, errA, b, errB)
		}
		if !stable || errB != nil {
			return
		}
		after, err := filled.DecodeFull(probe)
		if err != nil {
			t.Fatalf("block %x: the table reads no more: %v", block, err)
		}
		want, _ := filledDecoder(t).DecodeFull(probe)
		if !bytes.Equal(fieldsText(after), fieldsText(want)) {
			t.Fatalf("block %x changed the table, said it did not", block)
		}
	})
}
