package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
)

// TestPreparedRunsAgain: a prepared run opens its file once and runs as
// often as asked, each run with a load of its own and counters,
// connections and a verdict of its own.
func TestPreparedRunsAgain(t *testing.T) {
	srv := newSUT(t, 0, 202)
	path := trafficFile(t, 14) // 7 sessions of 2 requests
	o := options(path, srv.URL)
	opened := 0
	o.Open = func(opt rrpair.Options) (*rrpair.File, error) {
		opened++
		return rrpair.Open(path, opt)
	}
	o.Thresholds = []string{"errors<1"}
	ctx := context.Background()
	p, err := Prepare(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	first, err := p.Run(ctx, Pass{Load: p.Load(), Judge: true})
	if err != nil {
		t.Fatal(err)
	}
	// A connection a VU that got work: the 7 sessions go to the VUs as
	// they come, and one may take them all before the other starts.
	firstConns := srv.conns.Load()
	if first.Requests != 14 || srv.count.Load() != 14 || firstConns < 1 || firstConns > 2 {
		t.Fatalf("first run: %d requests (the SUT read %d on %d connections), want 14 on the 2 VUs' connections at most", first.Requests, srv.count.Load(), firstConns)
	}
	if len(first.Thresholds) != 1 || !first.Thresholds[0].Pass {
		t.Errorf("first run's verdict %+v, want errors<1 passed", first.Thresholds)
	}

	l := p.Load()
	l.Model, l.Walk, l.Rate, l.Duration = schedule.Rate, schedule.Loop, 50, 400*time.Millisecond
	second, err := p.Run(ctx, Pass{Load: l})
	if err != nil {
		t.Fatal(err)
	}
	if second.Model != "rate" || second.Requests == 0 || second.Requests != srv.count.Load()-14 {
		t.Errorf("second run: model %s, %d requests; the SUT read %d in all: want a rate run counting only its own", second.Model, second.Requests, srv.count.Load())
	}
	if srv.conns.Load() <= firstConns {
		t.Errorf("the SUT saw %d connections in all, %d of them the first run's: the second run reused the first's", srv.conns.Load(), firstConns)
	}
	if len(second.Thresholds) != 0 {
		t.Errorf("an unjudged run has a verdict: %+v", second.Thresholds)
	}
	if opened != 1 {
		t.Errorf("the traffic was opened %d times, want once", opened)
	}
}

// A pass's load is checked when it runs, naming the flag; nothing is
// sent.
func TestPassLoadChecked(t *testing.T) {
	srv := newSUT(t, 0, 202)
	p, err := Prepare(context.Background(), options(trafficFile(t, 4), srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l := p.Load()
	l.VUs = 0
	if s, err := p.Run(context.Background(), Pass{Load: l}); s != nil || err == nil || srv.count.Load() != 0 {
		t.Fatalf("a load of 0 VUs: summary %v, error %v, %d requests sent", s, err, srv.count.Load())
	} else if want := "--vus: want at least 1"; !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
}
