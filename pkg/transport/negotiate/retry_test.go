package negotiate

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

func TestGoAwayAndResets(t *testing.T) {
	plan := map[int64]h2peer.Action{2: h2peer.Refuse, 4: h2peer.Reset, 5: h2peer.GoAwayBelow, 7: h2peer.GoAwayAt, 8: h2peer.AnswerGoAway, 10: h2peer.Refuse, 11: h2peer.Refuse}
	srv := &h2peer.Raw{Script: func(n int64) h2peer.Action { return plan[n] }}
	addr, conns := loopback.Serve(t, srv.Serve)
	var lines []string
	for range 8 {
		lines = append(lines, h2peer.PairLine("POST", "/p", "2", `{"X-B":["1"],"X-A":["2"]}`, []byte("hi")))
	}
	sink, err := runPool(t, 1, Options{Conn: conn.Options{Target: "http://" + addr}, H2C: true}, lines...)
	if err != nil {
		t.Fatal(err)
	}
	res := sink.Results()
	want := []struct {
		status  uint16
		err     result.ErrorKind
		retried bool
	}{
		{200, 0, false},
		{200, 0, true},                    // REFUSED_STREAM, then answered on a new connection
		{0, result.ErrStreamReset, false}, // INTERNAL_ERROR
		{200, 0, true},                    // GOAWAY below the stream
		{0, result.ErrGoAway, false},      // GOAWAY at the stream, then closed
		{200, 0, false},                   // answered, then GOAWAY
		{200, 0, false},                   // on a new connection
		{0, result.ErrStreamReset, true},  // refused twice: one retry only
	}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(res), len(want), res)
	}
	for i, w := range want {
		r := res[i]
		if r.Status != w.status || r.Err != w.err || r.Retried != w.retried {
			t.Errorf("request %d: status %d, err %v, retried %v; want %d, %v, %v", i, r.Status, r.Err, r.Retried, w.status, w.err, w.retried)
		}
	}
	if got := srv.N.Load(); got != 11 {
		t.Errorf("server saw %d requests, want 11 (8 and 3 retries)", got)
	}
	if got := conns.Load(); got != 6 {
		t.Errorf("server saw %d connections, want 6", got)
	}
	var names []string
	for _, f := range srv.Lists()[0] {
		names = append(names, f.Name+"="+f.Value)
	}
	wantList := ":method=POST :scheme=http :authority=" + addr + " :path=/p x-b=1 x-a=2 content-length=2"
	if got := strings.Join(names, " "); got != wantList {
		t.Errorf("header list %q, want %q", got, wantList)
	}
}

// TestRetryThatCannotConnect: a request the SUT declared unprocessed
// whose retry finds the SUT gone fails as a connect error, retried, and
// its failure report names where it went and why.
func TestRetryThatCannotConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := &h2peer.Raw{Script: func(int64) h2peer.Action { return h2peer.Refuse }}
	done := make(chan struct{})
	go func() { // one connection, then no more
		defer close(done)
		c, err := ln.Accept()
		ln.Close()
		if err == nil {
			srv.Serve(c)
			c.Close()
		}
	}()
	tr, err := New(Options{Conn: conn.Options{Target: "http://" + addr, Timeout: 5 * time.Second}, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	c, p := h2peer.PairClient(t, tr, h2peer.PairLine("GET", "/p", "", "", nil))
	var res result.Result
	if a := c.Do(&p.Req, p, &res); a != nil || res.Err != result.ErrConnect || !res.Retried {
		t.Errorf("got %+v; want a connect error on the retry", res)
	}
	if gotAddr, head, _, err := c.Failure(); gotAddr != addr || head != nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Failure: %q, head %q, %v; want %s, no head, connection refused", gotAddr, head, err, addr)
	}
	<-done
}
