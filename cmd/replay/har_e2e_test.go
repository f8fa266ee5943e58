package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/loopback"
)

// TestHARToTheWire imports a HAR mixing what real recorders write (Chrome
// HTTP/2 entries with split cookies and "unknown" versions, a WebPageTest
// entry with its request line as a header, a cache hit, a WebSocket, a
// blocked request, form params without text, a body not captured), replays
// it, and checks that every request that went over the network reached
// the wire as recorded: method, raw target, header order and values, body.
// The WebSocket entry is left out (--websocket=false, listed as skipped):
// its session's replay is TestImportHARWebSocket's and pkg/run's subject.
func TestHARToTheWire(t *testing.T) {
	dir := t.TempDir()
	traffic := filepath.Join(dir, "traffic.jsonl")
	r := runMain(t, context.Background(), "", "import", "har", "../../pkg/har/testdata/mixed-recorders.har", "--websocket=false", "-o", traffic)
	wantSummary := "replay: 8 entries, 5 pairs written (3 recorded as HTTP/2 or 3); skipped 3: cache 1, no-answer 1, websocket 1; " +
		"dropped 1 request header field, 1 answer header field; 1 body not captured, sent empty (entries 8)\n"
	if r.code != 0 || !strings.HasPrefix(r.stderr, wantSummary) {
		t.Fatalf("import: exit %d, stderr:\n%s\nwant it to start with:\n%s", r.code, r.stderr, wantSummary)
	}

	srv := loopback.NewRaw(t, nil)
	out := filepath.Join(dir, "summary.json")
	r = runMain(t, context.Background(), "", "run", "-f", traffic, "--target", srv.URL(), "--out", out, "--progress", "off", "-q")
	srv.Close()
	if r.code != 0 {
		t.Fatalf("run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	host := "Host: " + srv.Addr() + "\r\n"
	want := []string{
		"GET /api/cart?x=1 HTTP/1.1\r\n" + host + "accept: application/json\r\ncookie: sid=abc; theme=dark\r\nuser-agent: Mozilla/5.0 Chrome/156.0.0.0\r\n\r\n",
		"POST /api/events HTTP/1.1\r\n" + host + "content-type: application/json\r\ncontent-length: 15\r\ncookie: sid=abc\r\n\r\n{\"type\":\"view\"}",
		"GET /search/café|x^y{z}?q=a%zz HTTP/1.1\r\n" + host + "User-Agent: Mozilla/5.0 PTST/240712\r\nAccept: text/html\r\n\r\n",
		"POST /login HTTP/1.1\r\n" + host + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 38\r\nX-After: 1\r\n\r\nuser=ada+lovelace&next=%2Fcart%3Fx%3D1",
		"PUT /api/avatar HTTP/1.1\r\n" + host + "content-type: image/png\r\ncontent-length: 0\r\nx-after: 2\r\n\r\n",
	}
	got := srv.Requests()
	if len(got) != len(want) {
		t.Fatalf("the server read %d requests, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("request %d on the wire:\n%q\nwant:\n%q", i, got[i], want[i])
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Requests   int `json:"requests"`
		Downgraded int `json:"downgraded"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil || sum.Requests != 5 || sum.Downgraded != 3 {
		t.Errorf("summary %+v (%v): want 5 requests, 3 downgraded (sent as HTTP/1.1)", sum, err)
	}
}

// TestHARStrictCountsOnlyLostEntries: --strict fails on an entry the
// import lost (one of the wrong shape), not on entries that never reached
// the network (cache hits, status 0, a WebSocket left out with
// --websocket=false), which it still lists.
func TestHARStrictCountsOnlyLostEntries(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "traffic.jsonl")
	r := runMain(t, context.Background(), "", "import", "har", "../../pkg/har/testdata/mixed-recorders.har", "--strict", "-o", out)
	if r.code != 0 || !strings.Contains(r.stderr, "skipped 2 entries:") {
		t.Errorf("off-network entries only: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = runMain(t, context.Background(), "", "import", "har", "../../pkg/har/testdata/mixed-recorders.har", "--strict", "--websocket=false", "-o", out)
	if r.code != 0 || !strings.Contains(r.stderr, "skipped 3 entries:") {
		t.Errorf("off-network entries and a WebSocket left out: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = runMain(t, context.Background(), "", "import", "har", "../../pkg/har/testdata/chrome-har-params-object.har", "--strict", "-o", filepath.Join(dir, "shape.jsonl"))
	if r.code != 1 || !strings.Contains(r.stderr, "--strict: 1 entry could not be converted") {
		t.Errorf("an entry of the wrong shape: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
