package http2

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/replay-dev/replay/pkg/rrpair"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// encodingClient is a client with only what encoding needs: its field
// list, an encoder on a new table, and its interned strings.
func encodingClient() *Client {
	c := &Client{strs: make(map[string]string)}
	c.useOwn()
	c.enc = hpack.NewEncoder(&c.hb)
	c.blocks.changed()
	return c
}

// blockRequest is a request whose x-n header says n.
func blockRequest(path string, n int) *rrpair.Request {
	return &rrpair.Request{Method: []byte("GET"), URI: []byte(path), Headers: []rrpair.Header{
		{Name: []byte("Host"), Value: []byte("example.test")},
		{Name: []byte("Accept"), Value: []byte("application/json")},
		{Name: []byte("X-N"), Value: fmt.Appendf(nil, "%d", n)},
	}}
}

// TestBlockCacheSameBytes: the blocks encode sends, kept ones among them,
// are byte for byte those the encoder alone writes, for lists that repeat,
// alternate, change a value each time, and across a change of the SUT's
// table size; and they decode to the list.
func TestBlockCacheSameBytes(t *testing.T) {
	c, ref := encodingClient(), encodingClient()
	dec := hpack.NewDecoder(4096, nil)
	hits := 0
	for i := range 200 {
		var req *rrpair.Request
		switch {
		case i < 50: // the same list
			req = blockRequest("/a", 1)
		case i < 100: // two lists in turn
			req = blockRequest([]string{"/a", "/b"}[i%2], 1)
		case i < 150: // a value that changes each time
			req = blockRequest("/a", i)
		default:
			req = blockRequest("/c", 2)
		}
		if i == 120 || i == 170 { // the SUT's SETTINGS_HEADER_TABLE_SIZE
			s := http2.Setting{ID: http2.SettingHeaderTableSize, Val: uint32(64 * (i - 100))}
			if err := c.setting(s); err != nil {
				t.Fatal(err)
			}
			ref.enc.SetMaxDynamicTableSizeLimit(s.Val)
		}
		c.fl.build(req, false, []byte("example.test"))
		ref.fl.build(req, false, []byte("example.test"))
		if _, ok := c.blocks.lookup(&c.fl); ok {
			hits++
		}
		c.encode(&c.fl)
		ref.encodeFields(&ref.fl)
		if !bytes.Equal(c.hb.b, ref.hb.b) {
			t.Fatalf("request %d: block %x, the encoder writes %x", i, c.hb.b, ref.hb.b)
		}
		fields, err := dec.DecodeFull(c.hb.b)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		var got, want []byte
		for _, f := range fields {
			got = fmt.Appendf(got, "%s: %s\n", f.Name, f.Value)
		}
		want = c.fl.appendTo(want)
		if !bytes.Equal(got, want) {
			t.Fatalf("request %d: decodes to\n%s\nwant\n%s", i, got, want)
		}
	}
	if hits < 100 {
		t.Errorf("%d of 200 blocks came from the cache, want at least 100", hits)
	}
}

// BenchmarkEncode is one GET's header block: the encoder's every time
// (encoder) against the kept block (cached).
func BenchmarkEncode(b *testing.B) {
	req := &rrpair.Request{Method: []byte("GET"), URI: []byte("/items/42?x=1"), Headers: []rrpair.Header{
		{Name: []byte("Accept"), Value: []byte("application/json")},
		{Name: []byte("User-Agent"), Value: []byte("app/1.0")},
		{Name: []byte("X-Request-Id"), Value: []byte("abc-123")},
	}}
	for _, bc := range []struct {
		name string
		enc  func(c *Client)
	}{{"encoder", func(c *Client) { c.encodeFields(&c.fl) }}, {"cached", func(c *Client) { c.encode(&c.fl) }}} {
		b.Run(bc.name, func(b *testing.B) {
			c, host := encodingClient(), []byte("127.0.0.1:8080")
			b.ReportAllocs()
			for b.Loop() {
				c.fl.build(req, false, host)
				bc.enc(c)
			}
		})
	}
}
