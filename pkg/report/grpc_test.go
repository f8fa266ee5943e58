package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/golden"
)

func TestGRPCText(t *testing.T) {
	s := recorded(t, "grpc")
	s.Transforms = []Transform{{Name: "timestamps", Changed: 3, SkippedGRPC: 14}, {Name: "jwt", Changed: 17}}
	var buf bytes.Buffer
	if err := WriteText(&buf, s); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "grpc.golden", buf.Bytes())
	for _, want := range []string{"gRPC Status", "OK:10  NOT_FOUND:2", "by protocol", "h2:2", "Upgraded", "Retried",
		"stream_reset:1", "grpc:NOT_FOUND:2", "skipped (gRPC)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q", want)
		}
	}
	var h bytes.Buffer
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>gRPC status</h2>", "<td>NOT_FOUND</td><td>2</td>", "gRPC NOT_FOUND", "h2:2 http/1.1:2", "skipped (gRPC)"} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
