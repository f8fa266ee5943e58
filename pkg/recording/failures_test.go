package recording

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func TestFailureDumpErrorsAndBodies(t *testing.T) {
	var buf bytes.Buffer
	d := NewFailureDump(&buf, []string{"PUT /blob"}, 2)
	pair := &rrpair.Pair{Line: 7}
	big := bytes.Repeat([]byte{0xff}, MaxDumpBody+10)
	for i := 0; i < 3; i++ {
		d.Failed(&result.Failure{Pair: pair, Addr: "127.0.0.1:1", Body: big,
			Result: &result.Result{Err: result.ErrConnect, Endpoint: 0}, Err: errors.New("connection refused")})
	}
	if d.Dumped() != 2 {
		t.Fatalf("dumped %d, want 2 (bounded)", d.Dumped())
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.SplitN(buf.Bytes(), []byte("\n"), 2)[0], &line); err != nil {
		t.Fatal(err)
	}
	req := line["request"].(map[string]any)
	if line["failure"] != "connect" || line["error"] != "connection refused" || line["response"] != nil || line["line"] != 7.0 {
		t.Errorf("got %v", line)
	}
	if req["truncated"] != true || req["body_bytes"] != float64(len(big)) || !strings.HasPrefix(req["body_base64"].(string), "////") {
		t.Errorf("request body: got %v", req)
	}
}

func TestTimingsSummary(t *testing.T) {
	ms := int64(1e6)
	rs := []result.Result{
		{Due: 0, Sent: 0, End: 10 * ms, Status: 200, Written: true, Connected: true, ConnectNs: 2 * ms, SendNs: ms, WaitNs: 8 * ms, ReceiveNs: ms},
		{Due: 0, Sent: 0, End: 10 * ms, Status: 200, Written: true, SendNs: ms, WaitNs: 6 * ms, ReceiveNs: 3 * ms},
	}
	s := record(testEndpoints, rs).Summary(Meta{Run: result.Counters{Started: t0}})
	tm := s.Timings
	near := func(got, want float64) bool { return got >= want && got <= want*1.001 } // HDR: 3 significant digits
	if tm == nil || !near(tm.Connecting.Max, 2) || !near(tm.Waiting.Max, 8) || !near(tm.Waiting.Min, 6) || !near(tm.Receiving.Max, 3) || tm.TLSHandshaking.Max != 0 {
		t.Fatalf("got %+v", tm)
	}
	if s := record(testEndpoints, fixture()).Summary(Meta{Run: result.Counters{Started: t0}}); s.Timings != nil {
		t.Errorf("timings without --timings: %+v", s.Timings)
	}
}
