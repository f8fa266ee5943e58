package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestDecodeCacheSameWire replays a file of escaped JSON bodies with the
// bodies unescaped once (the default), at each request (--decode-cache 0),
// and at each request because they do not fit (--decode-cache 1, for
// 1.2 MiB of bodies): the SUT reads the same bodies each time, and the run
// says which path it took.
func TestDecodeCacheSameWire(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = r.Header.Get("Content-Length") + " " + string(b)
		mu.Unlock()
		w.WriteHeader(202)
	}))
	t.Cleanup(srv.Close)
	var sb strings.Builder
	for i := range 600 {
		body := fmt.Sprintf(`{\"n\":%d,\"s\":\"caf\u00e9 \\\"q\\\" \ud83d\ude00\",\"pad\":\"%s\"}`, i, strings.Repeat("x", 2000))
		fmt.Fprintf(&sb, `{"http":{"req":{"method":"POST","uri":"/e/%d","host":"h:1","body":"%s"}}}`+"\n", i, body)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var first map[string]string
	for _, c := range []struct {
		flag, says string
	}{
		{"256", "unescaped once, at open"},
		{"0", "unescaped at each request (--decode-cache 0)"},
		{"1", "unescaped at each request: they do not fit in --decode-cache"},
	} {
		got = map[string]string{}
		r := runMain(t, context.Background(), "", "run", "-f", path, "--target", srv.URL, "--vus", "4", "--decode-cache", c.flag, "-q")
		if r.code != 0 {
			t.Fatalf("--decode-cache %s: exit %d: %s", c.flag, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, c.says) || !strings.Contains(r.stderr, `"bodies":600`) {
			t.Errorf("--decode-cache %s: the run does not say %q of its 600 bodies:\n%s", c.flag, c.says, r.stderr)
		}
		if len(got) != 600 || !strings.Contains(got["/e/7"], `{"n":7,"s":"café \"q\" 😀","pad":"xx`) {
			t.Fatalf("--decode-cache %s: %d bodies, /e/7 got %.80q", c.flag, len(got), got["/e/7"])
		}
		if first == nil {
			first = got
		} else if !reflect.DeepEqual(got, first) {
			t.Errorf("--decode-cache %s: the SUT read other bodies than with the cache", c.flag)
		}
	}
	r := runMain(t, context.Background(), "", "run", "-f", path, "--target", srv.URL, "--decode-cache", "-1")
	if r.code != 1 || !strings.Contains(r.stderr, "--decode-cache: want MiB from 0") {
		t.Errorf("--decode-cache -1: exit %d, %s; want 1 naming the flag", r.code, r.stderr)
	}
}
