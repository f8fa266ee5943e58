package report

import (
	"strings"
	"testing"
)

func TestStepThresholdSyntax(t *testing.T) {
	for _, tt := range []struct{ expr, want string }{
		{"step 0: p99<5ms", "want a step number from 1"},
		{"step x: p99<5ms", "want a step number from 1"},
		{"step 2: match>99%", "per step, only latency"},
		{"each step: lost<1%", "per step, only latency"},
		{"each step: duplicates<1", "per step, only latency"},
	} {
		if _, err := ParseThreshold(tt.expr); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error with %q", tt.expr, err, tt.want)
		}
	}
	th, err := ParseThreshold("step 2: e2e.settled.p99<2s")
	if err != nil || th.Step != 2 || th.Stage != "settled" || th.Endpoint != "" {
		t.Errorf("got %+v, %v; want step 2, stage settled", th, err)
	}
}
