package result_test

import (
	"testing"

	"github.com/replay-dev/replay/internal/testutil/answers"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func fields(kv ...string) []rrpair.Header {
	var hs []rrpair.Header
	for i := 0; i+1 < len(kv); i += 2 {
		hs = append(hs, rrpair.Header{Name: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return hs
}

func TestGRPCStatusOf(t *testing.T) {
	for _, tt := range []struct {
		name              string
		status            int
		headers, trailers []rrpair.Header
		want              string
	}{
		{"trailers", 200, fields("content-type", "application/grpc"), fields("grpc-status", "0"), "OK"},
		{"trailers win over headers", 200, fields("grpc-status", "0"), fields("Grpc-Status", "5"), "NOT_FOUND"},
		{"Trailers-Only", 200, fields("grpc-status", "14"), nil, "UNAVAILABLE"},
		{"a code without a name", 200, nil, fields("grpc-status", "42"), "42"},
		{"malformed", 200, nil, fields("grpc-status", "five"), "INTERNAL"},
		{"out of range", 200, nil, fields("grpc-status", "1000"), "INTERNAL"},
		{"empty", 200, nil, fields("grpc-status", ""), "INTERNAL"},
		{"200 without grpc-status", 200, nil, nil, "UNKNOWN"},
		{"proxy 400", 400, nil, nil, "INTERNAL"},
		{"proxy 401", 401, nil, nil, "UNAUTHENTICATED"},
		{"proxy 403", 403, nil, nil, "PERMISSION_DENIED"},
		{"proxy 404", 404, nil, nil, "UNIMPLEMENTED"},
		{"proxy 429", 429, nil, nil, "UNAVAILABLE"},
		{"proxy 502", 502, nil, nil, "UNAVAILABLE"},
		{"proxy 503", 503, nil, nil, "UNAVAILABLE"},
		{"proxy 504", 504, nil, nil, "UNAVAILABLE"},
		{"proxy 500", 500, nil, nil, "UNKNOWN"},
		{"503 with grpc-status", 503, fields("grpc-status", "8"), nil, "RESOURCE_EXHAUSTED"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := result.GRPCCodeName(result.GRPCStatusOf(tt.status, tt.headers, tt.trailers)); got != tt.want {
				t.Errorf("recorded: got %s, want %s", got, tt.want)
			}
			a := &answers.Answer{Code: tt.status, Fields: tt.headers, Trailer: tt.trailers}
			if got := result.GRPCCodeName(result.AnswerGRPCStatus(a)); got != tt.want {
				t.Errorf("live: got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestGRPCCodeNames(t *testing.T) {
	want := map[uint8]string{0: "OK", 1: "CANCELLED", 4: "DEADLINE_EXCEEDED", 12: "UNIMPLEMENTED", 15: "DATA_LOSS", 16: "UNAUTHENTICATED", 17: "17", 255: "255"}
	for c, name := range want {
		if got := result.GRPCCodeName(c); got != name {
			t.Errorf("code %d: got %s, want %s", c, got, name)
		}
	}
}

func TestGRPCStatusDoesNotAllocate(t *testing.T) {
	a := answers.New(200, "", "content-type", "application/grpc").WithTrailers("grpc-message", "x", "grpc-status", "5")
	if n := testing.AllocsPerRun(100, func() { result.AnswerGRPCStatus(a) }); n != 0 {
		t.Errorf("got %v allocs, want 0", n)
	}
}
