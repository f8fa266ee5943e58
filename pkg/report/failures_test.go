package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/vu"
)

func TestFailureDumpErrorsAndBodies(t *testing.T) {
	var buf bytes.Buffer
	d := NewFailureDump(&buf, []string{"PUT /blob"}, 2)
	pair := &rrpair.Pair{Line: 7}
	big := bytes.Repeat([]byte{0xff}, MaxDumpBody+10)
	for i := 0; i < 3; i++ {
		d.Failed(&vu.Failure{Pair: pair, Addr: "127.0.0.1:1", Body: big,
			Result: &vu.Result{Err: vu.ErrConnect, Endpoint: 0}, Err: errors.New("connection refused")})
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
