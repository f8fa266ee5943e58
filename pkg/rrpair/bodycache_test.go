package rrpair

import (
	"bytes"
	"strings"
	"testing"
)

// postLine is a 2 KiB JSON event recorded as a text body: its quotes are
// escaped in the line, as a recorder writes them.
var postLine = func() string {
	body := `{"type":"page_view","user_id":"u-0012345","session_id":"s-7f3a9c","ts":1700000000000,"url":"/products/42","pad":"`
	body += strings.Repeat("x", 2048-len(body)-2) + `"}`
	return `{"http":{"req":{"method":"POST","uri":"/events","host":"h:1","headers":{"Content-Type":["application/json"]},"body":"` +
		strings.ReplaceAll(body, `"`, `\"`) + `"},"res":{"statusCode":202,"body":"{\"ok\":true}"}}}`
}()

// cacheLines are lines whose request bodies hold every kind of escape, one
// without escapes, one in base64, and a line without a body.
var cacheLines = []string{
	postLine,
	`{"http":{"req":{"method":"POST","uri":"/u","host":"h:1","body":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t end"}}}`,
	`{"http":{"req":{"method":"POST","uri":"/plain","host":"h:1","body":"no escapes here"}}}`,
	`{"http":{"req":{"method":"POST","uri":"/b64","host":"h:1","bodyBase64":"eyJhIjoxfQ=="}}}`,
	goodLine,
	`{"http":{"req":{"method":"PUT","uri":"/ws","host":"h:1","body" :  "a\"b"}}}`,
}

func openWith(t testing.TB, content string, opt Options) *File {
	t.Helper()
	f, err := Open(writeFile(t, content), opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestBodyCacheSameBodies decodes every pair with and without the cache:
// the same pair, byte for byte, from a cursor that decoded others between.
func TestBodyCacheSameBodies(t *testing.T) {
	content := strings.Join(cacheLines, "\n") + "\n"
	plain := openWith(t, content, Options{})
	cached := openWith(t, content, Options{BodyCache: 1 << 20})
	if bc := plain.BodyCache(); bc.Cached || bc.Escaped != 3 {
		t.Errorf("without a bound: got %+v, want 3 escaped bodies, none cached", bc)
	}
	bc := cached.BodyCache()
	if !bc.Cached || bc.Escaped != 3 || bc.Bytes <= 0 || bc.Bytes > 1<<20 || bc.Limit != 1<<20 {
		t.Fatalf("with 1 MiB: got %+v, want 3 escaped bodies cached within the bound", bc)
	}
	pc, cc := plain.NewCursor().WithResponses(), cached.NewCursor().WithResponses()
	var want, got Pair
	for round := 0; round < 2; round++ {
		for i := range plain.Len() {
			if err := pc.Decode(i, &want); err != nil {
				t.Fatal(err)
			}
			if err := cc.Decode(i, &got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Req.Body, want.Req.Body) || (got.Req.Body == nil) != (want.Req.Body == nil) {
				t.Errorf("pair %d: cached body %q, want %q", i, got.Req.Body, want.Req.Body)
			}
			if !bytes.Equal(got.Res.Body, want.Res.Body) || string(got.Req.URI) != string(want.Req.URI) {
				t.Errorf("pair %d: the rest of the pair differs: %q %q, want %q %q", i, got.Req.URI, got.Res.Body, want.Req.URI, want.Res.Body)
			}
			if b := got.Req.Body; cached.cachedBodyOf(i) != nil && cap(b) != len(b) {
				t.Errorf("pair %d: cached body has room after it (cap %d, len %d): an append would write into the next", i, cap(b), len(b))
			}
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { cc.Decode(0, &got) }); allocs != 0 {
		t.Errorf("got %v allocs per decode of a cached body, want 0", allocs)
	}
}

// TestBodyCacheBound: bodies that do not fit in the bound are not cached,
// and decode as before.
func TestBodyCacheBound(t *testing.T) {
	content := strings.Repeat(postLine+"\n", 10)
	need := openWith(t, content, Options{BodyCache: 1 << 30}).BodyCache().Bytes
	if need < 10*2048 {
		t.Fatalf("ten 2 KiB bodies said to need %d bytes", need)
	}
	at := openWith(t, content, Options{BodyCache: need}).BodyCache()
	if !at.Cached {
		t.Errorf("bound = what they need (%d): got %+v, want cached", need, at)
	}
	f := openWith(t, content, Options{BodyCache: need - 1})
	below := f.BodyCache()
	if below.Cached || below.Bytes != need || f.bodies != nil || f.bodyOf != nil {
		t.Errorf("bound one byte short (%d): got %+v, want not cached, %d bytes needed, nothing kept", need-1, below, need)
	}
	var p Pair
	if err := f.NewCursor().Decode(9, &p); err != nil || len(p.Req.Body) != 2048 {
		t.Errorf("uncached decode: body of %d bytes, err %v; want 2048", len(p.Req.Body), err)
	}
	if bc := openWith(t, goodLine+"\n", Options{BodyCache: 1 << 20}).BodyCache(); bc.Cached || bc.Escaped != 0 || bc.Bytes != 0 {
		t.Errorf("no escaped body: got %+v, want nothing", bc)
	}
}

// TestBodyCacheShard: a shard's cursors find the cached bodies of its own
// pairs.
func TestBodyCacheShard(t *testing.T) {
	var sb strings.Builder
	for i := range 6 {
		sb.WriteString(strings.Replace(cacheLines[1], `end`, strings.Repeat("e", i), 1) + "\n")
	}
	f := openWith(t, sb.String(), Options{BodyCache: 1 << 20, Shard: Shard{Index: 1, Count: 2}})
	c := f.NewCursor()
	var p Pair
	for k := range f.Iterations() {
		c.Start(k)
		if ok, err := c.Next(&p); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if want := strings.Repeat("e", 2*k+1); !bytes.HasSuffix(p.Req.Body, []byte("\t "+want)) {
			t.Errorf("iteration %d: body %q, want it to end with %q", k, p.Req.Body, want)
		}
	}
}

// BenchmarkDecodePost decodes a 2 KiB escaped POST body at each decode
// (uncached) and from the cache (cached), and the same body without
// escapes (raw), in one run.
func BenchmarkDecodePost(b *testing.B) {
	raw := strings.ReplaceAll(postLine, `\"`, `'`)
	for _, bc := range []struct {
		name, line string
		limit      int64
	}{{"uncached", postLine, 0}, {"cached", postLine, 1 << 20}, {"raw", raw, 0}} {
		b.Run(bc.name, func(b *testing.B) {
			f := openWith(b, bc.line, Options{BodyCache: bc.limit})
			c := f.NewCursor()
			var p Pair
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.line)))
			for b.Loop() {
				if err := c.Decode(0, &p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
