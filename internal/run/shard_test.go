package run

import "testing"

func TestShare(t *testing.T) {
	for _, tt := range []struct{ total, n int }{{10, 3}, {1, 4}, {500, 7}, {0, 2}} {
		sum := 0
		for i := 0; i < tt.n; i++ {
			sum += share(tt.total, i, tt.n)
		}
		if sum != tt.total {
			t.Errorf("shares of %d over %d add to %d", tt.total, tt.n, sum)
		}
	}
}
