package run

import (
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/vu"
)

func TestRateAt(t *testing.T) {
	stages := []vu.Stage{{Duration: 10 * time.Second, Target: 100}, {Duration: 5 * time.Second, Target: 300, Hold: true}, {Duration: 10 * time.Second, Target: 0}}
	for _, tt := range []struct {
		at   time.Duration
		step int
		rate float64
	}{
		{0, 1, 20}, {5 * time.Second, 1, 60}, {10 * time.Second, 2, 300}, {15 * time.Second, 3, 300}, {20 * time.Second, 3, 150}, {time.Minute, 3, 0},
	} {
		if step, rate := rateAt(20, stages, tt.at); step != tt.step || rate != tt.rate {
			t.Errorf("at %v: step %d rate %v, want %d %v", tt.at, step, rate, tt.step, tt.rate)
		}
	}
	if step, rate := rateAt(50, nil, time.Hour); step != 0 || rate != 50 {
		t.Errorf("without stages: step %d rate %v, want 0 50", step, rate)
	}
}
