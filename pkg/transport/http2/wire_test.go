package http2

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

// FuzzHeaderList: whatever the recorded headers, the header list has the
// four pseudo-headers first, lower-case names, no connection-specific
// header, TE only as "trailers", and one content-length, the body's.
func FuzzHeaderList(f *testing.F) {
	f.Add("Content-Type", "text/plain", "TE", "gzip", "body")
	f.Add("Connection", "close", "Host", "h", "")
	f.Add(":authority", "x", "te", " Trailers ", "b")
	f.Add("Content-Length", "99", "X-Ü", "v", "")
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2, body string) {
		req := &rrpair.Request{Method: []byte("POST"), URI: []byte("/p"), Body: []byte(body), Headers: []rrpair.Header{
			{Name: []byte(n1), Value: []byte(v1)}, {Name: []byte(n2), Value: []byte(v2)}}}
		var l fieldList
		l.build(req, true, []byte("host:1"))
		lengths := 0
		for i, fl := range l.fields {
			name := string(fl.name)
			if i < 4 {
				if want := []string{":method", ":scheme", ":authority", ":path"}[i]; name != want {
					t.Fatalf("field %d is %q, want %q", i, name, want)
				}
				continue
			}
			if bytes.ContainsAny(fl.name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") || name == "" || name[0] == ':' {
				t.Fatalf("field name %q: want lower case, not a pseudo-header", name)
			}
			switch name {
			case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host":
				t.Fatalf("connection-specific header %q sent", name)
			case "te":
				if string(fl.value) != "trailers" {
					t.Fatalf("te: %q, want only trailers", fl.value)
				}
			case "content-length":
				lengths++
				if string(fl.value) != itoa(len(body)) {
					t.Fatalf("content-length %q, want %d", fl.value, len(body))
				}
			}
		}
		if lengths > 1 || lengths == 0 && len(body) > 0 {
			t.Fatalf("%d content-length fields for a %d-byte body", lengths, len(body))
		}
	})
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// TestAnswerView: the answer lent to observers has the headers (without
// pseudo-headers), the cookies, the trailers by Header, and the body
// decoded by its Content-Encoding.
func TestAnswerView(t *testing.T) {
	target := h2peer.ServeH2C(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		w.Header().Add("Set-Cookie", "a=1; Path=/")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write([]byte("hello"))
		zw.Close()
		w.Header().Set("X-Sum", "42")
	})})
	tr := newH2C(t, conn.Options{Target: target, Timeout: 5 * time.Second}, transport.AnswerOptions{})
	f := fixture.OpenLines(t, h2peer.PairLine("GET", "/", "", "", nil))
	if err := tr.Check(f); err != nil {
		t.Fatal(err)
	}
	var pair rrpair.Pair
	if err := f.NewCursor().Decode(0, &pair); err != nil {
		t.Fatal(err)
	}
	c := tr.NewClient(0, func() int64 { return time.Now().UnixNano() })
	defer c.Close()
	var res result.Result
	a := c.Do(&pair.Req, &pair, &res)
	if a == nil {
		t.Fatalf("Do: %+v", res)
	}
	if a.Status() != 200 || string(a.Body()) != "hello" || string(a.Header("x-sum")) != "42" || string(a.Header("Content-Encoding")) != "gzip" {
		t.Errorf("status %d, body %q, x-sum %q, headers %q; want 200, hello (decoded), 42 (a trailer), content-encoding", a.Status(), a.Body(), a.Header("x-sum"), a.Headers())
	}
	cookies := a.Cookies()
	if len(cookies) != 2 || string(cookies[0].Name) != "a" || string(cookies[0].Value) != "a=1; Path=/" || string(cookies[1].Name) != "b" {
		t.Errorf("cookies %q, want a and b with their whole values", cookies)
	}
	for _, h := range a.Headers() {
		if h.Name[0] == ':' {
			t.Errorf("header %q: pseudo-headers are not headers", h.Name)
		}
	}
}

// TestAppendRequest: a dry run's view of a request that goes as HTTP/2,
// appended to what dst holds: its header list, pseudo-headers first and
// names lower-cased, a blank line, the body.
func TestAppendRequest(t *testing.T) {
	req := &rrpair.Request{Method: []byte("PUT"), URI: []byte("/x"), Body: []byte("body"),
		Headers: []rrpair.Header{{Name: []byte("X-Id"), Value: []byte("7")}}}
	wire := AppendRequest([]byte("before\n"), req, true, []byte("h:1"))
	want := "before\n:method: PUT\n:scheme: https\n:authority: h:1\n:path: /x\nx-id: 7\ncontent-length: 4\n\nbody"
	if string(wire) != want {
		t.Errorf("AppendRequest = %q; want %q", wire, want)
	}
}
