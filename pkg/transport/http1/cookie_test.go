package http1

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/vu"
)

// TestCookieFieldsJoined: a pair recorded as HTTP/2 with its Cookie split
// in two fields reaches an HTTP/1.1 server as one Cookie line, "a=1; b=2"
// (RFC 9113 §8.2.3), and counts as downgraded; the server's own parser
// reads one value.
func TestCookieFieldsJoined(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	f := openLines(t, `{"http":{"req":{"method":"GET","uri":"/c","host":"h","version":"h2","headers":{"accept":["*/*"],"cookie":["a=1","b=2"]}}}}`)
	sink, _ := runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL()}})
	srv.Close()
	got := srv.Requests()
	if len(got) != 1 {
		t.Fatalf("server read %d requests, want 1", len(got))
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(got[0])))
	if err != nil {
		t.Fatal(err)
	}
	if c := req.Header.Values("Cookie"); len(c) != 1 || c[0] != "a=1; b=2" {
		t.Errorf("the server read Cookie %q, want one line \"a=1; b=2\"\n%s", c, got[0])
	}
	if n := bytes.Count(bytes.ToLower(got[0]), []byte("\r\ncookie:")); n != 1 {
		t.Errorf("%d cookie lines on the wire, want 1:\n%s", n, got[0])
	}
	if r := sink.Results()[0]; r.Status != 200 || !r.Downgraded {
		t.Errorf("result %+v, want a 200 counted as downgraded", r)
	}
}

// Joining cookie fields costs no allocation: the line is written in the
// client's scratch buffer.
func TestCookieJoinAllocatesNothing(t *testing.T) {
	srv, err := loopback.NewCanned(loopback.Accepted202)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f := openLines(t, `{"http":{"req":{"method":"GET","uri":"/c","host":"h","version":"2","headers":{"cookie":["a=1","b=2","c=3"],"accept":["*/*"]}}}}`)
	c := newTransport(t, Options{Conn: conn.Options{Target: srv.URL(), Timeout: 5 * time.Second}}).NewClient(0, func() int64 { return time.Now().UnixNano() })
	defer c.Close()
	if n := allocsPerRequest(t, c, f, func(res *result.Result) bool { return res.Status == 202 }); n != 0 {
		t.Errorf("got %v allocations a request, want 0", n)
	}
}

// BenchmarkAppendHeadCookies: the head of a request with split cookie
// fields, written in a reused buffer.
func BenchmarkAppendHeadCookies(b *testing.B) {
	req := rrpair.Request{Method: []byte("GET"), URI: []byte("/c"), Headers: []rrpair.Header{
		{Name: []byte("accept"), Value: []byte("*/*")},
		{Name: []byte("cookie"), Value: []byte("sid=abc")},
		{Name: []byte("cookie"), Value: []byte("theme=dark")},
		{Name: []byte("user-agent"), Value: []byte("Mozilla/5.0")},
	}}
	host := []byte("127.0.0.1:8080")
	buf := appendHead(nil, &req, host, false)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendHead(buf[:0], &req, host, false)
	}
	if !bytes.Contains(buf, []byte("cookie: sid=abc; theme=dark\r\n")) {
		b.Fatalf("head %q", buf)
	}
}
