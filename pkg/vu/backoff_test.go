package vu

import (
	"net"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/transport/http1"
	"github.com/replay-dev/replay/pkg/result"
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
	sink, st := runPool(t, f, Config{VUs: 1, Walk: Loop, Duration: 500 * time.Millisecond}, http1.Options{Target: refusedURL(t)})
	n := len(sink.results())
	// 1+2+4+...+64 ms then 100 ms each: about 10 requests in 500 ms.
	if n > 30 || n < 5 {
		t.Errorf("got %d requests against a refused port in 500ms, want 5 to 30 (backed off)", n)
	}
	if st.Backoffs < int64(n)-1 || st.Backoffs > int64(n) {
		t.Errorf("got %d back-offs for %d connect failures", st.Backoffs, n)
	}
	if c := sink.count(func(r result.Result) bool { return r.Err == result.ErrConnect }); c != n {
		t.Errorf("got %d connect errors of %d requests", c, n)
	}
}

// TestConnectBackoffRateCountsEverything: under an arrival rate the
// back-off hides nothing: every iteration that came due was begun or
// dropped.
func TestConnectBackoffRateCountsEverything(t *testing.T) {
	f := openLines(t, manyLines(3)...)
	sink, st := runPool(t, f, Config{Model: Rate, Rate: 200, VUs: 1, MaxVUs: 2, Walk: Loop, Duration: 500 * time.Millisecond},
		http1.Options{Target: refusedURL(t)})
	n := int64(len(sink.results()))
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
