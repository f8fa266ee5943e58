package h2peer

import (
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
)

// benchLines are the requests of BenchDo and AllocsPerRequest.
var benchLines = []struct{ name, line string }{
	{"GET", PairLine("GET", "/items/42?x=1", "2", `{"accept":["application/json"],"user-agent":["app/1.0"],"x-request-id":["abc-123"]}`, nil)},
	{"POST", PairLine("POST", "/events", "2", `{"content-type":["application/json"],"authorization":["Bearer abc.def.ghi"]}`, []byte(`{"type":"click","n":1}`))},
	{"gRPC", GRPCLine("/pkg.Svc/Call", GRPCMessage([]byte("hello")))},
}

// benchClient is a client of the transport newTransport makes for a
// cleartext HTTP/2 target (a loopback CannedH2, which allocates nothing),
// checked against line, with its pair.
func benchClient(t testing.TB, newTransport func(target string) transport.Transport, line string) (transport.Client, *rrpair.Pair) {
	addr, _ := loopback.Serve(t, CannedH2)
	return PairClient(t, newTransport("http://"+addr), line)
}

// PairClient checks line against tr, as a run does, and returns its pair
// with a client of tr (VU 0), closed when the test ends.
func PairClient(t testing.TB, tr transport.Transport, line string) (transport.Client, *rrpair.Pair) {
	t.Helper()
	f := fixture.OpenLines(t, line)
	if err := tr.Check(f); err != nil {
		t.Fatal(err)
	}
	p := &rrpair.Pair{}
	if err := f.NewCursor().Decode(0, p); err != nil {
		t.Fatal(err)
	}
	c := tr.NewClient(0, func() int64 { return time.Now().UnixNano() })
	t.Cleanup(c.Close)
	return c, p
}

// BenchDo benchmarks one HTTP/2 request (a GET, a POST, a gRPC call) and its
// answer on a kept connection, over the transport newTransport makes for
// a cleartext HTTP/2 target that allocates nothing.
func BenchDo(b *testing.B, newTransport func(target string) transport.Transport) {
	for _, bl := range benchLines {
		b.Run(bl.name, func(b *testing.B) {
			c, p := benchClient(b, newTransport, bl.line)
			var res result.Result
			b.ReportAllocs()
			for b.Loop() {
				res = result.Result{}
				if c.Do(&p.Req, p, &res) == nil {
					b.Fatalf("Do: %v", res.Err)
				}
			}
		})
	}
}

// AllocsPerRequest holds the steady state of the requests of BenchDo to at
// most most allocations a request.
func AllocsPerRequest(t *testing.T, newTransport func(target string) transport.Transport, most float64) {
	for _, bl := range benchLines {
		c, p := benchClient(t, newTransport, bl.line)
		var res result.Result
		do := func() {
			res = result.Result{}
			if c.Do(&p.Req, p, &res) == nil || res.Status != 200 {
				t.Fatalf("Do: %+v", res)
			}
		}
		for range 10 {
			do()
		}
		if n := testing.AllocsPerRun(200, do); n > most {
			t.Errorf("%s: %.1f allocations a request, want at most %v", bl.name, n, most)
		} else {
			t.Logf("%s: %.1f allocations a request", bl.name, n)
		}
	}
}
