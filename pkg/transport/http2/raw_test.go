package http2

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

func TestFlowControlStall(t *testing.T) {
	srv := &h2peer.Raw{Script: func(int64) h2peer.Action { return h2peer.Answer }, Window: 16}
	addr, _ := loopback.Serve(t, srv.Serve)
	big := bytes.Repeat([]byte("x"), 200<<10)
	start := time.Now()
	sink, err := runPool(t, 1, conn.Options{Target: "http://" + addr, Timeout: 300 * time.Millisecond},
		h2peer.PairLine("POST", "/up", "", "", big))
	if err != nil {
		t.Fatal(err)
	}
	res := sink.Results()
	if len(res) != 1 || res[0].Err != result.ErrFlowControl {
		t.Errorf("results %+v, want one failed as flow_control", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v, want about the 300ms --timeout", d)
	}
}

func TestH2CRefusedByHTTP1Server(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	sink, err := runPool(t, 1, conn.Options{Target: srv.URL}, h2peer.PairLine("GET", "/", "", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	if res := sink.Results(); len(res) != 1 || res[0].Err != result.ErrNoHTTP2 {
		t.Errorf("results %+v, want one failed as no_http2", res)
	}
}

func TestTimeoutAndInterrupt(t *testing.T) {
	srv := &h2peer.Raw{Script: func(int64) h2peer.Action { return h2peer.Silent }}
	addr, _ := loopback.Serve(t, srv.Serve)
	tr := newH2C(t, conn.Options{Target: "http://" + addr, Timeout: 200 * time.Millisecond}, transport.AnswerOptions{})
	c, p := checkedClient(t, tr, h2peer.PairLine("GET", "/slow", "", "", nil))
	var res result.Result
	if a := c.Do(&p.Req, p, &res); a != nil || res.Err != result.ErrTimeout || res.Proto != result.ProtoHTTP2 {
		t.Errorf("silent SUT: %+v, want a timeout over HTTP/2", res)
	}
	if _, head, _, err := c.Failure(); !strings.HasPrefix(string(head), ":method: GET\n") || err == nil {
		t.Errorf("Failure: head %q, err %v; want the header list and the error", head, err)
	}

	tr2 := newH2C(t, conn.Options{Target: "http://" + addr, Timeout: 10 * time.Second}, transport.AnswerOptions{})
	c2 := tr2.NewClient(1, func() int64 { return time.Now().UnixNano() })
	defer c2.Close()
	done := make(chan result.Result)
	go func() {
		var res result.Result
		c2.Do(&p.Req, p, &res)
		done <- res
	}()
	time.Sleep(100 * time.Millisecond)
	c2.Interrupt()
	select {
	case res := <-done:
		if res.Err != result.ErrCancelled {
			t.Errorf("interrupted: %+v, want cancelled", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Interrupt did not cut the request off")
	}
	res = result.Result{}
	if c2.Do(&p.Req, p, &res); res.Err != result.ErrCancelled {
		t.Errorf("after Interrupt: %+v, want cancelled", res)
	}
}
