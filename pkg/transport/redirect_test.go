package transport

import (
	"testing"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// TestRedirector: the redirect rule on one request, hop by hop. The
// answers' ends to end (on the wire, with --follow-redirects) are the
// protocols' tests.
func TestRedirector(t *testing.T) {
	for _, tc := range []struct {
		name          string
		method        string
		status        int
		loc           string
		follow        bool
		wantMethod    string
		wantURI       string
		wantHost      string // "" for unchanged
		wantBody      bool
		wantHeaderLen int
	}{
		{"303 turns a POST into a GET", "POST", 303, "/done?x=1", true, "GET", "/done?x=1", "", false, 1},
		{"302 too", "POST", 302, "/done", true, "GET", "/done", "", false, 1},
		{"307 keeps method and body", "POST", 307, "/again", true, "POST", "/again", "", true, 3},
		{"308 too", "PUT", 308, "/again", true, "PUT", "/again", "", true, 3},
		{"301 on a HEAD stays a HEAD", "HEAD", 301, "/h", true, "HEAD", "/h", "", true, 3},
		{"relative to the current path", "GET", 302, "b?q", true, "GET", "/dir/b?q", "", false, 1},
		{"another host", "GET", 301, "https://other.test:8443/p", true, "GET", "/p", "other.test:8443", false, 1},
		{"protocol-relative keeps the scheme", "GET", 302, "//other.test/p", true, "GET", "/p", "other.test", false, 1},
		{"ftp is not followed", "GET", 302, "ftp://other.test/f", false, "", "", "", false, 0},
		{"mailto is not followed", "GET", 301, "mailto:ops@example.com", false, "", "", "", false, 0},
		{"no Location", "GET", 302, "", false, "", "", "", false, 0},
		{"not a redirect", "GET", 200, "/x", false, "", "", "", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := rrpair.Request{Method: []byte(tc.method), Scheme: []byte("http"), Host: []byte("rec.test"), URI: []byte("/dir/a"),
				HostHeader: []byte("set.test"), Body: []byte("data"), Headers: []rrpair.Header{
					{Name: []byte("Content-Type"), Value: []byte("text/plain")},
					{Name: []byte("X-Id"), Value: []byte("1")},
					{Name: []byte("content-length"), Value: []byte("4")},
				}}
			var r Redirector
			if got := r.Follow(&req, tc.status, []byte(tc.loc)); got != tc.follow {
				t.Fatalf("Follow = %v, want %v", got, tc.follow)
			}
			if !tc.follow {
				return
			}
			host := "rec.test"
			if tc.wantHost != "" {
				host = tc.wantHost
			}
			if string(req.Method) != tc.wantMethod || string(req.URI) != tc.wantURI || string(req.Host) != host ||
				(req.Body != nil) != tc.wantBody || len(req.Headers) != tc.wantHeaderLen {
				t.Errorf("got %s %s to %s, body %q, %d headers; want %s %s to %s, body %v, %d headers",
					req.Method, req.URI, req.Host, req.Body, len(req.Headers), tc.wantMethod, tc.wantURI, host, tc.wantBody, tc.wantHeaderLen)
			}
			if (tc.wantHost != "") == (req.HostHeader != nil) {
				t.Errorf("a transform's Host %q: want it dropped for another host only", req.HostHeader)
			}
		})
	}
}

// Following a Location that is a path allocates nothing once the
// Redirector's buffer has grown.
func TestRedirectorPathAllocatesNothing(t *testing.T) {
	var r Redirector
	req := rrpair.Request{Method: []byte("GET"), URI: []byte("/a")}
	loc := []byte("/next?page=2")
	r.Follow(&req, 302, loc)
	if n := testing.AllocsPerRun(100, func() {
		if !r.Follow(&req, 302, loc) {
			t.Fatal("not followed")
		}
	}); n != 0 {
		t.Errorf("got %v allocations a hop, want 0", n)
	}
}
