package http2

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/loopback"
	"github.com/replay-dev/replay/internal/replaytest"
	"github.com/replay-dev/replay/internal/transport/http1"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// cannedH2 is a cleartext HTTP/2 server that allocates nothing per
// request, so that an allocation count is the client's: it answers each
// request, once its END_STREAM arrives, with ":status: 200" and "ok",
// and gives back the connection window its DATA used.
func cannedH2(c net.Conn) {
	buf := make([]byte, 64<<10)
	if _, err := io.ReadFull(c, buf[:24]); err != nil {
		return
	}
	c.Write([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0}) // SETTINGS, empty
	answer := []byte{
		0, 0, 1, 1, 4, 0, 0, 0, 0, 0x88, // HEADERS, END_HEADERS: :status 200 (static index 8)
		0, 0, 2, 0, 1, 0, 0, 0, 0, 'o', 'k', // DATA, END_STREAM
	}
	update := []byte{0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0} // WINDOW_UPDATE on the connection
	var head [9]byte
	for {
		if _, err := io.ReadFull(c, head[:]); err != nil {
			return
		}
		n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
		if n > len(buf) {
			return
		}
		if _, err := io.ReadFull(c, buf[:n]); err != nil {
			return
		}
		typ, flags, id := head[3], head[4], binary.BigEndian.Uint32(head[5:])&(1<<31-1)
		switch {
		case typ == 4 && flags&1 == 0: // SETTINGS: ack
			c.Write([]byte{0, 0, 0, 4, 1, 0, 0, 0, 0})
		case typ == 0 && n > 0:
			binary.BigEndian.PutUint32(update[9:], uint32(n))
			c.Write(update)
		}
		if (typ == 0 || typ == 1) && flags&1 != 0 { // END_STREAM
			binary.BigEndian.PutUint32(answer[5:], id)
			binary.BigEndian.PutUint32(answer[15:], id)
			c.Write(answer)
		}
	}
}

// benchClient is a client over a loopback cannedH2 and a pair of lines.
func benchClient(t testing.TB, line string) (*client, *rrpair.Pair) {
	addr, _ := loopback.Serve(t, cannedH2)
	tr, err := New(Options{HTTP1: http1.Options{Target: "http://" + addr, Timeout: 5 * time.Second, DiscardBodies: true}, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	f := replaytest.OpenLines(t, line)
	if err := tr.Check(f); err != nil {
		t.Fatal(err)
	}
	p := &rrpair.Pair{}
	if err := f.NewCursor().Decode(0, p); err != nil {
		t.Fatal(err)
	}
	c := newClient(tr, func() int64 { return time.Now().UnixNano() })
	t.Cleanup(c.Close)
	return c, p
}

var benchLines = []struct{ name, line string }{
	{"GET", pairLine("GET", "/items/42?x=1", "2", `{"accept":["application/json"],"user-agent":["app/1.0"],"x-request-id":["abc-123"]}`, nil)},
	{"POST", pairLine("POST", "/events", "2", `{"content-type":["application/json"],"authorization":["Bearer abc.def.ghi"]}`, []byte(`{"type":"click","n":1}`))},
	{"gRPC", grpcLine("/pkg.Svc/Call", grpcMessage([]byte("hello")))},
}

// BenchmarkDo is one HTTP/2 request and its answer on a kept connection,
// against a loopback server that allocates nothing.
func BenchmarkDo(b *testing.B) {
	for _, bl := range benchLines {
		b.Run(bl.name, func(b *testing.B) {
			c, p := benchClient(b, bl.line)
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

// TestAllocsPerRequest holds the steady state to at most 2 allocations a
// request (the framer's HEADERS frame is one).
func TestAllocsPerRequest(t *testing.T) {
	for _, bl := range benchLines {
		c, p := benchClient(t, bl.line)
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
		if n := testing.AllocsPerRun(200, do); n > 2 {
			t.Errorf("%s: %.1f allocations a request, want at most 2", bl.name, n)
		} else {
			t.Logf("%s: %.1f allocations a request", bl.name, n)
		}
	}
}
