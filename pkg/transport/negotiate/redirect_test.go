package negotiate

import (
	"net/http"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// TestRedirectOverHTTP2: the redirect rule holds over HTTP/2 as over
// HTTP/1.1: a 303 to a POST is followed as a GET without its body, on the
// same connection.
func TestRedirectOverHTTP2(t *testing.T) {
	s := h2peer.NewSeen()
	target := h2peer.ServeH2C(t, &http.Server{ConnState: s.ConnState, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/from" {
			http.Redirect(w, r, "/to?x=1", http.StatusSeeOther)
		}
		s.Handler(w, r)
	})})
	tr, err := New(Options{Conn: conn.Options{Target: target, Timeout: 5 * time.Second}, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture.OpenLines(t, h2peer.PairLine("POST", "/from", "2", `{"content-type":["text/plain"]}`, []byte("data")))
	sink := &fixture.Collect{}
	p := &vu.Pool{File: f, Sink: sink, Transport: tr, Config: vu.Config{Load: schedule.Load{VUs: 1}, FollowRedirects: 1, Log: zerolog.Nop()}}
	if _, err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := sink.Results()
	if len(res) != 2 || res[0].Status != 303 || res[1].Status != 200 || !res[1].Redirect || res[1].Proto != result.ProtoHTTP2 {
		t.Fatalf("results %+v; want a 303, then a 200 over HTTP/2 marked as a redirect hop", res)
	}
	if s.URIs["/to?x=1"] != 1 || s.Bodies["/to?x=1"] != "" || s.Protos[2] != 2 || s.Conns.Load() != 1 {
		t.Errorf("server saw %v, bodies %q, protocols %v, %d connections; want /to?x=1 without a body, both over HTTP/2 on one connection",
			s.URIs, s.Bodies, s.Protos, s.Conns.Load())
	}
}
