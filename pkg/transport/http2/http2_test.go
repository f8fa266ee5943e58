package http2

import (
	"fmt"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

// bigHeader is a header value longer than two HTTP/2 frames.
var bigHeader = strings.Repeat("abcdefgh", 5000)

func TestH2CAgainstNetHTTP(t *testing.T) {
	s := h2peer.NewSeen()
	target := h2peer.H2CServer(t, s)
	big := []byte(strings.Repeat("0123456789abcdef", 300<<10/16)) // 300 kB: past the default windows
	var lines []string
	for i := range 24 {
		body := []byte(fmt.Sprintf(`{"n":%d}`, i))
		if i == 5 {
			body = big
		}
		headers := `{"Host":["orig.example"],"Content-Type":["application/json"],"X-Trace":["t1","t2"],"Connection":["keep-alive"],"Transfer-Encoding":["chunked"],"TE":["gzip"],"Content-Length":["999"]}`
		if i == 7 { // a header block past one frame: CONTINUATION
			headers = `{"X-Big":["` + bigHeader + `"]}`
		}
		lines = append(lines, h2peer.PairLine("POST", fmt.Sprintf("/items/%d?q=a%%20b", i), "2", headers, body))
	}
	sink, err := runPool(t, 3, conn.Options{Target: target}, lines...)
	if err != nil {
		t.Fatal(err)
	}
	res := sink.Results()
	if len(res) != 24 {
		t.Fatalf("%d results, want 24", len(res))
	}
	for _, r := range res {
		if r.Err != result.ErrNone || r.Status != 200 || r.Proto != result.ProtoHTTP2 || r.Upgraded || r.Downgraded {
			t.Errorf("result %+v: want 200 over HTTP/2, neither upgraded nor downgraded", r)
		}
	}
	if got := s.Conns.Load(); got != 3 {
		t.Errorf("server saw %d connections, want 3 (one per VU)", got)
	}
	if s.Protos[2] != 24 || len(s.Protos) != 1 {
		t.Errorf("server saw protocols %v, want 24 requests over HTTP/2", s.Protos)
	}
	for i := range 24 {
		uri := fmt.Sprintf("/items/%d?q=a%%20b", i)
		if s.URIs[uri] != 1 {
			t.Errorf("%s seen %d times, want once", uri, s.URIs[uri])
		}
	}
	if got := s.Bodies["/items/5?q=a%20b"]; got != string(big) {
		t.Errorf("large body: got %d bytes, want %d as recorded", len(got), len(big))
	}
	if got := s.Hdrs["/items/7?q=a%20b"].Get("X-Big"); got != bigHeader {
		t.Errorf("a 40 kB header arrived as %d bytes, want it whole", len(got))
	}
	h := s.Hdrs["/items/1?q=a%20b"]
	host := strings.TrimPrefix(target, "http://")
	if h.Get("Host") != host || h.Get("Content-Type") != "application/json" || strings.Join(h.Values("X-Trace"), ",") != "t1,t2" ||
		h.Get("Content-Length") != "7" || h.Get("Connection") != "" || h.Get("Transfer-Encoding") != "" || h.Get("Te") != "" {
		t.Errorf("headers as seen: %v; want :authority %s, content-type, both x-trace, content-length 7, no connection headers", h, host)
	}
}

func TestNoConnectionReuse(t *testing.T) {
	s := h2peer.NewSeen()
	target := h2peer.H2CServer(t, s)
	lines := []string{h2peer.PairLine("GET", "/1", "", "", nil), h2peer.PairLine("GET", "/2", "", "", nil), h2peer.PairLine("GET", "/3", "", "", nil)}
	sink, err := runPool(t, 1, conn.Options{Target: target, NoConnectionReuse: true}, lines...)
	if err != nil {
		t.Fatal(err)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Status == 200 && r.Connected && r.Proto == result.ProtoHTTP2 }); n != 3 {
		t.Errorf("%d answers on a new HTTP/2 connection, want 3: %+v", n, sink.Results())
	}
	if got := s.Conns.Load(); got != 3 {
		t.Errorf("server saw %d connections, want 3", got)
	}
}
