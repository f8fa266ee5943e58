package vu

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/http1"
)

// refusedURL is a loopback address nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// TestConnectBackoffClosed: a closed-model VU against a refused port waits
// (1 ms doubling to 100 ms) before each next request instead of retrying
// at once, and the waits are counted.
func TestConnectBackoffClosed(t *testing.T) {
	f := openLines(t, manyLines(3)...)
	sink, st := runPool(t, f, Config{Load: schedule.Load{VUs: 1, Walk: schedule.Loop, Duration: 500 * time.Millisecond}}, http1.Options{Conn: conn.Options{Target: refusedURL(t)}})
	n := len(sink.Results())
	// 1+2+4+...+64 ms then 100 ms each: about 10 requests in 500 ms.
	if n > 30 || n < 5 {
		t.Errorf("got %d requests against a refused port in 500ms, want 5 to 30 (backed off)", n)
	}
	if st.Backoffs < int64(n)-1 || st.Backoffs > int64(n) {
		t.Errorf("got %d back-offs for %d connect failures", st.Backoffs, n)
	}
	if c := sink.Count(func(r result.Result) bool { return r.Err == result.ErrConnect }); c != n {
		t.Errorf("got %d connect errors of %d requests", c, n)
	}
}

// TestConnectBackoffRateCountsEverything: under an arrival rate the
// back-off hides nothing: every iteration that came due was begun or
// dropped.
func TestConnectBackoffRateCountsEverything(t *testing.T) {
	f := openLines(t, manyLines(3)...)
	sink, st := runPool(t, f, Config{Load: schedule.Load{Model: schedule.Rate, Rate: 200, VUs: 1, MaxVUs: 2, Walk: schedule.Loop, Duration: 500 * time.Millisecond}},
		http1.Options{Conn: conn.Options{Target: refusedURL(t)}})
	n := int64(len(sink.Results()))
	if st.Scheduled < 80 {
		t.Errorf("got %d iterations due in 500ms at 200/s, want about 100", st.Scheduled)
	}
	if st.Iterations+st.Dropped != st.Scheduled {
		t.Errorf("begun %d + dropped %d != scheduled %d", st.Iterations, st.Dropped, st.Scheduled)
	}
	if n < st.Iterations-2 || n > st.Iterations { // one handed out as the run stops sends nothing
		t.Errorf("got %d requests for %d iterations", n, st.Iterations)
	}
	if st.Dropped == 0 || st.Backoffs == 0 {
		t.Errorf("got %d dropped and %d back-offs, want both > 0 (2 VUs backing off cannot keep 200/s)", st.Dropped, st.Backoffs)
	}
}

// TestLagDistribution: the scheduler reports its lateness as a
// distribution (p50, p99 beside mean and max).
func TestLagDistribution(t *testing.T) {
	srv, err := loopback.NewCanned(loopback.Accepted202)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f := openLines(t, manyLines(3)...)
	_, st := runPool(t, f, Config{Load: schedule.Load{Model: schedule.Rate, Rate: 500, VUs: 5, Walk: schedule.Loop, Duration: 300 * time.Millisecond}},
		http1.Options{Conn: conn.Options{Target: srv.URL()}})
	if st.LagP50 <= 0 || st.LagP50 > st.LagP99 || st.LagP99 > st.LagMax+time.Millisecond {
		t.Errorf("lag: got p50 %v, p99 %v, max %v; want 0 < p50 ≤ p99 ≤ max", st.LagP50, st.LagP99, st.LagMax)
	}
}

// TestPreciseSleeper: with PrecisePacing the scheduler's waits end close to
// their due time (timers round a sub-millisecond wait up), and a stop still
// ends them.
func TestPreciseSleeper(t *testing.T) {
	s := newPreciseSleeper()
	over := make([]int64, 0, 31)
	for i := 0; i < 31; i++ {
		start := time.Now()
		if !s.Sleep(300*time.Microsecond, nil) {
			t.Fatal("Sleep with no stop returned false")
		}
		d := time.Since(start)
		if d < 300*time.Microsecond {
			t.Fatalf("slept %v, want at least 300µs", d)
		}
		over = append(over, int64(d-300*time.Microsecond))
	}
	// A timer rounds a 300µs wait up to about 1ms; the bound leaves a busy
	// machine room and still tells the two apart.
	if med := percentile(over, 50); med > 500*time.Microsecond {
		t.Errorf("median overshoot %v, want under 500µs", med)
	}
	stop := make(chan struct{})
	close(stop)
	start := time.Now()
	if s.Sleep(time.Second, stop) {
		t.Error("Sleep through a stop returned true")
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("a stopped Sleep took %v", d)
	}
}

// TestConnectBackoffResets: once the SUT is back, the first request that
// reaches it resets the back-off, and the VU runs at full speed again.
func TestConnectBackoffResets(t *testing.T) {
	url := refusedURL(t)
	addr := strings.TrimPrefix(url, "http://")
	go func() {
		time.Sleep(200 * time.Millisecond) // a few back-offs first
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listen again on %s: %v", addr, err)
			return
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
		t.Cleanup(func() { srv.Close() })
		srv.Serve(ln)
	}()
	f := openLines(t, manyLines(3)...)
	sink, st := runPool(t, f, Config{Load: schedule.Load{VUs: 1, Walk: schedule.Loop, Iterations: 2000, Duration: 1500 * time.Millisecond}}, http1.Options{Conn: conn.Options{Target: url}})
	ok := sink.Count(func(r result.Result) bool { return r.Err == result.ErrNone })
	// Without the reset, each request would wait 100 ms: about 13 answers.
	if ok < 100 {
		t.Errorf("got %d answers after the SUT came back (%d back-offs), want 100 or more", ok, st.Backoffs)
	}
	if st.Backoffs == 0 {
		t.Error("no back-off while the port was refused")
	}
}
